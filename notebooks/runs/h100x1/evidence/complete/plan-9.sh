# h100x1, one job on one H100: the last configuration a notebook budget never started, Pythia-1B naive's validation
# (613d88cc145bc4db), by `bench` at the naive search's micro-batch (8) with 3 sustained steps.
# Expected before it runs: about 4 minutes; the sustained steps within 3% of the naive step (61.2 to 61.4 s in
# results.jsonl).
#   ACADEMIC_BENCH_GIT_COMMIT=<the commit, as printed here by git rev-parse HEAD> MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/complete/plan-9.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
cp $MACHINE_TXT notebooks/runs/h100x1/evidence/complete/machine-9.txt
PARTS=bench TIMEOUT_S=420 BENCH="--model pythia-1b --methods naive --micro-batch 8 --validate 3" \
  bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
