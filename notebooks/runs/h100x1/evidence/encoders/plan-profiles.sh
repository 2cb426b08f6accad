# h100x1, one job on one H100: kernel profiles of RoBERTa-large free-lunch at the fixed micro-batches that
# plan-microbatch.sh timed (4, 8, 16, 32), into h100x1/profiles.jsonl, so that a step carried from one of those rows
# is split by its own profile (transfer.source_from_row: "configuration") rather than by micro-batch 64's.
# The question: is the time a small micro-batch adds the GPU waiting (idle: carried per micro-step, the same on any
# GPU) or slower kernels (carried by the ratio of the GPUs' rates)?
# Expected before it runs: micro-batch 64's profile is busy 0.98 of its step (34.50 of 35.22 s). If the added time
# is the GPU waiting, micro-batch 4's busy time stays near micro-batch 64's 34.5 s (busy share about 0.45 of its
# 78.68 s step), 8's near 0.7; if it is slower kernels, every busy share stays near 0.98.
#   ACADEMIC_BENCH_GIT_COMMIT=<the commit, as printed here by git rev-parse HEAD> MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/encoders/plan-profiles.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
cp $MACHINE_TXT notebooks/runs/h100x1/evidence/encoders/machine-profiles.txt
for m in 4 8 16 32; do
  timeout 400 python3 -m academic_bench profile --gpu h100-80gb --gpus 1 --setup h100x1 --model roberta-large \
    --methods free-lunch --micro-batch $m --out notebooks/runs/h100x1/profiles.jsonl
  echo "profile micro-batch $m rc=$?"
done
