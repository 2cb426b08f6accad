# The first build of Pythia-1B ZeRO-1 + offload beside free-lunch's (probe_build.py, compile cache filled by a first
# pass), and what importing DeepSpeed costs; everything packed into one archive.
#   ACADEMIC_BENCH_GIT_COMMIT=<commit> bash notebooks/runs/h200x1/evidence/engine-cost/probe/plan-deepspeed.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
P=notebooks/runs/h200x1/evidence/engine-cost/probe
O=/tmp/probe-ds; mkdir -p $O
cp $MACHINE_TXT $O/machine.txt
python3 -X importtime -c "import torch, transformers.models.gpt_neox.modeling_gpt_neox, academic_bench.measure.worker; import deepspeed" 2>&1 \
  | sort -t'|' -k2 -n | tail -40 > $O/imports-deepspeed.txt
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True TORCHINDUCTOR_FX_GRAPH_CACHE=1 TORCHINDUCTOR_AUTOGRAD_CACHE=1
export TORCHINDUCTOR_CACHE_DIR=/tmp/cc-probe TRITON_CACHE_DIR=/tmp/triton-probe OMP_NUM_THREADS=$(nproc)
for cm in "pythia-1b free-lunch+zero1+offload 32 zero1-offload" "pythia-1b free-lunch 32 free-lunch"; do
  set -- $cm
  for pass in cold warm; do
    timeout 240 python3 $P/probe_build.py $1 $2 $3 $O/$1-$4-$pass cuda > $O/$1-$4-$pass.log 2>&1
    echo "$1 $2 $pass rc=$? $(tail -1 $O/$1-$4-$pass.log)" | tee -a $O/summary.txt
  done
done
tar czf $OUT/probe-deepspeed.tgz -C $O .
