# h200x1: OLMoE-1B-7B (the public mixture that one H100 cannot train), free-lunch (the experts' grouped GEMM at
# the autocast dtype), validated against 3 sustained steps, into moe/results.jsonl; then the H200's GEMM sweeps by
# triton.testing into ../gemm-triton/ (as h100x1's complete/plan-gemm.sh does on the H100). What only this machine
# gives; the two small mixtures (each measured on one H100 already) are plan-small.sh's.
# Expected before it runs (free-lunch, from each NAME/estimate.json: step = days x 86400 / 143,052 steps):
#  1. olmoe-1b-7b: micro-batch 1 x 1024 accumulation, 59.8 s/step (53.6 to 67.6), MFU 28%.
#  The GEMM sweeps: as h100x1's plan-gemm.sh states for its own (every layer timed, no line without a `timer`).
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h200x1/evidence/moe/plan.sh
set -u
M=notebooks/runs/h100x1/evidence/moe
H=notebooks/runs/h200x1/evidence/moe
run="--tokens 3e11 --seq-len 2048 --precision bf16 --validate 3 --methods free-lunch --out $H/results.jsonl"
BENCH="--model $M/olmoe-1b-7b/config.json $run" PARTS=bench TIMEOUT_S=600 bash scripts/offline-gpu/job.sh h200x1 h200 1
cp $MACHINE_TXT $H/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
G=notebooks/runs/h200x1/evidence/gemm-triton
mkdir -p $G
for kind in linear output-layer memory; do
  f=gemm; [ $kind != linear ] && f=gemm-$kind
  rm -f $G/$f.jsonl
  s=$SECONDS
  python3 scripts/offline-gpu/gemm_sweep.py $G/$f.jsonl $kind > $G/$f.log 2>&1
  echo "gemm $kind rc=$? wall_s=$((SECONDS - s)) lines=$(wc -l < $G/$f.jsonl)" | tee -a $G/walls.txt
done
