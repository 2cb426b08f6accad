# GPU plan: one H100; the output layer's matrix products at unaligned vocabularies beside padded ones (issue 36),
# then the rows no validation spoke for (ConvNeXt, ViT and RoBERTa with checkpointing first: the checkpointing
# predictions of h200x1 lean on them), the last configuration of Pythia-2.8B's exhaustive search, the Pythia-160M
# and Pythia-1B rows no validation spoke for, and the memory wall's rows (issue 37), in that order of priority
export ACADEMIC_BENCH_GIT_COMMIT=c2abbf80f84ab9ff1509af8a4785ca50418495a7
nvidia-smi --query-gpu=name --format=csv,noheader
PARTS=gemm GEMM=output-layer bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
PARTS=remeasure REMEASURE=unvalidated REMEASURE_MODELS=convnext-xlarge,vit-large,roberta-large BUDGET3_S=450 HARD3_S=850 TIMEOUT_S=360 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
PARTS=exhaustive BUDGET2_S=120 HARD2_S=700 TIMEOUT_S=480 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1 pythia-2.8b
PARTS=remeasure REMEASURE=unvalidated REMEASURE_MODELS=pythia-160m,pythia-1b BUDGET3_S=900 HARD3_S=1300 TIMEOUT_S=360 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
PARTS=remeasure REMEASURE=memory-wall REMEASURE_MODELS=roberta-large,vit-large BUDGET3_S=600 HARD3_S=1000 TIMEOUT_S=360 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
