# h100x1, one background job on one H100, in this order:
#  1. The forked-worker launcher's A/B for Pythia-160M: engine/plan-forked-ab.sh with MODELS=pythia-160m (its
#     expectations in its header: about 290 s with the launcher, 320 s without).
#  2. Mamba-2.8B's three rows that older engine revisions left, measured again at the current engine
#     (`remeasure`): predicted-stop selects ZeRO-2 + offload and FSDP shard-grad-op + offload (their micro-batch
#     searches stopped on the memory model's prediction; the second was also timed near the memory wall),
#     unvalidated selects free-lunch + ckpt (engine revision 1, whose checkpointing was never validated here).
#     They need the mamba-ssm kernels that scripts/offline-gpu/install_mamba.sh puts in /tmp/site-mamba first.
#  3. ViT-large's FSDP shard-grad-op + offload validation, which a notebook's time budget never started, at the
#     micro-batch its search found (256).
# Expected before it runs: 2: each about as long as its earlier row (184, 206 and 146 s of duration), each step
# within the machine spread of the earlier one (54.3, 56.7, 55.0 s), each micro-batch search now ending at a
# measured out-of-memory or the per-GPU batch; 3: about 112 s, within 3% of the step (10.17 s), as this class's
# validations on Pythia at revision 6 were.
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/complete/plan-5.sh
set -u
MODELS=pythia-160m bash notebooks/runs/h100x1/evidence/engine/plan-forked-ab.sh
cp $MACHINE_TXT notebooks/runs/h100x1/evidence/complete/machine-5.txt
for sel in predicted-stop unvalidated; do
  PARTS=remeasure REMEASURE=$sel REMEASURE_MODELS=mamba-2.8b TIMEOUT_S=420 BUDGET3_S=900 HARD3_S=1400 \
    bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
done
PARTS=bench TIMEOUT_S=300 BENCH="--model vit-large --methods free-lunch+fsdp_shard_grad_op+offload --micro-batch 256 --validate 3" \
  bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
