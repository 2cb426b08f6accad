# The one job a GPU machine runs for a setup, in parts, in the order that matters when the machine's time runs out:
#   bash scripts/offline-gpu/job.sh SETUP GPU N [HARD_MODEL]        e.g. h100x1 h100-80gb 1 pythia-2.8b
# PARTS picks them (default "search exhaustive"):
#   bench       each `;`-separated argument list of BENCH run as `academic-bench bench --gpu GPU --gpus N
#               --out notebooks/runs/SETUP/results.jsonl ARGS`, e.g. validations at a given micro-batch:
#               BENCH="--model pythia-160m --methods free-lunch+zero3+offload --micro-batch 32 --validate 3"
#   profile     each `;`-separated argument list of PROFILE run as `academic-bench profile --gpu GPU --gpus N ARGS`
#               (each names its --out), e.g. a decoder outside the catalog at its measured micro-batch:
#               PROFILE="--model D/x/config.json --tokens 3e11 --seq-len 2048 --out D/profiles.jsonl"
#   remeasure   the rows of notebooks/runs/SETUP/results.jsonl that REMEASURE selects (default predicted-stop: the
#               micro-batch search stopped on the memory model's prediction, not at a measured out of memory;
#               REMEASURE=memory-wall: timed near the GPU's capacity before the engine checked the memory wall;
#               REMEASURE=unvalidated: made by an older engine revision that never validated their method class),
#               measured again, each under its own search, then their unsynchronized twins (`academic-bench
#               remeasure`; `--list` shows them first; REMEASURE_MODELS, a comma list, keeps those models' rows);
#               BUDGET3_S/HARD3_S bound it (default 2400/3000 s)
#   gemm        the matrix-product rate by shape (scripts/offline-gpu/gemm_sweep.py) into
#               notebooks/runs/SETUP/evidence/gemm/gemm.jsonl; GEMM=output-layer times the output layer at
#               unaligned vocabularies beside padded ones instead, into evidence/gemm/gemm-output-layer.jsonl;
#               GEMM=memory times memory-bound kernels (add, GELU, layer norm, softmax, cast) into
#               evidence/gemm/gemm-memory.jsonl
#   parity      the loss parity of each switch beyond the paper in PARITY (default "bf16w fused-ce fp8-tensorwise
#               fp8-rowwise") against free-lunch (scripts/offline-gpu/loss_parity.py, PARITY_STEPS steps, default
#               300) into notebooks/runs/SETUP/evidence/parity/SWITCH.json
#   search      the benchmark notebook's naive and smart searches (PRESETS, default "naive smart") of MODELS
#               (default: every model; RETRY="[all]" runs them again from scratch), with the
#               validation net (the cheapest configuration of every method class that ran and has no
#               validation yet); rows a correction of the engine set aside and configurations a time budget
#               never started are measured again;
#   exhaustive  the exhaustive search of Pythia-160M, Pythia-1B and HARD_MODEL (a model where free-lunch does
#               not win trivially; default pythia-2.8b), and the synchronized vs unsynchronized Pythia-1B pair.
# Each notebook run resumes from notebooks/runs/SETUP/results.jsonl. BUDGET1_S/HARD1_S (search) and
# BUDGET2_S/HARD2_S (exhaustive) bound the two notebook runs: the budget stops new configurations from
# starting, the hard limit stops the notebook (SIGINT, no half row), so make the hard limit at least the budget
# plus one configuration's time limit (TIMEOUT_S, default 600 s). RETRY (e.g. "[error]", or "[uncommitted]" for rows
# that name no commit) measures those rows again, in the search and exhaustive parts alike ("[all]", a search from
# scratch, goes with PARTS=search alone and a budget it does not spend); UNSYNCED (e.g. "[pythia-1b]") adds the search part's unsynchronized
# timings of those models.
set -u
SETUP=$1 GPU=$2 N=$3 HARD=${4:-pythia-2.8b}
TIMEOUT_S=${TIMEOUT_S:-600}
export MACHINE_TXT=${MACHINE_TXT:-/tmp/w/machine.txt}
source scripts/offline-gpu/gpu_prelude.sh
notebook_args=(-p validate_steps 3 -p timeout_s $TIMEOUT_S ${RETRY:+-p retry "$RETRY"})
search_args=(${UNSYNCED:+-p unsynced_models "$UNSYNCED"})
for part in ${PARTS:-search exhaustive}; do
  case $part in
    bench)
      IFS=';' read -ra lists <<< "${BENCH:-}"
      for args in "${lists[@]}"; do
        timeout $((TIMEOUT_S + 100)) python3 -m academic_bench bench --gpu $GPU --gpus $N --timeout $TIMEOUT_S \
          --out notebooks/runs/$SETUP/results.jsonl $args
        echo "bench rc=$?"
      done ;;
    profile)
      IFS=';' read -ra lists <<< "${PROFILE:-}"
      for args in "${lists[@]}"; do
        timeout $((TIMEOUT_S + 100)) python3 -m academic_bench profile --gpu $GPU --gpus $N $args
        echo "profile rc=$?"
      done ;;
    remeasure)
      python3 -m academic_bench remeasure --out notebooks/runs/$SETUP/results.jsonl --retry ${REMEASURE:-predicted-stop} \
        ${REMEASURE_MODELS:+--models $REMEASURE_MODELS} --list
      timeout -s INT ${HARD3_S:-3000} python3 -m academic_bench remeasure --out notebooks/runs/$SETUP/results.jsonl \
        --retry ${REMEASURE:-predicted-stop} ${REMEASURE_MODELS:+--models $REMEASURE_MODELS} --timeout $TIMEOUT_S \
        --budget ${BUDGET3_S:-2400} --no-progress
      echo "remeasure rc=$?" ;;
    search)
      bash scripts/offline-gpu/notebook.sh $SETUP $GPU $N ${BUDGET1_S:-1000} ${HARD1_S:-1600} --preset ${PRESETS:-naive smart} \
        ${MODELS:+--models $MODELS} "${notebook_args[@]}" "${search_args[@]}" ;;
    exhaustive)
      bash scripts/offline-gpu/notebook.sh $SETUP $GPU $N ${BUDGET2_S:-600} ${HARD2_S:-1200} --preset naive smart \
        --models pythia-1b -p exhaustive_models "[pythia-160m, pythia-1b, $HARD]" -p unsynced_models '[pythia-1b]' \
        "${notebook_args[@]}" ;;
    gemm)
      mkdir -p notebooks/runs/$SETUP/evidence/gemm
      gemm_file=gemm
      [ "${GEMM:-linear}" != linear ] && gemm_file=gemm-$GEMM
      python3 scripts/offline-gpu/gemm_sweep.py notebooks/runs/$SETUP/evidence/gemm/$gemm_file.jsonl ${GEMM:-linear} \
        > /dev/null
      echo "gemm rc=$?" ;;
    parity)
      mkdir -p notebooks/runs/$SETUP/evidence/parity
      for switch in ${PARITY:-bf16w fused-ce fp8-tensorwise fp8-rowwise}; do
        timeout $((TIMEOUT_S + 100)) python3 scripts/offline-gpu/loss_parity.py $switch ${PARITY_STEPS:-300} \
          notebooks/runs/$SETUP/evidence/parity/$switch.json
        echo "parity $switch rc=$?"
      done ;;
    *) echo "unknown part $part: choose among bench, profile, remeasure, gemm, parity, search, exhaustive" >&2; exit 2 ;;
  esac
done
