# Run 10's second H200 machine (one chip, about 25 minutes held): what h200x1's smart
# search lacks for ConvNeXt-XL (free-lunch + ckpt next; on one H100 it needed more than 300 s and, once measured,
# settled the rest) and Pythia-2.8B (two offloading configurations timed out at 150 s in run 4: retried with
# 480 s). Breadth first, to one deadline; rows not started stay `not run` (jobs/h200x1-smart-rest.sh).
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
DEADLINE=$(( $(date +%s) + ${JOB_S:-1380} ))
left() { echo $(( DEADLINE - $(date +%s) )); }
TIMEOUT=480
budget=$(( $(left) - TIMEOUT ))
bash scripts/offline-gpu/notebook.sh h200x1 h200 1 $budget $(( budget + TIMEOUT )) --models convnext-xlarge pythia-2.8b \
  --preset smart -p timeout_s $TIMEOUT -p retry '[timeout]'
