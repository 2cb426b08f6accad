# Run 4 on nvidia-h200-x2, right after h200x2-checks.sh (whose free-lunch timeout left too little budget
# for two of its three validations): the validations of Pythia-1B's and RoBERTa-large's best rows.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x2 h200 2 ${BUDGET_S:-330} ${HARD_S:-640} --models pythia-1b roberta-large \
  --preset naive -p validate_models '[pythia-1b, roberta-large]' -p validate_steps 3 -p timeout_s 300
