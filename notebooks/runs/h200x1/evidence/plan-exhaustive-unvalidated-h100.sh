# GPU plan: one H100; the memory wall re-measured on the Pythia rows, then the hard model's exhaustive search (issue 37)
export ACADEMIC_BENCH_GIT_COMMIT=e97b19eebde74347a7697821b218cb523075a255
PARTS=remeasure REMEASURE=memory-wall REMEASURE_MODELS=pythia-160m,pythia-1b,pythia-2.8b BUDGET3_S=650 HARD3_S=950 TIMEOUT_S=420 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
B=$((1400 - SECONDS)); [ $B -gt 120 ] || exit 0
PARTS=exhaustive BUDGET2_S=$B HARD2_S=$((B + 90)) TIMEOUT_S=420 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1 pythia-2.8b
