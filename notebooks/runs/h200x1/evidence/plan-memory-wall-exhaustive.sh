# GPU plan: one H200; the memory wall re-measured on the Pythia rows, then the hard model's exhaustive search (issue 37)
export ACADEMIC_BENCH_GIT_COMMIT=9ad0c3cef4139738b7abe71161a01d42f95d473c
PARTS=remeasure REMEASURE=memory-wall REMEASURE_MODELS=pythia-6.9b BUDGET3_S=400 HARD3_S=700 TIMEOUT_S=420 bash scripts/offline-gpu/job.sh h200x1 h200 1
B=$((1400 - SECONDS)); [ $B -gt 120 ] || exit 0
PARTS=exhaustive BUDGET2_S=$B HARD2_S=$((B + 90)) TIMEOUT_S=420 bash scripts/offline-gpu/job.sh h200x1 h200 1 pythia-2.8b
