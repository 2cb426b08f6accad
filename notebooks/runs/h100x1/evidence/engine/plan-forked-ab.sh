# Does the forked-worker launcher (launch/forked.py, measure/preload.py: one-GPU workers forked from one process that
# imported their libraries once per sweep) earn its keep? Pythia-160M's and Pythia-1B's whole exhaustive searches
# (12 configurations each) on one H100, each with it (ACADEMIC_BENCH_PRELOAD=1) and without it
# (ACADEMIC_BENCH_PRELOAD=0: every worker started afresh), on this one machine, in the order 160M on, 160M off,
# 1B off, 1B on (so that a drift of the machine during the job does not favour one side), each search with
# compile caches of its own, empty at its start, into forked-ab/<on|off>/results.jsonl (the rows name the commit);
# walls in forked-ab/walls.txt. The rule (issue: keep it only if it saves more than 10% of these searches' wall
# time): 1 - (160M on + 1B on) / (160M off + 1B off), printed at the end.
# Expected before it runs: on one H200 the same comparison for Pythia-160M alone took 371 s with it and 398 s
# without (h200x1/evidence/engine-cost/preload/walls.txt: 27 s, 7% saved; its plan had put the gain at about 1.5 s
# of imports a configuration and 3 s more for each with DeepSpeed's offload, less about 17 s for the preloading
# process's start and checks); on this H100 Pythia-160M's search with it took 290 s (walls-exhaustive.txt), so
# without it about 320 s; Pythia-1B's search about 920 s with it (plan-exhaustive.sh's expectation) and about
# 950 s without; in all about 5% saved, under the 10% that keeps it,
# and the launcher (about 430 lines with its probes) is then to be removed. Each configuration's micro-batch and
# the fastest setting (free-lunch) the same both ways, steps within the machine-to-machine spread.
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/engine/plan-forked-ab.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h100x1/evidence/engine/forked-ab
mkdir -p $E/on $E/off
cp $MACHINE_TXT $E/machine.txt
search() {  # model, on|off
  local s=$SECONDS preload=1
  [ $2 = off ] && preload=0
  rm -rf /tmp/cc-$1-$2 /tmp/triton-$1-$2
  ACADEMIC_BENCH_PRELOAD=$preload ACADEMIC_BENCH_COMPILE_CACHE=/tmp/cc-$1-$2 TRITON_CACHE_DIR=/tmp/triton-$1-$2 \
    python3 -m academic_bench sweep --model $1 --gpu h100-80gb --gpus 1 --preset exhaustive --setup h100x1 \
    --timeout 420 --no-progress --out $E/$2/results.jsonl > $E/$2/sweep-$1.log 2>&1
  echo "$1 $2 exhaustive rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls.txt
}
# The two pairs take about 35 minutes together (the expectations above): MODELS picks them (default
# both), so that they can run as two jobs, on two machines; the rule reads every pair in walls.txt.
for model in ${MODELS:-pythia-160m pythia-1b}; do
  if [ $model = pythia-160m ]; then search $model on; search $model off; else search $model off; search $model on; fi
done
python3 - <<PY | tee -a $E/walls.txt
walls = {}
for line in open("$E/walls.txt"):
    parts = line.split()
    if len(parts) == 5 and parts[2] == "exhaustive":
        walls[(parts[0], parts[1])] = int(parts[4].split("=")[1])
on = sum(v for (m, side), v in walls.items() if side == "on")
off = sum(v for (m, side), v in walls.items() if side == "off")
print(f"with the forked-worker launcher {on} s, without {off} s: {1 - on / off:.1%} saved (keep only above 10%)")
PY
