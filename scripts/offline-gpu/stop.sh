# usage: bash scripts/offline-gpu/stop.sh SETUP...
# Stops the background job started by start_background.sh and packs what it measured, like collect.sh: first the
# job script (so that it starts nothing more), then the notebook, sweep, bench, remeasure or profile with SIGINT (the configuration that is
# running is abandoned and no half row is written), then any worker or torchrun left. The patterns start with a bracket
# so that they never match this command's own shell, whose command line contains them.
set -u
[ -d /tmp/w ] || exec bash "$(dirname "$0")/collect.sh" 0 "$@"  # no job here: say so, as collect.sh does
pkill -TERM -f "[b]ash scripts/offline-gpu/job.sh"
pkill -INT -f "[a]cademic_bench (notebook|sweep|bench|remeasure|profile)"
for _ in $(seq 1 12); do pgrep -f "[a]cademic_bench (notebook|sweep|bench|remeasure|profile)" > /dev/null || break; sleep 5; done
pkill -KILL -f "[a]cademic_bench.measure.worker|[t]orch.distributed.run|[t]orchrun"
touch /tmp/w/job.done
bash "$(dirname "$0")/collect.sh" 0 "$@"
