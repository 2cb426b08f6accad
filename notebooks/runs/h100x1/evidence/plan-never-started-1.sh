# GPU plan: one H100; issue 38's last cell (Pythia-6.9B FP8 rowwise), then the search's configurations a time
# budget never started (issue 37; Mamba left out: no kernels on this machine)
export ACADEMIC_BENCH_GIT_COMMIT=541c2a04267e9216635c2d247fca6fff64f414f1
J="bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1"
PARTS=bench TIMEOUT_S=420 BENCH="--model pythia-6.9b --methods free-lunch+fp8-rowwise" $J
PARTS=search MODELS="pythia-410m roberta-large vit-large convnext-xlarge pythia-1b pythia-2.8b pythia-6.9b" BUDGET1_S=1000 HARD1_S=1400 TIMEOUT_S=400 $J
