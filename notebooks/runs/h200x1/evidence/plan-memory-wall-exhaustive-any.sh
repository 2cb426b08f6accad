# GPU plan: whichever one-GPU machine came
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then exec bash .whl/plan-s46-h200.sh; fi
exec bash .whl/plan-s46-h100.sh
