# For a later run on nvidia-h100-x1: smart for the models that have none yet on one H100
# (Mamba needs mamba-ssm, which the GPU image lacks: its rows say unsupported).
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h100x1 h100-80gb 1 ${BUDGET_S:-1200} ${HARD_S:-1520} \
  --models roberta-large convnext-xlarge pythia-2.8b pythia-6.9b --preset smart -p timeout_s 300
