# h100x1, one job on one H100: RoBERTa-large's free-lunch step (no sharding, no offload) at fixed micro-batches of
# 4, 8, 16 and 32 sequences (its search found 64), into encoders/results-microbatch.jsonl, to check what the transfer
# model charges a small micro-batch: the published BERT-large points at small batches (DeepLearningExamples' V100
# 16G rows, Lambda's RTX 2080 Ti at batch 4) run slower than the carried step predicts, and the carried step charges
# a small micro-batch only the GPU's idle time per micro-step (predict.published_family.carried_encoder).
# Expected before it runs, each the transfer model's step for RoBERTa-large on 1 x h100-80gb at that micro-batch
# from h100x1's measured micro-batch 64 (34.48 s): printed by
#   .venv/bin/python -c "from academic_bench.predict.published_family import carried_encoder as c;
#     from academic_bench.estimate import flops_per_sample as f;
#     [print(m, c('h100-80gb', 1, f('roberta-large'), micro_batch=m).carried.step_time_s) for m in (4, 8, 16, 32)]"
#  micro-batch 4: 45.1 s (42.1 to 48.7); 8: 39.5 s (37.6 to 41.6); 16: 36.6 s (35.3 to 38.1); 32: 35.2 s (34.2 to 36.3).
# A measured step above the high end at 4 or 8 would say the carried step undercharges small micro-batches.
#   ACADEMIC_BENCH_GIT_COMMIT=<the commit, as printed here by git rev-parse HEAD> MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/encoders/plan-microbatch.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h100x1/evidence/encoders
cp $MACHINE_TXT $E/machine-microbatch.txt
for m in 4 8 16 32; do
  timeout 500 python3 -m academic_bench bench --gpu h100-80gb --gpus 1 --setup h100x1 --timeout 420 \
    --model roberta-large --methods free-lunch --micro-batch $m --out $E/results-microbatch.jsonl
  echo "bench micro-batch $m rc=$?"
done
