# nvidia-h100-x1, run 3 (about 27 minutes held): finish the exhaustive Pythia-1B search and run
# Pythia-160M's, so that smart can be compared with exhaustive on two settings.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h100x1 h100-80gb 1 ${BUDGET_S:-1440} ${HARD_S:-1530} \
  --models pythia-1b pythia-160m --preset smart -p exhaustive_models '[pythia-1b, pythia-160m]' -p timeout_s 300
