# For the next session on nvidia-h100-x1 (about 25 minutes held): finish the exhaustive Pythia-1B search and
# run Pythia-160M's (smart vs exhaustive on two settings), then smart for the models that have none yet.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h100x1 h100-80gb 1 ${BUDGET_S:-1320} ${HARD_S:-1440} \
  --models pythia-1b pythia-160m --preset smart -p exhaustive_models '[pythia-1b, pythia-160m]' -p timeout_s 300
timeout --signal=INT 600 python3 -m academic_bench sweep --model roberta-large,convnext-xlarge,pythia-2.8b,pythia-6.9b \
  --gpu h100-80gb --gpus 1 --preset smart --budget ${SMART_BUDGET_S:-420} --timeout 300 \
  --out notebooks/runs/h100x1/results.jsonl --setup h100x1 --no-progress
echo "job rc=$?"
