# Run 4 on nvidia-h200 (one chip): what run 3 left on h200x1 -- first the validation of Pythia-160M's
# best (its smart free-lunch row), then the smart search of the other eight models for what is left of the
# machine's time. Each hard limit leaves one configuration's timeout beyond the budget (a budget only
# stops new configurations from starting).
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 ${BUDGET1_S:-200} ${HARD1_S:-420} --models pythia-160m \
  --preset smart -p validate_models '[pythia-160m]' -p validate_steps 3 -p timeout_s 220
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 ${BUDGET2_S:-600} ${HARD2_S:-900} --preset smart -p timeout_s 300
