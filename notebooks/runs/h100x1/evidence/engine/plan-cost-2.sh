# h100x1, one background job on one H100: the engine's cost again on Pythia-1B's whole exhaustive search (12
# configurations) from scratch, as plan-cost.sh ran it, at the engine that keeps py-cpuinfo's first answer per process
# (measure.apply.cpu_info_once: DeepSpeed's CPU Adam asked it three times in a process's first offloaded build and
# once in each later one, about 1.1 s a time, engine/build-profile/) and books a warm-up block kept as a repetition as
# timed work (it was booked as warm-up). Into engine/results-one-launch.cost-2.jsonl (analysis.search_cost reads it
# as its own commit's search).
# Expected before it runs, from plan-cost.sh's search (engine/results-one-launch.cost.jsonl: 12 configurations,
# 706.8 s of rows, median 50.9 s, measured share 0.58 read with the kept warm-up blocks as timed work):
#  - the six DeepSpeed offload configurations about 3.4 s faster each (two of their three host queries in the first
#    build and the one in the second), the others unchanged: about 685 s in all, median about 49 s (the aim of 50 s
#    met, narrowly), under 12 minutes;
#  - the time outside trials and timed repetitions about 40% of the wall: the 35% aim still missed;
#  - every configuration at the micro-batch and about the step (within 3%) of plan-cost.sh's rows.
#   ACADEMIC_BENCH_GIT_COMMIT=<the commit, as printed here by git rev-parse HEAD> MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/engine/plan-cost-2.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h100x1/evidence/engine/cost-2
mkdir -p $E
cp $MACHINE_TXT $E/machine.txt
rm -rf /tmp/cc-cost /tmp/triton-cost
s=$SECONDS
ACADEMIC_BENCH_COMPILE_CACHE=/tmp/cc-cost TRITON_CACHE_DIR=/tmp/triton-cost \
  python3 -m academic_bench sweep --model pythia-1b --gpu h100-80gb --gpus 1 --preset exhaustive --setup h100x1 \
  --timeout 420 --no-progress --out notebooks/runs/h100x1/evidence/engine/results-one-launch.cost-2.jsonl \
  > $E/sweep-pythia-1b.log 2>&1
echo "pythia-1b exhaustive rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls.txt
