# h100x1: kernel profiles of the three decoders the work model predicts most too fast after the three shapes of
# "Shapes the work model mis-charges" (README.md) ran within 6%: llama-3.2-3b (micro-batch 2 x 2,048),
# gemma-2b-seq4096 (1 x 4,096) and qwen2.5-3b (2 x 2,048), each at its measured micro-batch, into profiles.jsonl,
# where work_validation.work_model_by_kind sets each kind of work beside the work model's charge for it.
# What the three share, and the decoders within 3% do not: 4,096 tokens per micro-step (every other measured
# decoder ran 8,192 or more), so 512 micro-steps a step; the long-sequence shapes at 8,192 and 16,384 tokens per
# micro-step landed at +2.6% and -3.0%, so neither the sequence nor the vocabulary's logits alone explain them.
# Expected before it runs: if the per-micro-step costs are the cause, the profiles' idle time and the kinds
# charged per micro-step (not per token) hold most of the missing time; if the matrix products are, the
# "matrix multiplication" kind does.
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/decoders/plan-profiles.sh
set -u
D=notebooks/runs/h100x1/evidence/decoders
export PROFILE="--model $D/llama-3.2-3b/config.json --tokens 3e11 --seq-len 2048 --micro-batch 2 --out $D/profiles.jsonl;\
--model $D/gemma-2b-seq4096/config.json --tokens 3e11 --seq-len 4096 --global-batch 512 --micro-batch 1 --out $D/profiles.jsonl;\
--model $D/qwen2.5-3b/config.json --tokens 3e11 --seq-len 2048 --micro-batch 2 --out $D/profiles.jsonl"
PARTS=profile TIMEOUT_S=300 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
