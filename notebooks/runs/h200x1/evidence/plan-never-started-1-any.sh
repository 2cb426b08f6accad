# GPU plan: whichever one-GPU machine came
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then exec bash plan-never-started-1.sh; fi
export ACADEMIC_BENCH_GIT_COMMIT=efe174cc9312cdbee162addfe5e455a1f78703dd
PARTS=search MODELS="pythia-410m roberta-large vit-large convnext-xlarge pythia-1b pythia-2.8b pythia-6.9b" BUDGET1_S=1000 HARD1_S=1400 TIMEOUT_S=400 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
