# h100x1, one background job on one H100: ViT-L/16 and ConvNeXt-XL in bf16 (`--precision bf16`: configurations of
# their own, vit-large@bf16 and convnext-xlarge@bf16, beside the recipe's fp32 rows, which keep their ids), naive
# then free-lunch, each searched and timed by `bench` with 3 sustained steps, into this folder's results.jsonl: the
# rows the published check carries to timm's fp16-autocast points (academic_bench/predict/published_vision.py),
# never one of the setup's answers. Naive first: the published runs ran eagerly (PyTorch 1.12), and the check
# prefers that row.
# Expected step of each, from the estimate module at its planning MFU (estimate.DEFAULT_MFU = 0.4: an assumption,
# not a measurement):
#   PYTHONPATH=$PWD python3 -c "from academic_bench.catalog.models import get_model; from academic_bench.estimate \
#     import analytic_days; [print(m, round(analytic_days(m, 'h100-80gb', 1) * 86400 / get_model(m).recipe.steps, 2)) \
#     for m in ('vit-large@bf16', 'convnext-xlarge@bf16')]"
#   vit-large@bf16 3.82 s, convnext-xlarge@bf16 3.78 s (`academic-bench estimate --model vit-large --precision bf16
#   --gpu h100-80gb --gpus 1`: micro-batch 256 predicted to fit, for both models and both methods).
# Each bench runs about six such steps (three sustained; the warm-up and timed phases about as many again), about
# 4 x 6 x 3.8 s = 1.5 minutes of steps in all, beside each bench's start, micro-batch search and free-lunch's compile,
# which the study does not estimate. The fp32 rows of the same four configurations took at most 162, 128, 82 and
# 248 s in all, with steps 2.5 to 16 times as long:
#   python3 -c "import json; [print(r['config']['model'], r['config_id'], round(r['step_time_s'], 1), r['duration_s']) \
#     for r in map(json.loads, open('notebooks/runs/h100x1/results.jsonl')) if r['outcome'] == 'ok' and r['config_id'] \
#     in ('822997becb952854', 'b9e2af203856c435', '368d124a560b637f', 'd2c8a02f915c53d7')]"
# so about 6 minutes in all are expected, under 8; TIMEOUT_S=300 bounds each bench.
#   ACADEMIC_BENCH_GIT_COMMIT=<the commit, as printed here by git rev-parse HEAD> MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/vision16/plan.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
V=notebooks/runs/h100x1/evidence/vision16
cp $MACHINE_TXT $V/machine.txt
each="--precision bf16 --validate 3 --out $V/results.jsonl"
PARTS=bench TIMEOUT_S=300 BENCH="--model vit-large --methods naive $each;--model convnext-xlarge --methods naive $each;\
--model vit-large --methods free-lunch $each;--model convnext-xlarge --methods free-lunch $each" \
  bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
