# h100x1, one background job on one H100: kernel profiles of the two 16-bit rows the published check carries to
# timm's RTX 3090 points (ViT-L/16 and ConvNeXt-XL in bf16, naive, at their measured micro-batch 256), into this
# folder's profiles.jsonl, which predict.published_vision.vision_profiles reads beside the setups' own.
# Without them the transfer model splits each row's step as the median of h100x1's profiles (`split_basis`
# "setup"), most of them decoders'; the published check then predicts the RTX 3090 far slower than timm measured:
#   PYTHONPATH=$PWD python3 -c "from academic_bench.answer.published_check import published_check; \
#     f = published_check(); print(f[f.family.isin(['vit', 'convnext'])][['model', 'ratio', 'by']])"
# gives published/predicted 1.61 (ViT-L/16), 1.56 (DeiT III-L) and 1.50 (ConvNeXt-XL) with the setup's split.
# Expected before it runs: each profile's matrix-product share (matrix multiplication, attention, convolution)
# below the setup median's 0.67 (an eager 16-bit step spends more of itself on memory-bound kernels), and with
# them the three ratios nearer 1, each within 0.75-1.33. About 3 minutes (two profiles, no search, no compile).
#   ACADEMIC_BENCH_GIT_COMMIT=<the commit, as printed here by git rev-parse HEAD> MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/vision16/plan-4.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
V=notebooks/runs/h100x1/evidence/vision16
cp $MACHINE_TXT $V/machine-4.txt
each="--precision bf16 --methods naive --micro-batch 256 --out $V/profiles.jsonl"
PARTS=profile TIMEOUT_S=300 PROFILE="--model vit-large $each;--model convnext-xlarge $each" \
  bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
