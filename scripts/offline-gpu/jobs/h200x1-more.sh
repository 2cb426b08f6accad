# Run 4 on nvidia-h200, right after h200x1-continue.sh on the same warm machine: the smart search goes on
# (resumable) for the few minutes of machine time left.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 ${BUDGET_S:-280} ${HARD_S:-430} --preset smart -p timeout_s 150
