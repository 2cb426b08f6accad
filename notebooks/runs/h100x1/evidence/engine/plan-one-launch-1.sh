# GPU plan: one H100, the one-launch engine checked against the two-launch one, then Pythia-1B's exhaustive search with it
export ACADEMIC_BENCH_GIT_COMMIT=f27ba136c3f2727d1d45f23bba8baad295e775c4
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
E=notebooks/runs/h100x1/evidence/engine
mkdir -p $E
B="python3 -m academic_bench bench --gpu h100-80gb --gpus 1 --setup h100x1 --timeout 420"
for m in pythia-160m pythia-1b; do
  $B --model $m --methods free-lunch --out $E/results.jsonl; echo "bench rc=$?"
  $B --model $m --methods free-lunch --out $E/fresh.jsonl --fresh-after-oom; echo "bench rc=$?"
done
python3 -m academic_bench sweep --model pythia-1b --gpu h100-80gb --gpus 1 --setup h100x1 --preset exhaustive --timeout 420 --budget 1000 --no-progress --out $E/results.jsonl; echo "sweep rc=$?"
$B --model pythia-1b --methods free-lunch+zero1+offload --out $E/fresh.jsonl --fresh-after-oom; echo "bench rc=$?"
J="bash scripts/offline-gpu/job.sh h100x1 h100-80gb 1"
PARTS=bench TIMEOUT_S=420 BENCH="--model pythia-1b --methods free-lunch+fp8-tensorwise;--model pythia-2.8b --methods free-lunch+fp8-tensorwise" $J
