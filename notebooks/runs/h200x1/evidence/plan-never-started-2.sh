# GPU plan: one H200; more of the search's configurations a time budget never started (issue 37)
export ACADEMIC_BENCH_GIT_COMMIT=efe174cc9312cdbee162addfe5e455a1f78703dd
PARTS=search MODELS="pythia-410m roberta-large vit-large convnext-xlarge pythia-1b pythia-2.8b pythia-6.9b" BUDGET1_S=230 HARD1_S=400 TIMEOUT_S=400 bash scripts/offline-gpu/job.sh h200x1 h200 1
