# For a later run on nvidia-h200 (one chip): the rest of h200x1's smart search -- Pythia-6.9B (run 7
# measured free-lunch; its ckpt row is an error from NCCL's lazily created communicator, fixed since: retried
# with a 480 s limit). Pythia-2.8B and ConvNeXt-XL, once in this job, were settled in run 10
# (h200x1-run10b.sh).
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 ${BUDGET_S:-600} ${HARD_S:-1100} --preset smart \
  --models pythia-6.9b -p retry '[timeout, error]' -p timeout_s 480
