# Run 2 on nvidia-h100-x1: smart then exhaustive for Pythia-1B and -160M (how close smart gets, at what
# share of the GPU time), smart for ViT-L, and validations of Pythia-160M and ViT-L.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
timeout --signal=INT ${HARD_S:-1260} python3 -m academic_bench notebook --setup h100x1 --gpu h100-80gb --gpus 1 \
  --models pythia-1b pythia-160m vit-large --preset smart -p exhaustive_models '[pythia-1b, pythia-160m]' \
  -p validate_models '[pythia-160m, vit-large]' -p validate_steps 3 -p time_budget_s ${BUDGET_S:-1140} -p timeout_s 300
echo "notebook rc=$?"
