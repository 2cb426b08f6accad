# h200x1: the two small mixtures of experts, free-lunch (the experts' grouped GEMM at the autocast dtype), each
# validated against 3 sustained steps, into moe/results.jsonl, beside their H100 rows (h100x1/evidence/moe).
# Expected before it runs (free-lunch, from each NAME/estimate.json: step = days x 86400 / 143,052 steps):
#  1. moe-small-olmoe: micro-batch 32 x 32, 7.11 s/step (6.38 to 8.04), MFU 30%.
#  2. moe-small-qwen2: micro-batch 16 x 64, 17.2 s/step (15.4 to 19.4), MFU 34%.
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h200x1/evidence/moe/plan-small.sh
set -u
M=notebooks/runs/h100x1/evidence/moe
H=notebooks/runs/h200x1/evidence/moe
run="--tokens 3e11 --seq-len 2048 --precision bf16 --validate 3 --methods free-lunch --out $H/results.jsonl"
export BENCH="--model $M/moe-small-olmoe/config.json $run;--model $M/moe-small-qwen2/config.json $run"
PARTS=bench TIMEOUT_S=600 bash scripts/offline-gpu/job.sh h200x1 h200 1
cp $MACHINE_TXT $H/machine-small.txt
