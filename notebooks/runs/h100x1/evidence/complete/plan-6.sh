# h100x1, one background job on one H100: what complete/plan-5.sh left unstarted or unwritten when its machine
# stopped (its A/B part is done and the launcher it compared is gone, so it is not repeated):
#  1. Mamba-2.8B's two rows from older engine revisions, measured again (`remeasure`): predicted-stop now selects
#     FSDP shard-grad-op + offload alone (ZeRO-2 + offload was measured again by plan-5.sh), unvalidated selects
#     free-lunch + ckpt (engine revision 1, whose checkpointing was never validated here). They need the mamba-ssm
#     kernels in /tmp/site-mamba: two calls before this one, the first carrying
#     [".whl-mamba/causal_conv1d-1.7.0-cp312-cp312-linux_x86_64.whl", ".whl-mamba/einops-0.8.2-py3-none-any.whl"]
#     and running `python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target
#     /tmp/site-mamba .whl-mamba/*.whl`, the second carrying [".whl-mamba/mamba_ssm-2.3.2.post1-cp312-cp312-linux_x86_64.whl"]
#     and running `bash scripts/offline-gpu/install_mamba.sh` (the wheels and the tree together exceed one call's carry).
#  2. ViT-large's FSDP shard-grad-op + offload validation at the micro-batch its search found (256).
# Expected before it runs: 1: each about as long as its earlier row (206 and 146 s of duration), each step within the
# machine spread of the earlier one (56.7 and 55.0 s); the shard-grad-op search as plan-5.sh's log of it showed
# (micro-batch 8 out of memory, 4 fits); 2: about 112 s, within 3% of the step (10.17 s).
#   ACADEMIC_BENCH_GIT_COMMIT=<the commit, as printed here by git rev-parse HEAD> MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/complete/plan-6.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
cp $MACHINE_TXT notebooks/runs/h100x1/evidence/complete/machine-6.txt
for sel in predicted-stop unvalidated; do
  PARTS=remeasure REMEASURE=$sel REMEASURE_MODELS=mamba-2.8b TIMEOUT_S=420 BUDGET3_S=900 HARD3_S=1400 \
    bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
done
PARTS=bench TIMEOUT_S=300 BENCH="--model vit-large --methods free-lunch+fsdp_shard_grad_op+offload --micro-batch 256 --validate 3" \
  bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
