# h100x1, one background job on one H100: Pythia-160M's and Pythia-1B's exhaustive configurations each measured in
# turn by one process (scripts/offline-gpu/one_process_probe.py: the worker's own search-and-time in place, the GPU
# freed between configurations as between trial sizes), against the engine's process per configuration measured
# in cost-3 (160M) and cost-2 (1B) at the same engine revision (6). Into engine/one-process/.
# Expected before it runs, from those rows' wall_breakdown (outside the trials and timed repetitions: 160M 209 of
# 420 s, 1B 338 of 794 s) and the build profile (a second build of 1B ZeRO-1 + offload 6.9 s against 18.8 s):
#  - start paid once (about 3 s against 21 s and 26 s); builds from 116 s to about 40 s (160M) and from 211 s to
#    about 70 s (1B: the DeepSpeed offload builds keep their pinning and optimizer states, about 6 s each);
#    teardown from 9 s and 29 s to the freeing between configurations, a few seconds; warm-up unchanged;
#  - so about 320 s of configurations for 160M (34% outside) and about 610 s for 1B (25% outside; its timed
#    repetitions alone took 183 s and 299 s in the engine's last two searches), about 28% over both: the 35% aim
#    met, Pythia-1B's search within 12 minutes;
#  - each configuration's step within its fresh-process row's spread, or within the machine spread the study
#    observed for its kind of step (a step on the GPU alone 3.4%, with offloading 6.2%);
#  - the risk: memory one configuration leaves to the next (host memory pinned by DeepSpeed's offload, the
#    allocator's cache), which the lines' free host memory and reserved GPU memory after each show.
#   ACADEMIC_BENCH_GIT_COMMIT=<the commit, as printed here by git rev-parse HEAD> MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/engine/plan-one-process.sh
# Pythia-1B first: its search is the one the 12-minute aim is about. MODELS=pythia-1b runs it alone.
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h100x1/evidence/engine/one-process
mkdir -p $E
cp $MACHINE_TXT $E/machine.txt
for model in ${MODELS:-pythia-1b pythia-160m}; do
  rm -rf /tmp/cc-cost /tmp/triton-cost
  s=$SECONDS
  ACADEMIC_BENCH_COMPILE_CACHE=/tmp/cc-cost TRITON_CACHE_DIR=/tmp/triton-cost \
    python3 scripts/offline-gpu/one_process_probe.py $model $E/$model.jsonl > $E/$model.log 2>&1
  echo "$model one process rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls.txt
done
