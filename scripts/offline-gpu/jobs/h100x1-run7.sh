# Run 7 on nvidia-h100-x1 (about 20 minutes held), after install_mamba.sh in the call before: what h100x1
# still lacks, most important first. (1) Pythia-6.9B: the host-memory rule should skip every offload
# configuration on this 128 GiB host and the GPU memory rule the rest, in seconds, so its rows say why it cannot
# train on one H100 with our methods. (2) Mamba-2.8B's smart search with its kernels (never run on a GPU yet).
# (3) Pythia-2.8B's checkpointed row that ran out of memory only when timed is measured again (stale on resume).
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h100x1 h100-80gb 1 60 300 --models pythia-6.9b --preset smart -p timeout_s 240
bash scripts/offline-gpu/notebook.sh h100x1 h100-80gb 1 ${MAMBA_BUDGET_S:-480} ${MAMBA_HARD_S:-780} \
  --models mamba-2.8b --preset smart -p timeout_s 300 -p retry '[unsupported, timeout]'
bash scripts/offline-gpu/notebook.sh h100x1 h100-80gb 1 120 420 --models pythia-2.8b --preset smart -p timeout_s 300
