# Both one-H100 jobs in one background run: engine revision 5's validations, then the Pythia-1B timing pair.
bash scripts/offline-gpu/jobs/h100x1-engine-revision5.sh
bash scripts/offline-gpu/jobs/h100x1-sync-pair.sh
