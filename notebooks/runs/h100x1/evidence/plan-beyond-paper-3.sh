# GPU plan: one H100; issue 38's H100 rows (FP8 alone, the large-vocabulary decoder), then issue 37's re-measure and hard-model exhaustive search
export ACADEMIC_BENCH_GIT_COMMIT=d28c0a7fd2fe7b4f859869d212271894253432dd
J="bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1"
M=notebooks/runs/h100x1/evidence/decoders/llama-3.2-1b/config.json O=notebooks/runs/h100x1/evidence/decoders
D="--model $M --tokens 3e11 --seq-len 2048 --out $O/results.jsonl"
PARTS=bench TIMEOUT_S=420 BENCH="--model pythia-1b --methods free-lunch+fp8-tensorwise;--model pythia-160m --methods free-lunch+fp8-tensorwise --validate 3;--model pythia-2.8b --methods free-lunch+fp8-tensorwise;$D --methods free-lunch;$D --methods free-lunch+fused-ce;$D --methods free-lunch+fp8-tensorwise;--model pythia-1b --methods free-lunch+fp8-rowwise;--model pythia-160m --methods free-lunch+fp8-rowwise --validate 3;--model pythia-2.8b --methods free-lunch+fused-ce;--model pythia-2.8b --methods free-lunch+fp8-rowwise" $J
PARTS="remeasure exhaustive" REMEASURE_MODELS=pythia-160m,pythia-2.8b BUDGET3_S=400 HARD3_S=500 BUDGET2_S=1200 HARD2_S=1500 TIMEOUT_S=480 $J pythia-2.8b
