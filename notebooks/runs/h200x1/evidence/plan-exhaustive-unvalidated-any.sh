# GPU plan: whichever one-GPU machine came
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then exec bash notebooks/runs/h200x1/evidence/plan-exhaustive-unvalidated.sh; fi
exec bash notebooks/runs/h200x1/evidence/plan-exhaustive-unvalidated-h100.sh
