# For a later run on nvidia-h100-x1 (about 20 minutes held): what h100x1's smart search still lacks after
# run 9 -- ConvNeXt-XL's configurations beyond free-lunch and free-lunch + ckpt (two timed out at 300 s in
# run 5 and are retried with a 480 s limit; the rest are `not run`). Everything else on h100x1 is settled.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h100x1 h100-80gb 1 ${BUDGET_S:-700} ${HARD_S:-1180} \
  --models convnext-xlarge --preset smart -p timeout_s 480 -p retry '[timeout]'
