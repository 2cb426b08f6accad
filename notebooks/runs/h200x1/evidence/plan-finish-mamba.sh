# The smart searches of h200x1's configurations that a time budget never started, under today's rules, and
# Mamba-2.8B's row timed at the memory wall; run as `ACADEMIC_BENCH_GIT_COMMIT=<commit> bash
# scripts/offline-gpu/start_background.sh notebooks/runs/h200x1/evidence/plan-finish-mamba.sh` once the Mamba kernels
# are installed in /tmp/site-mamba (scripts/offline-gpu/install_mamba.sh's steps).
# Projected before the run (the smart rules replayed on the stored rows with this machine's 135.2 GB of host
# memory): of the 39 configurations never started, the 34 of Pythia-6.9B, ConvNeXt-XLarge, ViT-Large, RoBERTa-Large
# and Mamba-2.8B that shard or offload without checkpointing are skipped again (no larger micro-batch, or the host
# memory model), and Mamba-2.8B's 5 checkpointed + sharded + offloaded combinations are measured unless the first of
# them gives the rules a reason to skip the rest.
export ACADEMIC_BENCH_GIT_COMMIT=${ACADEMIC_BENCH_GIT_COMMIT:?name the commit the rows are made by}
[ -d /tmp/site-mamba ] || { echo "the Mamba kernels are not installed in /tmp/site-mamba: Mamba rows would say unsupported"; exit 1; }
PARTS=search PRESETS=smart MODELS="pythia-6.9b mamba-2.8b convnext-xlarge vit-large roberta-large" BUDGET1_S=800 HARD1_S=1250 TIMEOUT_S=600 bash scripts/offline-gpu/job.sh h200x1 h200 1
PARTS=remeasure REMEASURE=memory-wall REMEASURE_MODELS=mamba-2.8b BUDGET3_S=60 HARD3_S=500 TIMEOUT_S=420 bash scripts/offline-gpu/job.sh h200x1 h200 1
