export ACADEMIC_BENCH_GIT_COMMIT=3fc9ac8
# 1. The bf16 matrix-product sweep of this GPU: the smart search's recompute rule reads its plateau.
PARTS=gemm bash scripts/offline-gpu/job.sh h200x1 h200 1
# 2. The smart search of the hard model again from scratch, under today's rules.
PARTS=search PRESETS=smart MODELS="pythia-2.8b" RETRY="[all]" BUDGET1_S=1200 HARD1_S=1700 TIMEOUT_S=420 bash scripts/offline-gpu/job.sh h200x1 h200 1
# 3. Mamba-2.8B's row no validation speaks for, once install_mamba.sh has put the kernels in place (without them
#    the row would say "unsupported", so the part waits for them and is left out if they never come).
for i in $(seq 60); do [ -f /tmp/mamba.ready ] && break; sleep 5; done
[ -f /tmp/mamba.ready ] && PARTS=remeasure REMEASURE=unvalidated REMEASURE_MODELS=mamba-2.8b BUDGET3_S=60 HARD3_S=800 TIMEOUT_S=600 bash scripts/offline-gpu/job.sh h200x1 h200 1
# 4. The smart searches of Pythia-1B and -160M again from scratch.
PARTS=search PRESETS=smart MODELS="pythia-1b pythia-160m" RETRY="[all]" BUDGET1_S=1200 HARD1_S=1700 TIMEOUT_S=420 bash scripts/offline-gpu/job.sh h200x1 h200 1
# 5. The memory-bound kernels' sweep, and Mamba-2.8B's row timed at the memory wall.
PARTS=gemm GEMM=memory bash scripts/offline-gpu/job.sh h200x1 h200 1
[ -f /tmp/mamba.ready ] && PARTS=remeasure REMEASURE=memory-wall REMEASURE_MODELS=mamba-2.8b BUDGET3_S=60 HARD3_S=800 TIMEOUT_S=600 bash scripts/offline-gpu/job.sh h200x1 h200 1
