# For a later session on nvidia-h100-x1: Mamba-2.8B's smart search with its kernels. Before it, build the sm_90
# causal-conv1d and mamba-ssm wheels here (scripts/offline-gpu/build_mamba_wheels.sh, on the CPU, into
# .whl-mamba/); then a first call carrying [".whl-mamba"] runs install_mamba.sh, and the next call, right after
# (the machine goes back after 30 s idle), carrying [".whl"], starts this job. Its naive row (kernels off:
# transformers' PyTorch path) already ran out of memory. machine.txt says whether the kernels imported; if not,
# the rows say unsupported again and nothing else is lost.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h100x1 h100-80gb 1 ${BUDGET_S:-900} ${HARD_S:-1380} --models mamba-2.8b \
  --preset smart -p timeout_s 480 -p retry '[unsupported, timeout]'
