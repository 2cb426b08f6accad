# Whole exhaustive searches by the engine whose one-GPU workers are forked from one process that imported their
# libraries once (launch.forked, measure.preload) and whose timing stops after three repetitions that settle the
# step within 1% (measure.timing.settled): Pythia-1B's 12 configurations, then Pythia-160M's, then Pythia-160M's
# again by the engine before both changes (e72bb5f, unpacked from scratch/engine-e72bb5f.tar), on this one machine,
# each search with compile caches of its own, empty at its start. Into results-one-launch.preload.jsonl and
# results-one-launch.before-preload.jsonl, which `analysis.launches.search_cost` reads as searches of their own
# (their rows name the commit that ran). First, which steps the preloading process can run once and which it leaves
# to each worker, because a worker forked after them could not use the GPU (preload-check.txt).
# Expected before it ran, from the searches at 419ffb4 (Pythia-1B 965 s, median 79 s; Pythia-160M 377 s, median
# 30 s) less what a forked worker no longer pays (torch, DeepSpeed and FSDP imported, CPU Adam loaded: about 3 s a
# configuration, 6 s with DeepSpeed's offload; transformers cannot be imported before the fork, by the probe in
# preload-probe.txt), less the two repetitions of the configurations whose first three settle (half of
# Pythia-1B's, by their samples at 419ffb4): Pythia-1B about 880 s, median about 72 s; Pythia-160M about 320 s,
# median about 26 s; the same micro-batches and the same fastest setting (free-lunch);
# steps within 1% of the engine before on the same machine, outside the machine-to-machine spread.
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h200x1/evidence/engine/plan-preload.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h200x1/evidence/engine W=$PWD
mkdir -p $E /tmp/before
cp $MACHINE_TXT $E/machine-preload.txt
tar xf scratch/engine-e72bb5f.tar -C /tmp/before && ln -sfn $W/notebooks /tmp/before/notebooks  # the runs it reads
PYTORCH_NVML_BASED_CUDA_CHECK=1 python3 -c "
import time
from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import parse_methods
from academic_bench.measure import preload
t, done, skipped = time.time(), set(), set()
for m in ('free-lunch', 'free-lunch+zero1+offload', 'free-lunch+fsdp_full_shard+offload'):
    preload.warm(Config('pythia-1b', 'h200', 1, methods=parse_methods(m)), done, skipped, gpu=True)
print(f'{time.time() - t:.1f} s; run once: {sorted(done)}; left to each worker: {sorted(skipped)}; '
      f'a worker forked now can use the GPU: {preload.gpu_usable_in_child()}')
" > $E/preload-check.txt 2>&1
cat $E/preload-check.txt
search() {  # model, results file, tag, commit, folder to run in (its academic_bench is the engine that runs)
  local s=$SECONDS
  (cd $5 && ACADEMIC_BENCH_GIT_COMMIT=$4 ACADEMIC_BENCH_COMPILE_CACHE=/tmp/cc-$3 TRITON_CACHE_DIR=/tmp/triton-$3 \
    PYTHONPATH=$5:$PYTHONPATH python3 -m academic_bench sweep --model $1 --gpu h200 --gpus 1 --preset exhaustive \
    --setup h200x1 --timeout 420 --no-progress --out $W/$E/$2 > $W/$E/sweep-$1-$3.log 2>&1)
  echo "$1 $3 exhaustive rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls-preload.txt
}
search pythia-1b results-one-launch.preload.jsonl preload $ACADEMIC_BENCH_GIT_COMMIT $W
search pythia-160m results-one-launch.preload.jsonl preload-160m $ACADEMIC_BENCH_GIT_COMMIT $W
search pythia-160m results-one-launch.before-preload.jsonl before e72bb5ff236cfd23311a67030e15e7a2bcf63807 /tmp/before
