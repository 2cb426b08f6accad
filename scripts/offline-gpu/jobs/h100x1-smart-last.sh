# For a later run on nvidia-h100-x1: smart for the models that are not complete on one H100. Run 5's
# h100x1-smart-rest.sh ran RoBERTa and ConvNeXt's free-lunch row; ConvNeXt's next three configurations timed
# out at 300 s (its free-lunch row alone took about 250 s), so retry timeouts with a longer limit. The Pythias go first: ConvNeXt alone could spend the budget. (Mamba needs
# mamba-ssm, which the GPU image lacks: its rows say unsupported.)
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h100x1 h100-80gb 1 ${BUDGET_S:-1000} ${HARD_S:-1500} \
  --models pythia-2.8b pythia-6.9b convnext-xlarge --preset smart -p timeout_s 480 -p retry '[timeout]'
