# One process started without torchrun: the engine at BEFORE (.base/, `git archive BEFORE academic_bench
# pyproject.toml`; one-GPU workers under torchrun) against this commit's (the worker started directly, its process
# group of one on an in-process store), on Pythia-1B free-lunch, Pythia-1B ZeRO-1 + offload and Pythia-160M
# free-lunch, each after a first run of the configuration has filled the shared compile cache; then, with this
# commit's engine only, Pythia-1B ZeRO-1 + offload and Pythia-160M FSDP full-shard + offload, which need the process
# group of one (DeepSpeed and FSDP). Step times must agree within 1%.
#   ACADEMIC_BENCH_GIT_COMMIT=AFTER BEFORE=125894d bash notebooks/runs/h200x1/evidence/engine-cost/launch/plan.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h200x1/evidence/engine-cost/launch root=$PWD
AFTER=$ACADEMIC_BENCH_GIT_COMMIT
mkdir -p $E/before $E/after $E/fill
cp $MACHINE_TXT $E/machine.txt
bench() {  # version model methods
  if [ $1 = before ]; then dir=.base c=$BEFORE; else dir=. c=$AFTER; fi
  s=$SECONDS
  # `python3 -m` imports the package of the folder it starts in: each version runs from its own folder.
  (cd $dir && ACADEMIC_BENCH_GIT_COMMIT=$c ACADEMIC_BENCH_COMPILE_CACHE=/tmp/cc TRITON_CACHE_DIR=/tmp/triton \
    timeout 300 python3 -m academic_bench bench --gpu h200 --gpus 1 --model $2 --methods $3 --timeout 240 \
    --out $root/$E/$1/results.jsonl > $root/$E/$1/bench-$2-$3.log 2>&1)
  echo "$1 $2 $3 rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls.txt
}
for cm in "pythia-1b free-lunch" "pythia-160m free-lunch"; do
  for v in fill before after; do bench $v $cm; done
done
bench after pythia-1b free-lunch+zero1+offload
bench after pythia-160m free-lunch+fsdp_full_shard+offload
