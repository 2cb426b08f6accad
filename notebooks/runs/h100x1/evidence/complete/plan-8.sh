# h100x1, one background job on one H100: what plan-7.sh left.
#  1. Its profile of the first DeepSpeed offload build stopped at DeepSpeed's check that LOCAL_RANK is set (the script
#     now sets it for its one process); run again, expected as plan-7.sh says.
#  2. ViT-large naive's validation (822997becb952854): plan-7.sh's search part found the configuration already in
#     results.jsonl and ran nothing, so it runs here by `bench` at the naive search's micro-batch (128) with 3
#     sustained steps; expected about 150 s, within 3% of the naive step (34.1 to 34.3 s).
#   ACADEMIC_BENCH_GIT_COMMIT=<the commit, as printed here by git rev-parse HEAD> MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/complete/plan-8.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
cp $MACHINE_TXT notebooks/runs/h100x1/evidence/complete/machine-8.txt
P=notebooks/runs/h100x1/evidence/engine/build-profile
mkdir -p $P
timeout 300 python3 scripts/offline-gpu/profile_build.py pythia-1b free-lunch+zero1+offload 16 $P/zero1-offload \
  2>&1 | grep -v -i warn | tail -20 > $P/walls.txt
echo "profile rc=${PIPESTATUS[0]}"
PARTS=bench TIMEOUT_S=420 BENCH="--model vit-large --methods naive --micro-batch 128 --validate 3" \
  bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
