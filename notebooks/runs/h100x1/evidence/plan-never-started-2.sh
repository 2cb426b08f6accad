# GPU plan: one H100; more of the search's configurations a time budget never started (issue 37)
export ACADEMIC_BENCH_GIT_COMMIT=541c2a04267e9216635c2d247fca6fff64f414f1
PARTS=search MODELS="pythia-410m roberta-large vit-large convnext-xlarge pythia-1b pythia-2.8b pythia-6.9b" BUDGET1_S=150 HARD1_S=290 TIMEOUT_S=400 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
