# After plan-1.sh on the same machine, building on its results (copied into the tree before the start):
#  1. the memory-bound kernels' rate (add, GELU, layer norm, softmax, cast) on this H100 into
#     ../gemm/gemm-memory.jsonl, so that the transfer model's memory ratio rests on both GPUs' sweeps (the H200's is
#     ../../../h200x1/evidence/gemm/gemm-memory.jsonl). Expected: the H100/H200 rate ratio of the large kernels near
#     the ratio of their datasheet bandwidths (3.35 / 4.8 TB/s, about 0.70).
#  2. ViT-L's smart search: its configurations that a time budget never started get a row (measured, or skipped by
#     a rule with the rule named).
#  3. Pythia-160M's whole exhaustive search as ../engine/plan-exhaustive.sh states it, with its expected figures
#     there (about 410 s, a median about 32 s a configuration).
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/complete/plan-2.sh
set -u
PARTS="gemm search" GEMM=memory MODELS=vit-large PRESETS=smart BUDGET1_S=300 HARD1_S=700 TIMEOUT_S=360 \
  bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
E=notebooks/runs/h100x1/evidence/engine
cp $MACHINE_TXT notebooks/runs/h100x1/evidence/complete/machine-2.txt
s=$SECONDS
python3 -m academic_bench sweep --model pythia-160m --gpu h100-80gb --gpus 1 --preset exhaustive --setup h100x1 \
  --timeout 420 --no-progress --out $E/results-one-launch.exhaustive.jsonl > $E/sweep-pythia-160m-exhaustive.log 2>&1
echo "pythia-160m exhaustive rc=$? wall_s=$((SECONDS - s))" | tee -a $E/walls-exhaustive.txt
