# GPU plan: one H200; issue 38's H200 rows (the large-vocabulary decoder, FP8 at 160M), then issue 37's re-measure and hard-model exhaustive search
export ACADEMIC_BENCH_GIT_COMMIT=acd6a75b3d87c69782102880882c758793ed8902
J="bash scripts/offline-gpu/job.sh h200x1 h200 1"
M=notebooks/runs/h100x1/evidence/decoders/llama-3.2-1b/config.json O=notebooks/runs/h200x1/evidence/decoders
D="--model $M --tokens 3e11 --seq-len 2048 --out $O/results.jsonl"
PARTS=bench TIMEOUT_S=420 BENCH="$D --methods free-lunch;$D --methods free-lunch+fused-ce;$D --methods free-lunch+fp8-tensorwise;--model pythia-160m --methods free-lunch+fp8-tensorwise;--model pythia-160m --methods free-lunch+fp8-rowwise --validate 3" $J
PARTS="remeasure exhaustive" BUDGET3_S=700 HARD3_S=800 BUDGET2_S=1200 HARD2_S=1500 TIMEOUT_S=480 $J pythia-2.8b
