export ACADEMIC_BENCH_GIT_COMMIT=28ea550
PARTS=search PRESETS=smart MODELS="pythia-1b pythia-160m" RETRY="[all]" BUDGET1_S=420 HARD1_S=530 TIMEOUT_S=300 bash scripts/offline-gpu/job.sh h200x1 h200 1
