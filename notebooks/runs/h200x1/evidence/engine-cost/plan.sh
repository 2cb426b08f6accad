# The engine's cost per configuration before and after one model for every micro-batch size the search tries
# (with the search's two steps counted as warm-up), on one machine, interleaved so that neither version runs on a
# colder machine: each configuration is measured by the engine at BEFORE (its package in .base/, `git archive
# BEFORE academic_bench pyproject.toml`) and then by this commit's, each version with a compile cache of its own.
# Pythia-1B free-lunch and ZeRO-1 + offload and Pythia-160M free-lunch, each the first of its model in a cold
# compile cache (Inductor's and Triton's); `bench`, 5 timed repetitions. The step times of the two versions must agree within 1%.
#   ACADEMIC_BENCH_GIT_COMMIT=AFTER BEFORE=06ded7c bash notebooks/runs/h200x1/evidence/engine-cost/plan.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h200x1/evidence/engine-cost root=$PWD
AFTER=$ACADEMIC_BENCH_GIT_COMMIT
mkdir -p $E/before $E/after
python3 -c "import sys, os, torch; print('bytecode written:', not sys.dont_write_bytecode, '| torch bytecode shipped:', os.path.isdir(os.path.join(os.path.dirname(torch.__file__), '__pycache__')))" > $E/imports.txt
python3 -X importtime -c "import academic_bench.measure.worker, transformers, deepspeed" 2>&1 | sort -t'|' -k2 -n | tail -4 >> $E/imports.txt
for cm in "pythia-1b free-lunch" "pythia-1b free-lunch+zero1+offload" "pythia-160m free-lunch"; do
  set -- $cm
  for v in before after; do
    # `python3 -m` imports the package of the folder it starts in, and the launcher puts that package first on
    # its workers' path: each version runs from its own folder.
    if [ $v = before ]; then dir=.base c=$BEFORE; else dir=. c=$AFTER; fi
    s=$SECONDS
    (cd $dir && ACADEMIC_BENCH_GIT_COMMIT=$c ACADEMIC_BENCH_COMPILE_CACHE=/tmp/cc-$v TRITON_CACHE_DIR=/tmp/triton-$v \
      timeout 500 python3 -m academic_bench bench --gpu h200 --gpus 1 --model $1 --methods $2 --timeout 420 \
      --out $root/$E/$v/results.jsonl > $root/$E/$v/bench-$1-$2.log 2>&1)
    echo "$v $1 $2 rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls.txt
  done
done
