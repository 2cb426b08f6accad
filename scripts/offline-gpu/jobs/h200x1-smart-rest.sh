# For a later session on nvidia-h200 (one chip): the rest of h200x1's smart search -- Pythia-6.9B (session 7
# measured free-lunch; its ckpt row is an error from NCCL's lazily created communicator, fixed since: retried),
# and what Pythia-2.8B and ConvNeXt lack. Session 4's last minutes ran two Pythia-2.8B offload configurations
# with a 150 s limit and both timed out, and ConvNeXt's checkpointed configurations timed out at 300 s on one
# H100: retry timeouts, with a 480 s limit.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 ${BUDGET_S:-1200} ${HARD_S:-1700} --preset smart \
  --models pythia-6.9b pythia-2.8b convnext-xlarge -p retry '[timeout, error]' -p timeout_s 480
