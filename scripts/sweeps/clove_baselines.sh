#!/usr/bin/env bash
# Issue 76: the eight baselines of CLoVE's Tables 1, 2, 4, 7, 8, 9 (Per-FedAvg, FedProto, FedALA, FedPAC, CFL, FeSEM,
# FlexCFL, PACFL), each with its own repository's solver (conf/method_solver/clove_mnist_fmnist_cnn/), at 3 seeds,
# over the presets as written: the cells the account (docs/cells.md) lists as "runnable, not run".
# From a frozen worktree of FROZEN (default: the commit this script came with), one job at a time, one thread.
# Rerun the same command to resume: finished jobs are skipped, a killed one resumes from its checkpoint.
#   bash scripts/sweeps/clove_baselines.sh [RUNS_DIR]     (default /work/runs)
# Then archive what finished:
#   python scripts/archive_runs.py RUNS_DIR/baselines_images docs/results/clove_authors_code_runs/baselines_images
#   python scripts/archive_runs.py RUNS_DIR/baselines_ls docs/results/clove_authors_code_runs/baselines_label_skews
# and add both folders to docs/cells.yaml's runs.
set -u
. "$(dirname "$0")/frozen_worktree.sh" "${1:-}"
# Cheapest first, so that cells reach 3 seeds early: a seed-0 label skew 1 run took 136-536 s for the first six
# (summary.json wall_time_s, AMD EPYC, one thread), FedALA 4,433 s and FeSEM 8,135 s.
for baselines in perfedavg,fedproto,fedpac,cfl,flexcfl,pacfl fedala fesem; do
  for seed in 0 1 2; do
    $PY -m fedcluster -m +preset=clove/images algorithm=$baselines seed=$seed hydra.sweep.dir="$runs/baselines_images"
    $PY -m fedcluster -m +preset=clove/label_skews_3_4 algorithm=$baselines seed=$seed hydra.sweep.dir="$runs/baselines_ls"
  done
done
