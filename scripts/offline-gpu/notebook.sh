# usage: bash scripts/offline-gpu/notebook.sh SETUP GPU NGPUS BUDGET_S HARD_S [extra notebook args...]
# The benchmark notebook for one setup, stopped at HARD_S (SIGINT: the sweep writes no half row) so that the
# caller always gets to pack the results; BUDGET_S is the notebook's own time budget, a little shorter.
SETUP=$1 GPU=$2 N=$3 BUDGET=$4 HARD=$5; shift 5
timeout --signal=INT $HARD python3 -m academic_bench notebook --setup $SETUP --gpu $GPU --gpus $N \
  -p time_budget_s $BUDGET "$@"
echo "notebook rc=$?"
