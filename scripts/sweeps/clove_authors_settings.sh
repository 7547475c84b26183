#!/usr/bin/env bash
# Issue 76: the two differences between the CLoVE presets and the authors' code, each rerun on the cells it
# touches (CLoVE and IFCA, every Fashion-MNIST mixing of Tables 1, 2, 4, 7, 8, 9, seeds 0-2):
#   first_round: experiment_list.csv (Nokia-Bell-Labs/Loss-Vector-based-Clustered-Federated-Learning at b602090f,
#                e.g. line 27, experiment 1120): first_round_client_to_cluster_assignment = random
#   test split:  min(500, the cluster's test pool // its clients) test samples per client
#                (partition.test_samples_per_client=null; ours: 100)
# From a frozen worktree of FROZEN (default ebef5cb, the code the first runs used), one job at a time, one
# thread. Rerun the same command to resume: finished jobs are skipped, a killed one resumes from its checkpoint.
#   bash scripts/sweeps/clove_authors_settings.sh [RUNS_DIR]     (default /work/runs)
# Then archive what finished:
#   python scripts/archive_runs.py RUNS_DIR/first_round_ls docs/results/clove_authors_code_runs/first_round_random/label_skews
#   (and first_round_images, test_split_ls, test_split_images likewise)
set -u
. "$(dirname "$0")/frozen_worktree.sh" "${1:-}" ebef5cb
for seed in 0 1 2; do
  $PY -m fedcluster -m +preset=clove/label_skews_3_4 algorithm=clove,ifca seed=$seed algorithm.first_round=random \
    hydra.sweep.dir="$runs/first_round_ls"
  $PY -m fedcluster -m +preset=clove/images algorithm=clove,ifca seed=$seed algorithm.first_round=random \
    hydra.sweep.dir="$runs/first_round_images"
done
for seed in 0 1 2; do
  $PY -m fedcluster -m +preset=clove/label_skews_3_4 algorithm=clove,ifca seed=$seed \
    partition.test_samples_per_client=null hydra.sweep.dir="$runs/test_split_ls"
  $PY -m fedcluster -m +preset=clove/images algorithm=clove,ifca seed=$seed \
    partition.test_samples_per_client=null hydra.sweep.dir="$runs/test_split_images"
done
