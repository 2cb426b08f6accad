# The synchronized vs unsynchronized Pythia-1B pair on one H100 at the current engine: eager (naive) and compiled
# (free-lunch), each timing at the micro-batch of the shipped synchronized search (8 and 16).
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
RUN=$PWD/notebooks/runs/h100x1
bench() { timeout 700 python3 -m academic_bench bench --model pythia-1b --gpu h100-80gb --gpus 1 --timeout 600 \
  --out $RUN/results.jsonl "$@"; echo "bench rc=$?"; }
for timing in synced unsynced; do
  bench --methods naive --micro-batch 8 --timing $timing
  bench --methods free-lunch --micro-batch 16 --timing $timing
done
