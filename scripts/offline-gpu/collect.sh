# usage: bash scripts/offline-gpu/collect.sh WAIT_S SETUP...
# Waits until the background job is done or WAIT_S seconds have passed, then packs its runs into
# $OUT/run.tgz (unpack into notebooks/runs/) and its log into $OUT/job.log.
set -u
WAIT=$1; shift
if [ ! -d /tmp/w ]; then
  # Run 7 waited 560 s of machine time here for a job that was gone: the machine had been given back
  # (idle between calls) and this call had started a fresh, bare one.
  echo "no background job on this machine (/tmp/w is missing): this call started a fresh machine, so the job"
  echo "and its machine are gone; unpack the run.tgz of the last call that reached it"
  exit 3
fi
while [ ! -f /tmp/w/job.done ] && [ $SECONDS -lt $WAIT ]; do sleep 5; done
[ -f /tmp/w/job.done ] && echo "job done" || echo "job still running after ${WAIT}s"
tar czf $OUT/run.tgz -C /tmp/w/notebooks/runs "$@"
tr '\r' '\n' < /tmp/w/job.log | grep -v -i warn > $OUT/job.log
cp /tmp/w/machine.txt $OUT/ 2>/dev/null
grep -E "best|ran \(|==|^bench|rc=" $OUT/job.log | tail -40
