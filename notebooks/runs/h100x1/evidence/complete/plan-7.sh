# h100x1, one background job on one H100:
#  1. RoBERTa-large's free-lunch step at fixed micro-batches of 4, 8, 16 and 32 (encoders/plan-microbatch.sh, its
#     expectations in its header).
#  2. Where the first build of a DeepSpeed engine with CPU offload spends its time: Pythia-1B free-lunch + ZeRO-1 +
#     offload built twice in one process under cProfile (scripts/offline-gpu/profile_build.py) into
#     engine/build-profile/.
#  3. The one h100x1 configuration never started: ViT-large naive's validation (822997becb952854, a notebook budget
#     stopped it), by the search part, which runs again what a budget never started.
# Expected before it runs: 1 as plan-microbatch.sh says; 2: the first build about 20 s and the second about 4 s (the
# cost search's ZeRO-1 + offload log), the difference in pinning the host's fp32 states and gradients (about 16 GB)
# and in loading DeepSpeed's cpu_adam op; 3: about 150 s, the sustained steps within 3% of the naive step (34.1 to
# 34.3 s in results.jsonl).
#   ACADEMIC_BENCH_GIT_COMMIT=<the commit, as printed here by git rev-parse HEAD> MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/complete/plan-7.sh
set -u
bash notebooks/runs/h100x1/evidence/encoders/plan-microbatch.sh
source scripts/offline-gpu/gpu_prelude.sh
cp $MACHINE_TXT notebooks/runs/h100x1/evidence/complete/machine-7.txt
P=notebooks/runs/h100x1/evidence/engine/build-profile
mkdir -p $P
timeout 300 python3 scripts/offline-gpu/profile_build.py pythia-1b free-lunch+zero1+offload 16 $P/zero1-offload \
  2>&1 | grep -v -i warn | tail -20 > $P/walls.txt
echo "profile rc=${PIPESTATUS[0]}"
PARTS=search PRESETS=naive MODELS=vit-large TIMEOUT_S=420 BUDGET1_S=400 HARD1_S=900 \
  bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
