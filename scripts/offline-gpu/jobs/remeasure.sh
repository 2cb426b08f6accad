# Re-measure one setup with the current engine, in the order that matters when the machine's time runs out:
#   bash scripts/offline-gpu/jobs/remeasure.sh SETUP GPU N HARD_MODEL   e.g. h100x1 h100-80gb 1 pythia-2.8b
# 1. "search": the smart search of MODELS (default: every model; rows an engine correction set aside, and
#    configurations a budget never started, are measured again; a configuration's limit is long enough that one
#    which ran its timing ends), with the validation net (the cheapest configuration of every method class that
#    ran and has no validation yet);
# 2. "exhaustive": the exhaustive search of Pythia-160M, Pythia-1B and HARD_MODEL (a model where free-lunch does
#    not win trivially), and the synchronized vs unsynchronized Pythia-1B pair.
# PARTS picks them (default "search exhaustive"). Each notebook run resumes from notebooks/runs/SETUP/results.jsonl;
# BUDGET1_S/BUDGET2_S bound the two runs (a machine held for a limited time: collect with collect.sh SETUP).
set -u
SETUP=$1 GPU=$2 N=$3 HARD=${4:-pythia-2.8b}
export MACHINE_TXT=/tmp/w/machine.txt
source scripts/offline-gpu/gpu_prelude.sh
for part in ${PARTS:-search exhaustive}; do
  case $part in
    search)
      bash scripts/offline-gpu/notebook.sh $SETUP $GPU $N ${BUDGET1_S:-1000} ${HARD1_S:-1600} --preset naive smart \
        ${MODELS:+--models $MODELS} -p validate_steps 3 -p timeout_s 600 ;;
    exhaustive)
      bash scripts/offline-gpu/notebook.sh $SETUP $GPU $N ${BUDGET2_S:-600} ${HARD2_S:-1200} --preset naive smart \
        --models pythia-1b -p exhaustive_models "[pythia-160m, pythia-1b, $HARD]" -p unsynced_models '[pythia-1b]' \
        -p validate_steps 3 -p timeout_s 600 ;;
  esac
done
