# GPU plan: one H200; the hard model's exhaustive search completed, then rows of older engine revisions whose method class no validation covers (issue 37)
export ACADEMIC_BENCH_GIT_COMMIT=e97b19eebde74347a7697821b218cb523075a255
PARTS=exhaustive BUDGET2_S=800 HARD2_S=1150 TIMEOUT_S=420 bash scripts/offline-gpu/job.sh h200x1 h200 1 pythia-2.8b
B=$((1600 - SECONDS)); [ $B -gt 120 ] || exit 0
PARTS=remeasure REMEASURE=unvalidated REMEASURE_MODELS=pythia-160m,pythia-1b,pythia-410m BUDGET3_S=$((B - 150)) HARD3_S=$B TIMEOUT_S=300 bash scripts/offline-gpu/job.sh h200x1 h200 1
