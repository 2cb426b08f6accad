# usage: bash scripts/offline-gpu/run_setup.sh SETUP GPU NGPUS BUDGET_S HARD_LIMIT_S [extra notebook args...]
set -u
source scripts/offline-gpu/gpu_prelude.sh
bash scripts/offline-gpu/notebook.sh "$@" > $OUT/notebook.log 2>&1
tail -1 $OUT/notebook.log
tar czf $OUT/run.tgz -C notebooks/runs $1
tr '\r' '\n' < $OUT/notebook.log | grep -v -i warn | grep -E "best|ran \(|==" | tail -30
