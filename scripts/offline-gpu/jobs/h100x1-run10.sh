# Run 10 on nvidia-h100-x1, right after h100x1-smart-final.sh settled ConvNeXt-XL on the same warm machine:
# Pythia-6.9B's smart search again. Its only started configuration (free-lunch + ZeRO-1 + offload, run 6)
# ended with exit status 1 and a log with nothing after the launch line; retried here (`retry [error]`) with a
# 480 s limit, and the rest of the search goes on as far as the budget reaches.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh h100x1 h100-80gb 1 ${BUDGET_S:-1000} ${HARD_S:-1480} \
  --models pythia-6.9b --preset smart -p timeout_s 480 -p retry '[error]'
