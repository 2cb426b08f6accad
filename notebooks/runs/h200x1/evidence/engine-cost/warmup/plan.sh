# The warm-up block of ZeRO-3 + offload counted as a repetition where it agrees with the first timed one: the engine
# at BEFORE (.base/, `git archive BEFORE academic_bench pyproject.toml`; one warm-up block, then two timed) against
# this commit's (`timing.warmup_agrees`), on Pythia-160M and Pythia-1B free-lunch + ZeRO-3 + offload, "before" then
# "after". Expected before it ran: one whole step less per configuration where the warm-up agrees (in the logs of
# evidence/engine*/ every warm-up block took as long as its timed ones), about 7 s of Pythia-160M's 50 s and 30 s of
# Pythia-1B's 133 s (engine-cost/blocks/after/); step times within 1% (a counted warm-up moves the median by at most
# half of timing.WARMUP_AGREES).
#   ACADEMIC_BENCH_GIT_COMMIT=AFTER BEFORE=75edd29 bash notebooks/runs/h200x1/evidence/engine-cost/warmup/plan.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h200x1/evidence/engine-cost/warmup root=$PWD
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
