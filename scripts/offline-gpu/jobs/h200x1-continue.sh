# For a later session on nvidia-h200 (one chip): what session 3 left on h200x1 -- first the validation of
# Pythia-160M's best (its smart free-lunch row), then the smart search of the other eight models. Each hard limit
# leaves one configuration's timeout beyond the budget (a budget only stops new configurations from starting).
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 ${BUDGET1_S:-200} ${HARD1_S:-520} --models pythia-160m \
  --preset smart -p validate_models '[pythia-160m]' -p validate_steps 3 -p timeout_s 300
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 ${BUDGET2_S:-900} ${HARD2_S:-1220} --preset smart -p timeout_s 300
