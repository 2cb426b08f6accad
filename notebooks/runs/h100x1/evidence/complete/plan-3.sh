# Pythia-160M's and then Pythia-1B's whole exhaustive searches on one H100 as ../engine/plan-exhaustive.sh states
# them, with its expected figures (Pythia-160M about 410 s with a median about 32 s a configuration, Pythia-1B
# about 920 s with a median about 69 s), after plan-2.sh on the same machine. plan-2.sh ran its sweep without the
# prelude's path to the wheels, so its ZeRO configurations said "unsupported" (no deepspeed): that file is not kept.
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/complete/plan-3.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h100x1/evidence/engine
rm -f $E/results-one-launch.exhaustive.jsonl $E/sweep-pythia-160m-exhaustive.log $E/walls-exhaustive.txt
cp $MACHINE_TXT $E/machine-exhaustive.txt
for m in pythia-160m pythia-1b; do
  s=$SECONDS
  python3 -m academic_bench sweep --model $m --gpu h100-80gb --gpus 1 --preset exhaustive --setup h100x1 \
    --timeout 420 --no-progress --out $E/results-one-launch.exhaustive.jsonl > $E/sweep-$m-exhaustive.log 2>&1
  echo "$m exhaustive rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls-exhaustive.txt
done
