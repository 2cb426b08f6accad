# GPU plan: whichever one-GPU machine came; on an H200 its plan (issue 38's rows, issue 37's re-measure and
# exhaustive search), on an H100 the hard model's exhaustive search (issue 37)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then exec bash .whl/plan-s43-h200.sh; fi
export ACADEMIC_BENCH_GIT_COMMIT=acd6a75b3d87c69782102880882c758793ed8902
PARTS=exhaustive BUDGET2_S=1300 HARD2_S=1600 TIMEOUT_S=480 bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1 pythia-2.8b
