# Where the fixed part of a configuration's time goes on one H200: torchrun's own start beside a direct start of one
# process, the imports a first build pulls in, and cProfile of the first build and first two steps of Pythia-1B
# free-lunch, Pythia-1B ZeRO-1 + offload and Pythia-160M free-lunch (each twice: the compile cache cold, then filled).
#   ACADEMIC_BENCH_GIT_COMMIT=<commit> bash notebooks/runs/h200x1/evidence/engine-cost/probe/plan.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
P=notebooks/runs/h200x1/evidence/engine-cost/probe
mkdir -p $P/out
cp $MACHINE_TXT $P/out/machine.txt
echo 'import torch; print("started")' > /tmp/noop.py
now() { python3 -c 'import time; print(time.time())'; }
for i in 1 2 3; do
  a=$(date +%s.%N); python3 -m torch.distributed.run --standalone --nproc_per_node 1 --max_restarts 0 /tmp/noop.py >/dev/null 2>&1
  b=$(date +%s.%N); python3 /tmp/noop.py >/dev/null 2>&1; c=$(date +%s.%N)
  python3 -c "print('one process importing torch: through torchrun %.2f s, directly %.2f s' % ($b - $a, $c - $b))" | tee -a $P/out/launch.txt
done
python3 -X importtime -c "import academic_bench.measure.worker, transformers.models.gpt_neox.modeling_gpt_neox, torch._dynamo, torch._inductor.compile_fx, deepspeed" 2>&1 \
  | sort -t'|' -k2 -n | tail -25 > $P/out/imports.txt
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True TORCHINDUCTOR_FX_GRAPH_CACHE=1 TORCHINDUCTOR_AUTOGRAD_CACHE=1
export TORCHINDUCTOR_CACHE_DIR=/tmp/cc-probe TRITON_CACHE_DIR=/tmp/triton-probe OMP_NUM_THREADS=$(nproc)
for cm in "pythia-1b free-lunch 32" "pythia-1b free-lunch+zero1+offload 32" "pythia-160m free-lunch 64"; do
  set -- $cm
  for pass in cold warm; do
    timeout 240 python3 $P/probe_build.py $1 $2 $3 $P/out/$1-$2-$pass cuda > $P/out/$1-$2-$pass.log 2>&1
    echo "$1 $2 $pass rc=$? $(tail -1 $P/out/$1-$2-$pass.log)" | tee -a $P/out/summary.txt
  done
done
cp -r $P/out/. $OUT/
