# nvidia-h200 (one chip), run 3 (about 28 minutes held), in two notebook runs so that the short budget
# still reaches the checks: first naive for the nine models, the synced/unsynced Pythia-1B pairs and three
# validations; then smart for the nine with what is left. benchmark.ipynb ends as the second run's copy; the
# first's is kept as evidence/benchmark-naive-run3.ipynb.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 ${BUDGET1_S:-900} ${HARD1_S:-990} --preset naive \
  -p unsynced_models '[pythia-1b]' -p validate_models '[pythia-160m, pythia-1b, vit-large]' \
  -p validate_steps 3 -p timeout_s 300
mkdir -p notebooks/runs/h200x1/evidence
cp notebooks/runs/h200x1/benchmark.ipynb notebooks/runs/h200x1/evidence/benchmark-naive-run3.ipynb
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 ${BUDGET2_S:-480} ${HARD2_S:-560} --preset smart -p timeout_s 300
