# GPU plan: one H200; issue 38's last H200 cells, then issue 37's re-measurement of rows whose search stopped on a
# prediction (Mamba's left out: no kernels on this machine)
export ACADEMIC_BENCH_GIT_COMMIT=a3b2320f11cf57ea3310ef9b5e84125042d84687
J="bash scripts/offline-gpu/job.sh h200x1 h200 1"
PARTS=bench TIMEOUT_S=420 BENCH="--model pythia-160m --methods free-lunch+fused-ce;--model pythia-160m --methods free-lunch+fp8-rowwise;--model pythia-1b --methods free-lunch+bf16w;--model pythia-1b --methods free-lunch+fused-ce;--model pythia-1b --methods free-lunch+bf16w+fused-ce --validate 3;--model pythia-6.9b --methods free-lunch+fp8-tensorwise;--model pythia-6.9b --methods free-lunch+fp8-rowwise" $J
PARTS=remeasure REMEASURE_MODELS=pythia-160m,pythia-1b BUDGET3_S=420 HARD3_S=700 TIMEOUT_S=420 $J
