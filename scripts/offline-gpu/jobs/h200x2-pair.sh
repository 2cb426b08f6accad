# Run 5 on nvidia-h200-x2: the compiled Pythia-1B pair that run 4 lost to a hung
# micro-batch search (its synced free-lunch row timed out; since then the search no longer hangs when the
# ranks disagree at the memory edge). Retry that timeout, then time the unsynced twin at its micro-batch.
# The first real-NCCL test of the out-of-step search (launch._out_of_step).
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h200x2 h200 2 ${BUDGET_S:-240} ${HARD_S:-560} --models pythia-1b \
  --preset naive -p unsynced_models '[pythia-1b]' -p retry '[timeout]' -p timeout_s 300
