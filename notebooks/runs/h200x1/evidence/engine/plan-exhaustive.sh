# What whole exhaustive searches cost the current engine on one H200, on a fresh machine (compile cache empty at
# the start, shared by the search's processes as a user's run would share it): Pythia-1B's 12 configurations, then
# Pythia-160M's, each through `sweep --preset exhaustive` into results-one-launch.jsonl, which
# `analysis.launches.search_cost` reads. Started in the background (start_background.sh), collected with tar.
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h200x1/evidence/engine/plan-exhaustive.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h200x1/evidence/engine
mkdir -p $E
cp $MACHINE_TXT $E/machine-exhaustive.txt
for m in pythia-1b pythia-160m; do
  s=$SECONDS
  python3 -m academic_bench sweep --model $m --gpu h200 --gpus 1 --preset exhaustive --setup h200x1 --timeout 420 \
    --no-progress --out $E/results-one-launch.jsonl > $E/sweep-$m.log 2>&1
  echo "$m exhaustive rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls-exhaustive.txt
done
