# For a later session on nvidia-h100-x1 (about 20 minutes held): what h100x1's smart search still lacks after
# session 7 -- Pythia-2.8B's checkpointed row (it ran out of memory only when timed, in NCCL's first collective;
# resumed, it is measured again) and ConvNeXt-XL's checkpointed configurations (timed out at 300 s in session 5;
# its free-lunch row alone took about 250 s). Timeouts are retried with a 480 s limit. Pythia-6.9B is complete
# (session 7: every configuration skipped by the GPU or host memory rules). Mamba: h100x1-mamba.sh.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h100x1 h100-80gb 1 ${BUDGET_S:-700} ${HARD_S:-1180} \
  --models pythia-2.8b convnext-xlarge --preset smart -p timeout_s 480 -p retry '[timeout]'
