# h100x1, one background job on one H100: the engine's cost on Pythia-160M's whole exhaustive search (12
# configurations) from scratch, at the engine of plan-cost-2.sh (engine revision 6; what changed since is how image
# models are fed), so that the benchmark of item "models up to 1B" has both exhaustive searches' breakdowns: this
# one and cost-2's Pythia-1B. Into engine/results-one-launch.cost-3.jsonl.
# Expected before it runs, from results-one-launch.exhaustive.jsonl (the same search at 3902231, before the rows kept
# a breakdown: 12 configurations, 288 s of rows, median 20.9 s):
#  - about 275 s of rows (the six DeepSpeed offload configurations about 2.4 s faster each, as in cost-2), median
#    about 20 s;
#  - the time outside trials and timed repetitions more than half of the wall: a small model's steps are short
#    and each configuration still starts a process and builds its model;
#  - with cost-2's Pythia-1B rows (794 s, median 57.0 s): 24 configurations of models up to 1B, median between
#    this search's longest and cost-2's shortest (30.5 s), so the 50 s aim met; the share outside measured GPU work
#    about 47%, the 35% aim missed.
#   ACADEMIC_BENCH_GIT_COMMIT=<the commit, as printed here by git rev-parse HEAD> MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/engine/plan-cost-3.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h100x1/evidence/engine/cost-3
mkdir -p $E
cp $MACHINE_TXT $E/machine.txt
rm -rf /tmp/cc-cost /tmp/triton-cost
s=$SECONDS
ACADEMIC_BENCH_COMPILE_CACHE=/tmp/cc-cost TRITON_CACHE_DIR=/tmp/triton-cost \
  python3 -m academic_bench sweep --model pythia-160m --gpu h100-80gb --gpus 1 --preset exhaustive --setup h100x1 \
  --timeout 420 --no-progress --out notebooks/runs/h100x1/evidence/engine/results-one-launch.cost-3.jsonl \
  > $E/sweep-pythia-160m.log 2>&1
echo "pythia-160m exhaustive rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls.txt
