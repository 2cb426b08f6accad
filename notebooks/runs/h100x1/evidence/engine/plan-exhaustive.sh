# Pythia-1B's and Pythia-160M's whole exhaustive searches on one H100 (the GPU the engine's cost aims are set for),
# as notebooks/runs/h200x1/evidence/engine/plan-exhaustive-2.sh ran them on one H200: each through
# `sweep --preset exhaustive` on a fresh machine, compile cache empty at the start and shared by the search's
# processes, into results-one-launch.exhaustive.jsonl (`analysis.launches.search_cost` keeps it apart from this
# setup's earlier partial search by the commit its rows name).
# Expected before it runs, by the engine whose sweeps fork their one-GPU workers from a preloading process and stop
# timing where three repetitions settle the step: each H200 search's configurations by that engine (Pythia-1B 865 s,
# median 65 s, at 4ab0aaa: h200x1/evidence/engine/; Pythia-160M 368 s, median 29 s, at cee9113 with a compile cache
# of its own: h200x1/evidence/engine-cost/preload/, about 16 s less here, where it finds Pythia-1B's kernels) scaled
# by the ratio of the shipped H100 step to the shipped H200 step of the same configuration (a median 1.06 for
# Pythia-1B, 1.15 for Pythia-160M), as if all of a configuration's time scaled with its step (its host part does
# not): Pythia-1B about 920 s with a median about 69 s, Pythia-160M about 410 s with a median about 32 s, so the
# aims (8 minutes, a median of 30 s) stay not met for Pythia-1B; the micro-batches of this setup's shipped rows and
# the same fastest settings, or settings within the machine-to-machine spread of them.
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/engine/plan-exhaustive.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h100x1/evidence/engine
mkdir -p $E
cp $MACHINE_TXT $E/machine-exhaustive.txt
for m in pythia-1b pythia-160m; do
  s=$SECONDS
  python3 -m academic_bench sweep --model $m --gpu h100-80gb --gpus 1 --preset exhaustive --setup h100x1 \
    --timeout 420 --no-progress --out $E/results-one-launch.exhaustive.jsonl > $E/sweep-$m-exhaustive.log 2>&1
  echo "$m exhaustive rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls-exhaustive.txt
done
