# For the next session on nvidia-h200-x2 (counted in full): what the first run left (ViT-L naive), smart for
# every model, synced vs unsynced Pythia-1B, and three validations.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
timeout --signal=INT ${HARD_S:-1500} python3 -m academic_bench notebook --setup h200x2 --gpu h200 --gpus 2 \
  --preset naive smart -p unsynced_models '[pythia-1b]' -p validate_models '[pythia-160m, pythia-1b, roberta-large]' \
  -p validate_steps 3 -p time_budget_s ${BUDGET_S:-1380} -p timeout_s 300
echo "notebook rc=$?"
