# h100x1: the two small mixtures' free-lunch again, now that free-lunch's experts' kernel is the grouped GEMM at the
# autocast dtype (academic_bench/measure/experts.py: transformers' grouped_mm ran their products in fp32, as its
# per-expert loop under compile, when the weights were fp32; plan-2.sh's free-lunch rows), each validated against 3
# sustained steps, into results.jsonl.
# Expected before it runs: the estimates committed before plan-2.sh (NAME/estimate.json, which charged the grouped
# products): moe-small-olmoe 7.68 s/step (6.88 to 8.68), moe-small-qwen2 18.8 s/step (16.9 to 21.3); beside the
# rows of free-lunch + bf16 weights (the same grouped GEMM in bf16 without the per-step cast of the fp32 weights):
# each free-lunch step at most a few percent longer than its bf16-weights row (the casts of the experts' weights,
# about 0.4B parameters in moe-small-olmoe, are memory-bound work of milliseconds per micro-step).
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/moe/plan-3.sh
set -u
M=notebooks/runs/h100x1/evidence/moe
run="--tokens 3e11 --seq-len 2048 --precision bf16 --validate 3 --methods free-lunch --out $M/results.jsonl"
export BENCH="--model $M/moe-small-olmoe/config.json $run;--model $M/moe-small-qwen2/config.json $run"
PARTS=bench TIMEOUT_S=400 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
cp $MACHINE_TXT $M/machine-3.txt
