# For a later session on nvidia-h100-x1: the rest of Mamba-2.8B's smart search with its kernels (session 7
# measured free-lunch and free-lunch + ckpt before its machine was lost). Before it, a first call carrying
# [".whl-mamba"] runs install_mamba.sh (the wheels from build_mamba_wheels.sh), and the next call, right after
# (the machine goes back after 30 s idle), carrying [".whl"], starts this job. machine.txt says whether the
# kernels imported; if not, the rows say unsupported and nothing else is lost.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h100x1 h100-80gb 1 ${BUDGET_S:-900} ${HARD_S:-1380} --models mamba-2.8b \
  --preset smart -p timeout_s 480 -p retry '[unsupported, timeout]'
