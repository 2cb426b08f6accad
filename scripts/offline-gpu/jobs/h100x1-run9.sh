# Run 9 on nvidia-h100-x1 (one chip, about 27 minutes held), after install_mamba.sh in the call before.
# (1) Where the step time goes (`academic-bench profile`) for the fastest one-GPU configuration of each model that
# shards nothing, Pythia-1B first (the acceptance asks what limits its MFU), and Pythia-1B's naive configuration
# beside it; into notebooks/runs/h100x1/profiles.jsonl. Each profile builds (and compiles) its model first, so
# ConvNeXt-XL, whose compile takes minutes, comes last. (2) With what is left, Mamba-2.8B's smart search resumes.
# Every step takes its time limit from one deadline, so the job ends while the machine is still held.
set -u
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
DEADLINE=$(( $(date +%s) + ${JOB_S:-1500} ))
left() { echo $(( DEADLINE - $(date +%s) )); }
profile() {  # MODEL METHODS LIMIT_S
  local limit=$(( $3 < $(left) ? $3 : $(left) ))
  if (( limit < 60 )); then echo "profile $1 $2 not started: ${limit}s left"; return; fi
  timeout --signal=INT $limit python3 -m academic_bench profile --model $1 --gpu h100-80gb --gpus 1 \
    --methods $2 --out notebooks/runs/h100x1/profiles.jsonl
  echo "profile $1 $2 rc=$? ($(left)s left)"
}
profile pythia-1b best 300
profile pythia-1b naive 180
for model in pythia-160m pythia-410m pythia-2.8b roberta-large vit-large mamba-2.8b; do profile $model best 240; done
profile convnext-xlarge best 420
TIMEOUT=300
budget=$(( $(left) - TIMEOUT ))
if (( budget > 60 )); then
  bash scripts/offline-gpu/notebook.sh h100x1 h100-80gb 1 $budget $(( budget + TIMEOUT )) --models mamba-2.8b \
    --preset smart -p timeout_s $TIMEOUT -p retry '[unsupported, timeout]'
fi
