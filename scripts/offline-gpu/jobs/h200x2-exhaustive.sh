# For a later run on nvidia-h200-x2: the exhaustive search of Pythia-1B and Pythia-160M
# (22 valid combinations each on two GPUs; their smart searches are complete since run 5). It takes more
# than one machine's time: rows resume, so run it again for what the budget left.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x2 h200 2 ${BUDGET_S:-900} ${HARD_S:-1200} --models pythia-1b pythia-160m \
  --preset smart -p exhaustive_models '[pythia-1b, pythia-160m]' -p timeout_s 300
