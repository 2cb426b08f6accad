# The worker's exit after its result is written: the engine at BEFORE (.base/, the interpreter's full teardown)
# against this commit's (os._exit once the result is written), on Pythia-1B and Pythia-160M free-lunch, each after a
# first run of the model has filled the version's compile cache (as later configurations of a sweep find it).
#   ACADEMIC_BENCH_GIT_COMMIT=AFTER BEFORE=36a20e3 bash notebooks/runs/h200x1/evidence/engine-cost/plan-exit.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h200x1/evidence/engine-cost/exit root=$PWD
AFTER=$ACADEMIC_BENCH_GIT_COMMIT
mkdir -p $E/before $E/after $E/fill
for m in pythia-1b pythia-160m; do
  for v in fill before after; do
    if [ $v = before ]; then dir=.base c=$BEFORE; else dir=. c=$AFTER; fi
    s=$SECONDS
    (cd $dir && ACADEMIC_BENCH_GIT_COMMIT=$c ACADEMIC_BENCH_COMPILE_CACHE=/tmp/cc TRITON_CACHE_DIR=/tmp/triton \
      timeout 300 python3 -m academic_bench bench --gpu h200 --gpus 1 --model $m --methods free-lunch --timeout 240 \
      --out $root/$E/$v/results.jsonl > $root/$E/$v/bench-$m.log 2>&1)
    echo "$v $m free-lunch rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls.txt
  done
done
