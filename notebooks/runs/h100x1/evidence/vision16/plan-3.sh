# h100x1, one background job on one H100: plan.sh's four configurations again (ViT-L/16 and ConvNeXt-XL in bf16,
# naive then free-lunch, each searched and timed by `bench` with 3 sustained steps, into this folder's
# results.jsonl), now that the sustained run feeds images as uint8 normalised on the GPU
# (academic_bench/measure/data.py; each new validation row says so in `validate.images`). plan.sh's rows, fed fp32
# images, missed their validations by 4 to 11%; the probe (plan-2.sh, data-path/) traced that to the fp32 image
# stream, and its uint8 arm agreed with the extrapolation within 1.1%.
# Expected before it runs:
#  - each of the four validations within 3% (`validate.rel_error`), as the probe's uint8 arm was;
#  - each step as plan.sh's row of the same configuration (the timed phases did not change), printed by
#      python3 -c "import json; [print(r['config_id'], r['micro_batch'], round(r['step_time_s'], 2), r['duration_s']) \
#        for r in map(json.loads, open('notebooks/runs/h100x1/evidence/vision16/results.jsonl'))]"
#    at the same micro-batch, within 3%; about 5 minutes in all, as
#    those rows' `duration_s` add up to. TIMEOUT_S=300 bounds each bench.
#   ACADEMIC_BENCH_GIT_COMMIT=<the commit, as printed here by git rev-parse HEAD> MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/vision16/plan-3.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
V=notebooks/runs/h100x1/evidence/vision16
cp $MACHINE_TXT $V/machine-3.txt
each="--precision bf16 --validate 3 --out $V/results.jsonl"
PARTS=bench TIMEOUT_S=300 BENCH="--model vit-large --methods naive $each;--model convnext-xlarge --methods naive $each;\
--model vit-large --methods free-lunch $each;--model convnext-xlarge --methods free-lunch $each" \
  bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
