# usage: bash scratch/run_setup.sh SETUP GPU NGPUS BUDGET_S HARD_LIMIT_S [extra notebook args...]
set -u
source scripts/offline-gpu/gpu_prelude.sh
SETUP=$1 GPU=$2 N=$3 BUDGET=$4 HARD=$5; shift 5
# The hard limit leaves time to pack the results: what is not under $OUT when the call ends is lost.
timeout --signal=INT $HARD python3 -m academic_bench notebook --setup $SETUP --gpu $GPU --gpus $N -p time_budget_s $BUDGET "$@" > $OUT/notebook.log 2>&1
echo "notebook rc=$?"
tar czf $OUT/run.tgz -C notebooks/runs $SETUP
tr '\r' '\n' < $OUT/notebook.log | grep -v -i warn | grep -E "best|ran \(|==" | tail -30
