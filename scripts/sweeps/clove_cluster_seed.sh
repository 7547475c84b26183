#!/usr/bin/env bash
# Issue 76: the cluster_seed ablation's seed 0 (the authors ran every seed on one partition, their first seed's:
# partition.cluster_seed=0). Seeds 1 and 2 are archived in docs/results/clove_authors_code_runs/cluster_seed; the
# account counts an ablation only at 3 seeds. Seed 0 with cluster_seed=0 draws what the preset's seed 0 draws, so its
# metrics.csv should equal the archived seed-0 run's (docs/results/clove_authors_code_runs/label_skews): a check.
# From a frozen worktree of FROZEN (default ac90e88, the code of the baselines sweep), one job at a time, one thread;
# rerun the same command to resume (finished jobs skipped, a killed one resumed from its checkpoint).
#   bash scripts/sweeps/clove_cluster_seed.sh [RUNS_DIR]     (default /work/runs)
# Then: python scripts/archive_runs.py RUNS_DIR/cluster_seed docs/results/clove_authors_code_runs/cluster_seed
set -u
. "$(dirname "$0")/frozen_worktree.sh" "${1:-}" ac90e88
$PY -m fedcluster -m +preset=clove/label_skews_3_4 partition=label_skew4,label_skew3 algorithm=fedavg,local,clove \
  seed=0 partition.cluster_seed=0 hydra.sweep.dir="$runs/cluster_seed"
