# GPU plan: one H200; rows of older engine revisions whose method class no validation covers, measured again (issue 37)
export ACADEMIC_BENCH_GIT_COMMIT=e97b19eebde74347a7697821b218cb523075a255
PARTS=remeasure REMEASURE=unvalidated REMEASURE_MODELS=pythia-160m,pythia-1b BUDGET3_S=650 HARD3_S=850 TIMEOUT_S=300 bash scripts/offline-gpu/job.sh h200x1 h200 1
B=$((850 - SECONDS)); [ $B -gt 150 ] || exit 0
PARTS=remeasure REMEASURE=unvalidated REMEASURE_MODELS=pythia-2.8b,roberta-large,convnext-xlarge,vit-large BUDGET3_S=$((B - 120)) HARD3_S=$B TIMEOUT_S=300 bash scripts/offline-gpu/job.sh h200x1 h200 1
