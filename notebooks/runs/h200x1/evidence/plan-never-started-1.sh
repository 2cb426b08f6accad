# GPU plan: one H200; Pythia-160M's rows whose search stopped on the memory model's prediction measured again by
# trial (issue 37), then the search's configurations a time budget never started (Mamba left out: no kernels)
export ACADEMIC_BENCH_GIT_COMMIT=efe174cc9312cdbee162addfe5e455a1f78703dd
J="bash scripts/offline-gpu/job.sh h200x1 h200 1"
PARTS=remeasure REMEASURE_MODELS=pythia-160m BUDGET3_S=240 HARD3_S=500 TIMEOUT_S=300 $J
PARTS=search MODELS="pythia-410m roberta-large vit-large convnext-xlarge pythia-1b pythia-2.8b pythia-6.9b" BUDGET1_S=900 HARD1_S=1300 TIMEOUT_S=400 $J
