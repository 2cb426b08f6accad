# For a later session on nvidia-h100-x1 (about 28 minutes held): what h100x1's smart search still lacks after
# session 6 -- Pythia-6.9B (its first offload configuration was killed by the host's out-of-memory killer; the
# host-memory rule now skips offloading that this 128 GiB machine cannot hold) and ConvNeXt-XL's checkpointed
# configurations (timed out at 300 s in session 5; its free-lunch row alone took about 250 s). Timeouts are
# retried with a 480 s limit. Pythia-2.8B's checkpointed row ran out of memory only when timed, before the timed
# run fell back to half the size: resumed, it is measured again (a few minutes). Mamba: h100x1-mamba.sh.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h100x1 h100-80gb 1 ${BUDGET_S:-1000} ${HARD_S:-1500} \
  --models pythia-6.9b pythia-2.8b convnext-xlarge --preset smart -p timeout_s 480 -p retry '[timeout]'
