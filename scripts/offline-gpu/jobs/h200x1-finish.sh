# One H200, after the re-measurement's search: the validations of ZeRO-2 and ZeRO-3 + offload (Pythia-160M at
# micro-batch 64, its exhaustive search's size) first, then the exhaustive part again (Pythia-1B's ZeRO
# combinations, then Pythia-6.9B's, the pair and the rest of the validation net) within BUDGET2_S.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
RUN=$PWD/notebooks/runs/h200x1
for spec in free-lunch+zero3+offload free-lunch+zero2+offload; do
  timeout 700 python3 -m academic_bench bench --model pythia-160m --methods $spec --micro-batch 64 --gpu h200 \
    --gpus 1 --timeout 600 --validate 3 --out $RUN/results.jsonl; echo "bench rc=$?"
done
PARTS=exhaustive bash scripts/offline-gpu/jobs/remeasure.sh h200x1 h200 1 pythia-6.9b
