# Two whole-accumulation blocks for ZeRO-3 + offload instead of three: the engine at BEFORE (.base/, `git archive
# BEFORE academic_bench pyproject.toml`; three blocks) against this commit's (two), on Pythia-1B and Pythia-160M
# free-lunch + ZeRO-3 + offload (not compiled under ZeRO-3, so no compile cache to fill first), "before" then "after".
# Step times must agree within 1%; the block rows' rebuilt steps (`analysis.launches.fewer_reps`) said far less.
#   ACADEMIC_BENCH_GIT_COMMIT=AFTER BEFORE=39a3eaa bash notebooks/runs/h200x1/evidence/engine-cost/blocks/plan.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h200x1/evidence/engine-cost/blocks root=$PWD
AFTER=$ACADEMIC_BENCH_GIT_COMMIT
mkdir -p $E/before $E/after
cp $MACHINE_TXT $E/machine.txt
bench() {  # version model methods
  if [ $1 = before ]; then dir=.base c=$BEFORE; else dir=. c=$AFTER; fi
  s=$SECONDS
  # `python3 -m` imports the package of the folder it starts in: each version runs from its own folder.
  (cd $dir && ACADEMIC_BENCH_GIT_COMMIT=$c \
    timeout 400 python3 -m academic_bench bench --gpu h200 --gpus 1 --model $2 --methods $3 --timeout 360 \
    --out $root/$E/$1/results.jsonl > $root/$E/$1/bench-$2-$3.log 2>&1)
  echo "$1 $2 $3 rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls.txt
}
for cm in "pythia-160m free-lunch+zero3+offload" "pythia-1b free-lunch+zero3+offload"; do
  for v in before after; do bench $v $cm; done
done
