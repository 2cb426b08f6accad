# For a later session on nvidia-h200-x2 (counted in full). First the compiled Pythia-1B pair that session 4
# lost to a hung micro-batch search (its synced free-lunch row timed out; the search no longer hangs when the
# ranks disagree at the memory edge): retry that timeout, then time the unsynced twin at its micro-batch.
# Then the smart search of every model. Each hard limit leaves one configuration's timeout beyond the budget.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x2 h200 2 ${BUDGET1_S:-240} ${HARD1_S:-560} --models pythia-1b \
  --preset naive -p unsynced_models '[pythia-1b]' -p retry '[timeout]' -p timeout_s 300
bash scripts/offline-gpu/notebook.sh h200x2 h200 2 ${BUDGET2_S:-700} ${HARD2_S:-1000} --preset smart -p timeout_s 300
