# h100x1, one job in order of priority: plan.sh's mixtures of experts (free-lunch of all three first, then naive
# of the two small ones), the three decoder shapes the work model may mis-charge (../decoders/README.md, "Shapes
# the work model mis-charges", estimates committed there), the H100 GEMM sweeps by triton.testing
# (../complete/plan-gemm.sh), and last naive OLMoE-1B-7B with ZeRO-1 and offload (the per-expert loop of 64
# experts at 256 accumulation steps: the slowest run of the list).
# Expected before it runs: as plan.sh, ../decoders/*/estimate.json and plan-gemm.sh state.
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/moe/plan-2.sh
set -u
M=notebooks/runs/h100x1/evidence/moe
D=notebooks/runs/h100x1/evidence/decoders
run="--tokens 3e11 --seq-len 2048 --precision bf16 --validate 3 --out $M/results.jsonl"
dec="--tokens 3e11 --methods free-lunch --out $D/results.jsonl"
export BENCH="--model $M/moe-small-olmoe/config.json $run --methods free-lunch;\
--model $M/moe-small-qwen2/config.json $run --methods free-lunch;\
--model $M/olmoe-1b-7b/config.json $run --methods free-lunch+zero1+offload;\
--model $M/moe-small-olmoe/config.json $run --methods naive;\
--model $M/moe-small-qwen2/config.json $run --methods naive;\
--model $D/llama-3.2-1b-seq8192/config.json $dec --seq-len 8192 --global-batch 256;\
--model $D/qwen2.5-1.5b-seq8192/config.json $dec --seq-len 8192 --global-batch 256;\
--model $D/llama-3.2-1b-untied/config.json $dec --seq-len 2048"
PARTS=bench TIMEOUT_S=600 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
cp $MACHINE_TXT $M/machine.txt
bash notebooks/runs/h100x1/evidence/complete/plan-gemm.sh
export BENCH="--model $M/olmoe-1b-7b/config.json $run --methods naive+zero1+offload"
PARTS=bench TIMEOUT_S=900 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
