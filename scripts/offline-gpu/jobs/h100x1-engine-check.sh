# Engine revision 2 on one H100: one validated configuration of every one-GPU method class (Pythia-160M at a
# given micro-batch, and Pythia-1B with ZeRO-1 + offload, the largest error of revision 1), then the cost of a
# configuration with revision 1 (main at 9521ab0, unpacked into .old/ by `git archive 9521ab0 academic_bench`)
# and revision 2 on the same non-DeepSpeed configurations, each revision with a compile cache of its own.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
RUN=$PWD/notebooks/runs/h100x1
EV=$RUN/evidence/engine
mkdir -p $EV
bench() { timeout 700 python3 -m academic_bench bench --gpu h100-80gb --gpus 1 --timeout 600 "$@"; echo "bench rc=$?"; }
for spec in naive free-lunch free-lunch+ckpt free-lunch+zero1+offload free-lunch+zero2+offload \
    free-lunch+zero3+offload free-lunch+fsdp_shard_grad_op+offload free-lunch+fsdp_full_shard+offload; do
  mbs=32; [ $spec = naive ] && mbs=8
  bench --model pythia-160m --methods $spec --micro-batch $mbs --validate 3 --out $RUN/results.jsonl
done
bench --model pythia-1b --methods free-lunch+zero1+offload --micro-batch 16 --validate 3 --out $RUN/results.jsonl
for model_spec in pythia-160m:free-lunch pythia-160m:free-lunch+ckpt pythia-1b:free-lunch pythia-160m:naive; do
  model=${model_spec%%:*} spec=${model_spec#*:}
  (cd .old && TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-revision1 PYTHONPATH=/tmp/site bench --model $model \
    --methods $spec --out $EV/results-revision1.jsonl)
  TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-revision2 bench --model $model --methods $spec --out $EV/results-revision2.jsonl
done
