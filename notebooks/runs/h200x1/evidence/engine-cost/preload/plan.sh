# The engine that forks a sweep's one-GPU workers from a preloading process and stops timing after three
# repetitions that settle the step within 1% (REV), against the engine before both changes (e72bb5f, unpacked from
# scratch/engine-e72bb5f.tar and run from its own folder), on one machine: Pythia-160M's exhaustive search (12
# configurations) by REV (after/), by e72bb5f (before/), then by REV with ACADEMIC_BENCH_PRELOAD=0 (fresh/: the
# early stop without the preloading process), each with compile caches of its own, empty at its start; then
# Pythia-1B free-lunch alone (`bench`, one configuration, which REV starts afresh) by e72bb5f (single/before/) and
# by REV (single/after/). First, where importing the workers' libraries first asks CUDA about the GPU
# (cuda-init.txt, by cuda_init.py).
# Expected before it ran, from the searches on other machines (Pythia-160M: 377 s at 419ffb4 with the compile
# cache Pythia-1B's search had filled, 378 s at 4ab0aaa with its own empty one; Pythia-1B free-lunch 45 s at
# 419ffb4): after about 380 s, before about 400 s, fresh about 395 s (the forked workers save about 1.5 s of
# imports each and 3 s more with DeepSpeed's offload, less about 17 s for the preloading process's start and
# checks); single before about 45 s, single after about 42 s; the same micro-batches and the same fastest setting
# (free-lunch); every step within 1% of the same configuration's by the engine before.
# scratch/engine-e72bb5f.tar (not in the repository) was made with
#   git archive e72bb5f academic_bench pyproject.toml -o scratch/engine-e72bb5f.tar
# and copied with the repository to the machine that ran this plan.
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h200x1/evidence/engine-cost/preload/plan.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h200x1/evidence/engine-cost/preload W=$PWD
BEFORE=e72bb5ff236cfd23311a67030e15e7a2bcf63807 AFTER=$ACADEMIC_BENCH_GIT_COMMIT
mkdir -p $E/after $E/before $E/fresh $E/single/before $E/single/after /tmp/before
cp $MACHINE_TXT $E/machine.txt
tar xf scratch/engine-e72bb5f.tar -C /tmp/before && ln -sfn $W/notebooks /tmp/before/notebooks  # the runs it reads
PYTORCH_NVML_BASED_CUDA_CHECK=1 python3 $E/cuda_init.py > $E/cuda-init.txt 2>&1
cat $E/cuda-init.txt
search() {  # folder, tag, commit, folder to run in (its academic_bench is the engine that runs), extra variables
  local s=$SECONDS
  (cd $4 && env $5 ACADEMIC_BENCH_GIT_COMMIT=$3 ACADEMIC_BENCH_COMPILE_CACHE=/tmp/cc-$2 TRITON_CACHE_DIR=/tmp/triton-$2 \
    PYTHONPATH=$4:$PYTHONPATH python3 -m academic_bench sweep --model pythia-160m --gpu h200 --gpus 1 \
    --preset exhaustive --setup h200x1 --timeout 420 --no-progress --out $W/$E/$1/results.jsonl \
    > $W/$E/$1/sweep.log 2>&1)
  echo "pythia-160m $2 exhaustive rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls.txt
}
single() {  # folder, commit, folder to run in
  local s=$SECONDS
  (cd $3 && ACADEMIC_BENCH_GIT_COMMIT=$2 ACADEMIC_BENCH_COMPILE_CACHE=/tmp/cc-$1 TRITON_CACHE_DIR=/tmp/triton-$1 \
    PYTHONPATH=$3:$PYTHONPATH python3 -m academic_bench bench --gpu h200 --gpus 1 --model pythia-1b \
    --methods free-lunch --timeout 360 --out $W/$E/single/$1/results.jsonl > $W/$E/single/$1/bench.log 2>&1)
  echo "pythia-1b free-lunch single-$1 rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls.txt
}
search after after $AFTER $W ACADEMIC_BENCH_PRELOAD=1
search before before $BEFORE /tmp/before ACADEMIC_BENCH_PRELOAD=1
search fresh fresh $AFTER $W ACADEMIC_BENCH_PRELOAD=0
single before $BEFORE /tmp/before
single after $AFTER $W
