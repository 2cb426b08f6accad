# For a later session on nvidia-h200-x2 (counted in full): what the first run left (ViT-L naive), synced vs
# unsynced Pythia-1B and three validations first, then smart for every model with what is left. Each hard limit
# leaves one configuration's timeout beyond the budget (a budget only stops new configurations from starting;
# a validation starts only if it can end within it).
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x2 h200 2 ${BUDGET1_S:-600} ${HARD1_S:-920} --preset naive \
  -p unsynced_models '[pythia-1b]' -p validate_models '[pythia-160m, pythia-1b, roberta-large]' \
  -p validate_steps 3 -p timeout_s 300
mkdir -p notebooks/runs/h200x2/evidence
cp notebooks/runs/h200x2/benchmark.ipynb notebooks/runs/h200x2/evidence/benchmark-naive-checks.ipynb
bash scripts/offline-gpu/notebook.sh h200x2 h200 2 ${BUDGET2_S:-480} ${HARD2_S:-800} --preset smart -p timeout_s 300
