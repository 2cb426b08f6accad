# GPU plan: whichever one-GPU machine came; issue 38's missing rows first, then issue 37's re-measure
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then S=h200x1 G=h200; else S=h100x1 G=h100-80gb; fi
J="bash scripts/offline-gpu/job.sh $S $G 1"
M=notebooks/runs/h100x1/evidence/decoders/llama-3.2-1b/config.json O=notebooks/runs/$S/evidence/decoders
mkdir -p $O
PARTS=bench TIMEOUT_S=420 BENCH="--model pythia-1b --methods free-lunch+fp8-tensorwise;--model pythia-160m --methods free-lunch+fp8-tensorwise --validate 3;--model pythia-2.8b --methods free-lunch+fp8-tensorwise;--model pythia-2.8b --methods free-lunch+fused-ce" $J
if [ $S = h200x1 ]; then
PARTS=bench TIMEOUT_S=480 BENCH="--model pythia-6.9b --methods free-lunch+fused-ce+fp8-tensorwise;--model pythia-1b --methods free-lunch+bf16w+fused-ce+fp8-rowwise --validate 3" $J
fi
PARTS=remeasure TIMEOUT_S=420 BUDGET3_S=500 HARD3_S=900 REMEASURE_MODELS=pythia-160m,pythia-410m,pythia-1b,pythia-2.8b $J
PARTS=bench TIMEOUT_S=420 BENCH="--model pythia-1b --methods free-lunch+fp8-rowwise;--model pythia-2.8b --methods free-lunch+fp8-rowwise;--model $M --tokens 3e11 --seq-len 2048 --out $O/results.jsonl --methods free-lunch+fused-ce;--model $M --tokens 3e11 --seq-len 2048 --out $O/results.jsonl --methods free-lunch+fp8-tensorwise" $J
