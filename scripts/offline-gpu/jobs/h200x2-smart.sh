# For a later run on nvidia-h200-x2: the smart search of every model (Pythia-160M and -1B
# are complete since run 5 and are not re-run). The hard limit leaves one configuration's timeout beyond the
# budget.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x2 h200 2 ${BUDGET_S:-900} ${HARD_S:-1380} --preset smart -p timeout_s 480
