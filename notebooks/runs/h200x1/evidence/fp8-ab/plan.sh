# Pythia-1B with free-lunch and with free-lunch + FP8 rowwise on one machine, in turn, twice (pairs 1/ and 2/), each
# at micro-batch 32 (the size both shipped h200x1 rows ran at) through `bench`: the same-machine check of the
# shipped comparison, whose two rows ran on different machines. The book's "Where FP8 starts to pay" judges FP8's
# speed-up against the machine-to-machine spread of steps on the GPU alone (`results.step_spreads`); this speed-up
# is the one nearest to it.
# Expected before it ran: in each pair the FP8 rowwise step shorter than free-lunch's by 2-5% (the shipped rows,
# h200x1/results.jsonl: FP8 rowwise against the two free-lunch measurements at micro-batch 32, on other machines),
# the two pairs agreeing within 1%.
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h200x1/evidence/fp8-ab/plan.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h200x1/evidence/fp8-ab
cp $MACHINE_TXT $E/machine.txt
bench() {  # pair, methods
  mkdir -p $E/$1
  local s=$SECONDS
  timeout 420 python3 -m academic_bench bench --gpu h200 --gpus 1 --model pythia-1b --methods $2 --micro-batch 32 \
    --timeout 400 --out $E/$1/results.jsonl > $E/$1/bench-$2.log 2>&1
  echo "pair $1 $2 rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls.txt
}
for run in "1 free-lunch" "1 free-lunch+fp8-rowwise" "2 free-lunch" "2 free-lunch+fp8-rowwise"; do
  bench $run
done
