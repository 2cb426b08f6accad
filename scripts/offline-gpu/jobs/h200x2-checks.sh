# Run 4 on nvidia-h200-x2: what the first run left on h200x2 -- ViT-L naive (its only
# missing model row), synced vs unsynced Pythia-1B (naive = eager, free-lunch = compiled), and three validations.
# The smart search waits for a later run (jobs/h200x2-smart.sh). Budget 700 s: the seven configurations'
# expected durations (run-2 naive rows + 3 steps each) add up to about 670 s; the hard limit adds one timeout.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x2 h200 2 ${BUDGET_S:-700} ${HARD_S:-1000} --preset naive \
  -p unsynced_models '[pythia-1b]' -p validate_models '[pythia-160m, pythia-1b, roberta-large]' \
  -p validate_steps 3 -p timeout_s 300
