# Run 2 on nvidia-h200-x2: every parallel method once on two GPUs (evidence), then the naive search for
# the nine models, with one validation. Started by start_background.sh; results under notebooks/runs/h200x2.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
EV=notebooks/runs/h200x2/evidence/methods-2gpu
mkdir -p $EV
# A fixed micro-batch skips the search: these rows show that each method runs on two GPUs, nothing more.
for m in naive free-lunch free-lunch+zero1 free-lunch+zero2 free-lunch+zero3 free-lunch+fsdp_shard_grad_op \
         free-lunch+fsdp_full_shard; do
  timeout 200 python3 -m academic_bench bench --model pythia-410m --gpu h200 --gpus 2 --methods $m \
    --micro-batch 8 --out $EV/results.jsonl --setup h200x2 --timeout 170
  echo "bench $m rc=$?"
done
timeout --signal=INT 560 python3 -m academic_bench notebook --setup h200x2 --gpu h200 --gpus 2 --preset naive \
  -p time_budget_s 440 -p timeout_s 200 -p validate_models '[pythia-160m]' -p validate_steps 3
echo "notebook rc=$?"
