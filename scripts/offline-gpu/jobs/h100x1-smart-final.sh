# For a later session on nvidia-h100-x1 (about 28 minutes held): what h100x1's smart search still lacks after
# session 6 -- Pythia-6.9B (its first offload configuration was killed by the host's out-of-memory killer; the
# host-memory rule now skips offloading that this 128 GiB machine cannot hold) and ConvNeXt-XL's checkpointed
# configurations (timed out at 300 s in session 5; its free-lunch row alone took about 250 s). Timeouts are
# retried with a 480 s limit. (Mamba needs mamba-ssm, which the GPU image lacks: its rows say unsupported.)
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h100x1 h100-80gb 1 ${BUDGET_S:-1000} ${HARD_S:-1500} \
  --models pythia-6.9b convnext-xlarge --preset smart -p timeout_s 480 -p retry '[timeout]'
