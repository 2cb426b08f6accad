# usage: bash scripts/offline-gpu/start_background.sh JOB.sh
# Copies the repository to /tmp/w and starts JOB.sh there in its own process session, so that the job
# outlives this call (a GPU machine kills a call's processes when it returns, and each call may last at most
# 10 minutes). Collect its results with collect.sh in this and later calls while the machine is held.
set -u
rm -rf /tmp/w && mkdir -p /tmp/w && cp -a . /tmp/w/
cd /tmp/w && rm -f job.done
setsid nohup bash -c "bash $1; touch /tmp/w/job.done" > /tmp/w/job.log 2>&1 < /dev/null &
echo "started $1 in /tmp/w (pid $!)"
