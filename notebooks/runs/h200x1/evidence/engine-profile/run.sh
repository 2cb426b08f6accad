python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 NCCL_NVLS_ENABLE=0 ACADEMIC_BENCH_NO_NVLS=1
export ACADEMIC_BENCH_COMPILE_CACHE=/tmp/cc
for n in zero1 fl; do
  s=$SECONDS
  timeout 260 python3 -X importtime -m cProfile -o $OUT/prof-$n.out -m academic_bench.measure.worker --request notebooks/runs/h200x1/evidence/engine-profile/req-$n.json --result $OUT/res-$n.json 2> $OUT/err-$n.log
  echo "$n rc=$? wall=$((SECONDS-s))"
done
grep -v "^import time" $OUT/err-zero1.log | grep -iv warn | tail -5
