# For a later session on nvidia-h200 (one chip): the rest of h200x1's smart search -- Pythia-6.9B, RoBERTa,
# ConvNeXt, ViT-L and what Pythia-2.8B lacks. Session 4's last minutes ran two Pythia-2.8B offload
# configurations with a 150 s limit and both timed out: retry timeouts, with the usual 300 s.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 ${BUDGET_S:-1200} ${HARD_S:-1520} --preset smart \
  -p retry '[timeout]' -p timeout_s 300
