# h100x1 towards complete at the current engine, in the order that matters when the machine's time runs out:
#  1. GPT-2-medium and GPT-2-large with free-lunch, micro-batch searched, into ../decoders/results.jsonl, against
#     the estimates committed for them before (../decoders/gpt2-medium/estimate.json, gpt2-large/estimate.json).
#  2. Pythia-1B free-lunch against free-lunch + FP8 tensorwise at micro-batch 16 on one machine, in turn, twice
#     (../fp8-ab/1/, ../fp8-ab/2/): the same-machine check of the shipped comparison, whose rows ran on different
#     machines. Expected before it runs: in each pair the FP8 tensorwise step 3-8% shorter than free-lunch's (the
#     shipped rows, ../../results.jsonl: FP8 tensorwise at 16 against the free-lunch rows at 16, by other
#     machines), the two pairs agreeing within 1%.
#  3. Pythia-410M's smart search: its six configurations that a time budget never started.
#  4. The rows no validation of their engine revision speaks for (Pythia-160M and Pythia-1B), each measured again
#     under its own search.
#  5. The memory wall's RoBERTa-large and ViT-L rows, measured again.
#   ACADEMIC_BENCH_GIT_COMMIT=REV MACHINE_TXT=/tmp/machine.txt \
#     bash scripts/offline-gpu/start_background.sh notebooks/runs/h100x1/evidence/complete/plan-1.sh
set -u
E=notebooks/runs/h100x1/evidence
D=$E/decoders
mkdir -p $E/fp8-ab/1 $E/fp8-ab/2 $E/complete
gpt2="--tokens 3e11 --seq-len 1024 --global-batch 2048 --precision bf16 --methods free-lunch --out $D/results.jsonl"
ab="--model pythia-1b --micro-batch 16"
export BENCH="--model $D/gpt2-medium/config.json $gpt2;--model $D/gpt2-large/config.json $gpt2;\
$ab --methods free-lunch --out $E/fp8-ab/1/results.jsonl;$ab --methods free-lunch+fp8-tensorwise --out $E/fp8-ab/1/results.jsonl;\
$ab --methods free-lunch --out $E/fp8-ab/2/results.jsonl;$ab --methods free-lunch+fp8-tensorwise --out $E/fp8-ab/2/results.jsonl"
PARTS="bench search remeasure" MODELS=pythia-410m PRESETS=smart BUDGET1_S=420 HARD1_S=800 \
  REMEASURE=unvalidated REMEASURE_MODELS=pythia-160m,pythia-1b BUDGET3_S=480 HARD3_S=900 TIMEOUT_S=360 \
  bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
cp $MACHINE_TXT $E/complete/machine-1.txt
PARTS=remeasure REMEASURE=memory-wall REMEASURE_MODELS=roberta-large,vit-large BUDGET3_S=480 HARD3_S=900 TIMEOUT_S=360 \
  bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
