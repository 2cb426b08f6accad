# GPU plan: one H100; a validation of FSDP shard-grad-op + offload at the current engine revision, GPT-2's profile
# and two variants of it (issue 36), the exhaustive search of Pythia-2.8B, the rows no validation spoke for and the
# memory wall's rows (issue 37), in that order of priority
export ACADEMIC_BENCH_GIT_COMMIT=619acc6743b83f038c7cd5aa9a632dca596c50b7
nvidia-smi --query-gpu=name --format=csv,noheader
PARTS=bench TIMEOUT_S=420 BENCH="--model pythia-160m --methods free-lunch+fsdp_shard_grad_op+offload --micro-batch 32 --validate 3" bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
PARTS="profile bench" TIMEOUT_S=420 PROFILE="--model notebooks/runs/h100x1/evidence/decoders/gpt2/config.json --tokens 3e11 --seq-len 1024 --global-batch 2048 --precision bf16 --out notebooks/runs/h100x1/evidence/decoders/profiles.jsonl" BENCH="--model notebooks/runs/h100x1/evidence/decoders/gpt2-vocab50304/config.json --tokens 3e11 --seq-len 1024 --global-batch 2048 --precision bf16 --methods free-lunch --out notebooks/runs/h100x1/evidence/decoders/results.jsonl;--model notebooks/runs/h100x1/evidence/decoders/gpt2-no-dropout/config.json --tokens 3e11 --seq-len 1024 --global-batch 2048 --precision bf16 --methods free-lunch --out notebooks/runs/h100x1/evidence/decoders/results.jsonl" bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
PARTS=exhaustive BUDGET2_S=1500 HARD2_S=1950 TIMEOUT_S=420 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1 pythia-2.8b
PARTS=remeasure REMEASURE=unvalidated REMEASURE_MODELS=pythia-160m,pythia-1b BUDGET3_S=900 HARD3_S=1300 TIMEOUT_S=360 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
PARTS=remeasure REMEASURE=unvalidated REMEASURE_MODELS=roberta-large,vit-large,convnext-xlarge BUDGET3_S=500 HARD3_S=900 TIMEOUT_S=360 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
PARTS=remeasure REMEASURE=memory-wall REMEASURE_MODELS=roberta-large,vit-large BUDGET3_S=600 HARD3_S=1000 TIMEOUT_S=360 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1
