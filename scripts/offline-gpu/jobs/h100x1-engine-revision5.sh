# Engine revision 5 on one H100 (timed phases read their batches through the sustained run's DataLoader):
# the offloading DeepSpeed classes first (ZeRO-3 + offload was 3.5% under its sustained step at revision 4),
# then free-lunch (a GPU-bound configuration whose extrapolation should not move) and FSDP full-shard + offload.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
RUN=$PWD/notebooks/runs/h100x1
mkdir -p $RUN/evidence/engine
bench() { timeout 700 python3 -m academic_bench bench --gpu h100-80gb --gpus 1 --timeout 600 --validate 3 \
  --out $RUN/results.jsonl "$@"; echo "bench rc=$?"; }
for spec in free-lunch+zero3+offload free-lunch+zero2+offload free-lunch free-lunch+zero1+offload \
    free-lunch+fsdp_full_shard+offload; do
  bench --model pythia-160m --methods $spec --micro-batch 32
done
cp $MACHINE_TXT $RUN/evidence/engine/machine-revision5.txt
