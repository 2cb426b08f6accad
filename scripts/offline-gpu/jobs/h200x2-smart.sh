# For a later session on nvidia-h200-x2 (counted in full): the smart search of every model on two H200s
# (the checks ran in session 4: jobs/h200x2-checks.sh). The hard limit leaves one configuration's timeout
# beyond the budget (a budget only stops new configurations from starting).
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x2 h200 2 ${BUDGET_S:-900} ${HARD_S:-1220} --preset smart -p timeout_s 300
