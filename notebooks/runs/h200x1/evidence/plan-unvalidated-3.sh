export ACADEMIC_BENCH_GIT_COMMIT=41ad23a
PARTS=remeasure REMEASURE=unvalidated REMEASURE_MODELS=roberta-large,convnext-xlarge,vit-large BUDGET3_S=700 HARD3_S=950 TIMEOUT_S=420 bash scripts/offline-gpu/job.sh h200x1 h200 1
PARTS=search MODELS="convnext-xlarge vit-large roberta-large pythia-6.9b" BUDGET1_S=1200 HARD1_S=1700 TIMEOUT_S=420 bash scripts/offline-gpu/job.sh h200x1 h200 1
