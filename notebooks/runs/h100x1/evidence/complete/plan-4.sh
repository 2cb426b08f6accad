# Pythia-1B's exhaustive search on one H100 resumed where plan-3.sh stopped: the sweep reads the rows already in
# ../engine/results-one-launch.exhaustive.jsonl and measures the configurations with none, the 3 left (checkpointing
# with ZeRO-3 + offload, with FSDP shard-grad-op + offload and with FSDP full-shard + offload).
# Expected before it runs: each about as long as its Pythia-1B twin without checkpointing in that file (93, 34 and
# 31 s of duration) plus a fifth for the recompute; the exhaustive optimum stays among the 9 measured (ZeRO-1 +
# offload at 24.6 s/step or free-lunch at 25.3 s/step): checkpointing and offload both slow a step that fits.
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/complete/plan-4.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h100x1/evidence/engine
cp $MACHINE_TXT $E/machine-exhaustive-2.txt
s=$SECONDS
python3 -m academic_bench sweep --model pythia-1b --gpu h100-80gb --gpus 1 --preset exhaustive --setup h100x1 \
  --timeout 420 --no-progress --out $E/results-one-launch.exhaustive.jsonl > $E/sweep-pythia-1b-exhaustive-2.log 2>&1
echo "pythia-1b exhaustive, resumed rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls-exhaustive.txt
