# h100x1: three mixtures of experts, naive and free-lunch each, validated against 3 sustained steps, into
# moe/results.jsonl, against the estimates committed before (NAME/estimate.json: --tokens 3e11 --seq-len 2048,
# global batch 1024, bf16). Naive runs the experts' per-expert loop, free-lunch grouped_mm (ran.experts); each row
# keeps the tokens each expert received at the measured step (ran.expert_tokens).
# Expected before it runs (free-lunch, from each estimate.json: step = days x 86400 / 143,052 steps):
#  1. moe-small-olmoe: micro-batch 16 x 64 accumulation, 7.68 s/step (6.88 to 8.68), MFU 28%.
#  2. moe-small-qwen2: micro-batch 8 x 128 accumulation, 18.8 s/step (16.9 to 21.3), MFU 31%.
#  3. olmoe-1b-7b: free-lunch alone does not fit (6.9B parameters of fp32 weights, gradients and Adam states);
#     free-lunch + ZeRO-1 + offload at micro-batch 4 x 256, 55.9 s/step (50.1 to 63.2), MFU 30%.
#  Naive (the loop, eager attention, no compile) has no estimate of its own: slower than free-lunch on each.
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/moe/plan.sh
set -u
M=notebooks/runs/h100x1/evidence/moe
run="--tokens 3e11 --seq-len 2048 --precision bf16 --validate 3 --out $M/results.jsonl"
export BENCH="--model $M/moe-small-olmoe/config.json $run --methods free-lunch;\
--model $M/moe-small-olmoe/config.json $run --methods naive;\
--model $M/moe-small-qwen2/config.json $run --methods free-lunch;\
--model $M/moe-small-qwen2/config.json $run --methods naive;\
--model $M/olmoe-1b-7b/config.json $run --methods free-lunch+zero1+offload;\
--model $M/olmoe-1b-7b/config.json $run --methods naive+zero1+offload"
PARTS=bench TIMEOUT_S=900 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
cp $MACHINE_TXT $M/machine.txt
