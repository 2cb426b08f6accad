# For a session on nvidia-h200 (one chip): the nine models naive and smart, synced vs unsynced Pythia-1B, and
# three validations, in one background job (about 28 minutes held).
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 ${BUDGET_S:-1440} ${HARD_S:-1560} --preset naive smart \
  -p unsynced_models '[pythia-1b]' -p validate_models '[pythia-160m, pythia-1b, vit-large]' \
  -p validate_steps 3 -p timeout_s 300
