# For a later run on nvidia-h200 (one chip, about 25 minutes held): the exhaustive search of Pythia-1B and
# Pythia-160M (12 valid combinations each; their smart searches are complete, so the book can say how close smart
# came). Rows resume: run it again in the next run for what the budget left.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 ${BUDGET_S:-1200} ${HARD_S:-1520} --models pythia-1b pythia-160m \
  --preset smart -p exhaustive_models '[pythia-1b, pythia-160m]' -p timeout_s 300 -p retry '[timeout]'
