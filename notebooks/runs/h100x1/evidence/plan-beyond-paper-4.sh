# GPU plan: one H100; issue 38's last H100 cells and the ZeRO-3 + offload class's validation, then the search's
# configurations a time budget never started (issue 37; Mamba left out: no kernels on this machine)
export ACADEMIC_BENCH_GIT_COMMIT=a3b2320f11cf57ea3310ef9b5e84125042d84687
J="bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1"
PARTS=bench TIMEOUT_S=420 BENCH="--model pythia-160m --methods free-lunch+fp8-tensorwise;--model pythia-160m --methods free-lunch+fp8-rowwise;--model pythia-1b --methods free-lunch+bf16w;--model pythia-160m --methods free-lunch+zero3+offload --micro-batch 32 --validate 3;--model pythia-6.9b --methods free-lunch+fused-ce;--model pythia-6.9b --methods free-lunch+fp8-tensorwise;--model pythia-6.9b --methods free-lunch+fp8-rowwise" $J
PARTS=search MODELS="pythia-410m roberta-large vit-large convnext-xlarge pythia-1b pythia-2.8b pythia-6.9b" BUDGET1_S=360 HARD1_S=660 TIMEOUT_S=400 $J
