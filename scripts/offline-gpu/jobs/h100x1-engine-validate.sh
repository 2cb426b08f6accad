# Engine revision 3 on one H100: one validated configuration of every one-GPU method class, the DeepSpeed ones
# first (Pythia-160M at a given micro-batch; Pythia-1B with ZeRO-1 + offload and with free-lunch alone).
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
RUN=$PWD/notebooks/runs/h100x1
bench() { timeout 700 python3 -m academic_bench bench --gpu h100-80gb --gpus 1 --timeout 600 --validate 3 \
  --out $RUN/results.jsonl "$@"; echo "bench rc=$?"; }
bench --model pythia-160m --methods free-lunch+zero2+offload --micro-batch 32
bench --model pythia-1b --methods free-lunch+zero1+offload --micro-batch 16
bench --model pythia-160m --methods free-lunch+zero1+offload --micro-batch 32
bench --model pythia-160m --methods free-lunch+zero3+offload --micro-batch 32
bench --model pythia-1b --methods free-lunch --micro-batch 16
for spec in free-lunch free-lunch+ckpt free-lunch+fsdp_shard_grad_op+offload free-lunch+fsdp_full_shard+offload; do
  bench --model pythia-160m --methods $spec --micro-batch 32
done
bench --model pythia-160m --methods naive --micro-batch 8
