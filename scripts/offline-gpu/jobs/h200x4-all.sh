# For a later run on nvidia-h200-x4 (no machine of four GPUs was available in runs 1-11): the
# study's first run on four H200s, in two notebook runs as on h200x1 so that the short budget still reaches the
# checks: first naive for the nine models, the synced/unsynced Pythia-1B pairs and three validations; then the
# smart search of the nine with what is left (rows resume: run it again for what the budget left).
# benchmark.ipynb ends as the second run's copy; the first's is kept in evidence/.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x4 h200 4 ${BUDGET1_S:-720} ${HARD1_S:-1020} --preset naive \
  -p unsynced_models '[pythia-1b]' -p validate_models '[pythia-160m, pythia-1b, roberta-large]' \
  -p validate_steps 3 -p timeout_s 300
mkdir -p notebooks/runs/h200x4/evidence
cp notebooks/runs/h200x4/benchmark.ipynb notebooks/runs/h200x4/evidence/benchmark-naive-first.ipynb
bash scripts/offline-gpu/notebook.sh h200x4 h200 4 ${BUDGET2_S:-360} ${HARD2_S:-840} --preset smart -p timeout_s 480
