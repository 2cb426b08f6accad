export ACADEMIC_BENCH_GIT_COMMIT=41ad23a
PARTS=remeasure REMEASURE=unvalidated REMEASURE_MODELS=pythia-160m,pythia-1b BUDGET3_S=480 HARD3_S=560 TIMEOUT_S=300 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
