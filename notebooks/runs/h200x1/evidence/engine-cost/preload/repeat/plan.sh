# The one configuration whose step moved by more than 1% in ../ (Pythia-160M free-lunch + ZeRO-2 + offload, +1.21%
# by cee9113 against e72bb5f, both timing all five repetitions; +0.41% by cee9113 with workers started afresh)
# measured again on one machine by `bench`, the engines in turn: e72bb5f (1/before/), the engine after (1/after/),
# e72bb5f (2/before/), the engine after (2/after/), each pair a check of its own, one compile cache per engine;
# each run is started only while the command has time left for it.
# Expected before it ran: the same micro-batch (64) and steps within 1% of one another, the two engines'
# interleaved, since the same timing code (five repetitions) ran in both.
#   ACADEMIC_BENCH_GIT_COMMIT=REV bash notebooks/runs/h200x1/evidence/engine-cost/preload/repeat/plan.sh
# (scratch/engine-e72bb5f.tar as in ../plan.sh)
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h200x1/evidence/engine-cost/preload/repeat W=$PWD
BEFORE=e72bb5ff236cfd23311a67030e15e7a2bcf63807 AFTER=$ACADEMIC_BENCH_GIT_COMMIT
mkdir -p /tmp/before && tar xf scratch/engine-e72bb5f.tar -C /tmp/before && ln -sfn $W/notebooks /tmp/before/notebooks
cp $MACHINE_TXT $E/machine.txt
bench() {  # pair, version
  if [ $2 = before ]; then dir=/tmp/before c=$BEFORE; else dir=$W c=$AFTER; fi
  mkdir -p $W/$E/$1/$2
  local s=$SECONDS
  (cd $dir && ACADEMIC_BENCH_GIT_COMMIT=$c ACADEMIC_BENCH_COMPILE_CACHE=/tmp/cc-$2 TRITON_CACHE_DIR=/tmp/triton-$2 \
    PYTHONPATH=$dir:$PYTHONPATH timeout 90 python3 -m academic_bench bench --gpu h200 --gpus 1 --model pythia-160m \
    --methods free-lunch+zero2+offload --timeout 80 --out $W/$E/$1/$2/results.jsonl > $W/$E/$1/$2/bench.log 2>&1)
  echo "pair $1 $2 rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls.txt
}
for run in "1 before" "1 after" "2 before" "2 after"; do
  if [ $SECONDS -gt ${STOP_AFTER_S:-240} ]; then echo "not started: $run (${SECONDS} s of the command gone)" | tee -a $E/walls.txt; continue; fi
  bench $run
  tar czf $OUT/repeat.tgz $E
done
