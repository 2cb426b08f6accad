# The same two whole exhaustive searches as plan-exhaustive.sh (Pythia-1B's 12 configurations, then Pythia-160M's,
# each through `sweep --preset exhaustive` on a fresh machine, compile cache empty at the start and shared by the
# search's processes), by the engine since ZeRO-3 with offload times two whole-accumulation blocks and counts an
# agreeing warm-up block as the first of them. Into results-one-launch.second-search.jsonl, which
# `analysis.launches.search_cost` reads as a search of its own (its rows name the commit that ran).
# Expected before it ran, from the engine at b0cbb9f (plan-exhaustive.sh: Pythia-1B 1,039 s, median 73 s;
# Pythia-160M 433 s, median 33 s) less what the two checks in engine-cost/blocks/ and engine-cost/warmup/ saved
# per ZeRO-3 + offload configuration (two whole steps each): Pythia-1B about 900 s, Pythia-160M about 400 s, both
# medians about as before (the two ZeRO-3 + offload configurations are the costliest either way); the same
# micro-batches and the same fastest setting (free-lunch).
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h200x1/evidence/engine/plan-exhaustive-2.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h200x1/evidence/engine
mkdir -p $E
cp $MACHINE_TXT $E/machine-exhaustive-2.txt
for m in pythia-1b pythia-160m; do
  s=$SECONDS
  python3 -m academic_bench sweep --model $m --gpu h200 --gpus 1 --preset exhaustive --setup h200x1 --timeout 420 \
    --no-progress --out $E/results-one-launch.second-search.jsonl > $E/sweep-$m-2.log 2>&1
  echo "$m exhaustive rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls-exhaustive-2.txt
done
