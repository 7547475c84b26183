#!/usr/bin/env bash
# Issue 76: CLoVE Table 5's Fashion-MNIST row (FedAvg, Local-only, IFCA, CLoVE; the autoencoder) as the authors' code
# ran it (conf/preset/clove/unsupervised.yaml, the source beside every value), seeds 0-2, cheapest first:
# `fedcluster estimate +preset=clove/unsupervised` gives 13.0 CPU-hours in all on the 2-core AMD EPYC, one thread.
# From a frozen worktree of FROZEN (default: the commit this script came with), one job at a time, one thread.
# Rerun the same command to resume: finished jobs are skipped, a killed one resumes from its checkpoint.
#   bash scripts/sweeps/clove_unsupervised.sh [RUNS_DIR]     (default /work/runs)
# Then: python scripts/archive_runs.py RUNS_DIR/unsupervised docs/results/clove_authors_code_runs/unsupervised
# and add that folder to docs/cells.yaml's runs.
set -u
. "$(dirname "$0")/frozen_worktree.sh" "${1:-}"
for seed in 0 1 2; do
  $PY -m fedcluster -m +preset=clove/unsupervised algorithm=fedavg,local,clove,ifca seed=$seed \
    hydra.sweep.dir="$runs/unsupervised"
done
