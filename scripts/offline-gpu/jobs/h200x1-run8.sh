# Run 8 on nvidia-h200 (one chip, about 28 minutes held), after install_mamba.sh in the call before: what
# h200x1 most lacks. (1) Mamba-2.8B's smart search with its kernels (no h200x1 measurement yet). (2) The
# exhaustive search of Pythia-1B (its smart search is complete here, so the book can say how close smart came),
# with whatever time is left: rows not started are recorded "not run" and resume next run
# (jobs/h200x1-exhaustive.sh). Each notebook's budget comes from one deadline so the job ends while the machine
# is still held.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
DEADLINE=$(( $(date +%s) + ${JOB_S:-1600} ))
left() { echo $(( DEADLINE - $(date +%s) )); }
TIMEOUT=300
budget=$(( $(left) - TIMEOUT )); (( budget > 300 )) && budget=300
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 $budget $(( budget + TIMEOUT )) --models mamba-2.8b \
  --preset smart -p timeout_s $TIMEOUT -p retry '[unsupported, timeout]'
budget=$(( $(left) - TIMEOUT ))
if (( budget > 60 )); then
  bash scripts/offline-gpu/notebook.sh h200x1 h200 1 $budget $(( budget + TIMEOUT )) --models pythia-1b \
    --preset smart -p exhaustive_models '[pythia-1b]' -p timeout_s $TIMEOUT
fi
