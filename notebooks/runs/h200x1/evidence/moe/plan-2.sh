# h200x1: OLMoE-1B-7B under the paper's naive settings at micro-batch 1, then plan-small.sh (the two small mixtures,
# free-lunch, each validated against 3 sustained steps), into moe/results.jsonl.
# Expected before it runs:
#  1. olmoe-1b-7b naive: does not fit one H200 at micro-batch 1 (olmoe-1b-7b/estimate-naive.json: 141.3 GiB needed
#     against 139.6 GiB usable; the largest part the Adam states, 51.6 GiB), so the row is `oom` at micro-batch 1.
#     No validation is asked: were it to fit, a naive step of 1,024 micro-batches would take minutes, and three
#     sustained ones more than the job's time; naive's validation stands on moe-small-olmoe's (h100x1).
#  2-3. as plan-small.sh states.
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h200x1/evidence/moe/plan-2.sh
# NAIVE_ONLY=1 runs the first part alone.
set -u
M=notebooks/runs/h100x1/evidence/moe
H=notebooks/runs/h200x1/evidence/moe
export BENCH="--model $M/olmoe-1b-7b/config.json --tokens 3e11 --seq-len 2048 --precision bf16 --methods naive --out $H/results.jsonl"
PARTS=bench TIMEOUT_S=600 bash scripts/offline-gpu/job.sh h200x1 h200 1
cp $MACHINE_TXT $H/machine-naive.txt
[ -n "${NAIVE_ONLY:-}" ] || bash $H/plan-small.sh
