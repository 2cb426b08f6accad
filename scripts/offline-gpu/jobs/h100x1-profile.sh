# For a later session on nvidia-h100-x1, as a background job (start_background.sh, then collect.sh ... h100x1):
# where the step time goes, for the fastest measured configuration of each model that shards nothing on one H100
# (`academic-bench profile --methods best`, at its measured micro-batch), into notebooks/runs/h100x1/
# profiles.jsonl, which the book's "What the efficient methods buy" chapter draws. Each profile compiles its
# model first, so each takes about as long as its free-lunch row took to measure (ConvNeXt-XL's: minutes);
# Pythia-1B first, as the acceptance asks what limits its MFU. Mamba needs install_mamba.sh in an earlier call.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
for model in ${MODELS:-pythia-1b pythia-160m pythia-410m pythia-2.8b roberta-large vit-large convnext-xlarge mamba-2.8b}; do
  timeout --signal=INT ${PROFILE_TIMEOUT_S:-400} python3 -m academic_bench profile --model $model --gpu h100-80gb \
    --gpus 1 --methods best --out notebooks/runs/h100x1/profiles.jsonl
  echo "profile $model rc=$?"
done
