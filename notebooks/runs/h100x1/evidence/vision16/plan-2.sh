# h100x1, one background job on one H100: why the 16-bit vision rows missed their validations (results.jsonl here:
# every sustained run slower than its timed step, by 4.3% to 10.6%). For ViT-L/16 free-lunch and ConvNeXt-XL naive in
# bf16 at micro-batch 256 (the rows' own), scripts/offline-gpu/data_path_probe.py times in one process, twice: the
# extrapolated step, three real steps fed by micro-batches pinned in advance (as the timed phases are fed), and three
# fed by the engine's DataLoader with 2 worker processes (the engine's) and with 8, and three fed as timm's loader
# feeds them (a DataLoader with 2 workers over uint8 images, a quarter of the bytes, normalised on the GPU). Into
# data-path/.
# Expected before it runs, if the miss is the data path's (each image micro-batch is 256 x 3 x 224 x 224 fp32 values,
# the sustained runs were slower by about the same seconds per micro-step whatever the model and method):
#  - the steps fed pinned micro-batches within 3% of the extrapolated step;
#  - the DataLoader with 2 workers as far off as the rows' validations (ViT-L free-lunch about -10%, ConvNeXt-XL
#    naive about -4%), and with 8 workers nearer;
#  - the uint8 images with 2 workers within 3% of the extrapolated step: the workers collate and the pinning thread
#    copies a quarter of the bytes, and the copy to the GPU moves a quarter of them.
# If the steps fed pinned micro-batches are as far off, the extrapolation is what misses, not the data path.
# Two rounds per model (the extrapolation and four ways of feeding real steps), with the machine's set-up: a background job of several minutes.
#   ACADEMIC_BENCH_GIT_COMMIT=<the commit, as printed here by git rev-parse HEAD> MACHINE_TXT=/tmp/w/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/vision16/plan-2.sh
set -u
source scripts/offline-gpu/gpu_prelude.sh
D=notebooks/runs/h100x1/evidence/vision16/data-path
mkdir -p $D
cp $MACHINE_TXT $D/machine.txt
for spec in "vit-large@bf16 free-lunch" "convnext-xlarge@bf16 naive"; do
  set -- $spec
  s=$SECONDS
  OUT=$D python3 scripts/offline-gpu/data_path_probe.py $1 $2 256 2 2 8 u8:2 > $D/probe-${1%@*}-$2.log 2>&1
  echo "$1 $2 rc=$? wall_s=$((SECONDS - s))" | tee -a $D/walls.txt
done
