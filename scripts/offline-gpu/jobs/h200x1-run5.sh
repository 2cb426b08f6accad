# Run 5's last minutes on nvidia-h200 (one chip): smart for RoBERTa, ViT-L and
# ConvNeXt, as far as a short budget goes (the rest stays in h200x1-smart-rest.sh).
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 ${BUDGET_S:-640} ${HARD_S:-780} \
  --models roberta-large vit-large convnext-xlarge --preset smart -p timeout_s 300
