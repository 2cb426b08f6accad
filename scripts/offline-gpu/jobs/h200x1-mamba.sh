# For a later run on nvidia-h200 (one chip): the rest of Mamba-2.8B's smart search with its kernels (its
# naive row, the PyTorch path, ran out of memory; run 8 measured free-lunch, and free-lunch + ckpt, at a
# larger micro-batch, was killed at a 300 s limit: retried here with 480 s). As for h100x1-run9.sh: a first
# call carrying [".whl-mamba"] runs install_mamba.sh (it also runs both kernels once on the GPU), and the next
# call, right after (the machine goes back after 30 s idle), carrying [".whl"], starts this job.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 ${BUDGET_S:-900} ${HARD_S:-1380} --models mamba-2.8b \
  --preset smart -p timeout_s 480 -p retry '[unsupported, timeout]'
