#!/usr/bin/env bash
# Fed-CAM Tables 1 and 2 (scripts/cam_fmnist_tables.sh's jobs) run side by side, for a machine with one GPU
# and many cores, where one job at a time leaves the GPU mostly idle, within a time limit:
#
#   bash scripts/cam_tables_parallel.sh RUNS_DIR SECONDS [PARALLEL] [OVERRIDE ...]    e.g. ... hardware=cuda
#
# Queue: every per-client-scale job of Table 1, then of Table 2, then Table 1's paper-scale (200 clients) core
# rows. PARALLEL (default 10) jobs run at once, one thread each. Measured on an H100 (80 GB, 2026-11-26,
# docs/results/paper_protocol/cam_fmnist_table1.md): 10 per-client jobs side by side ran in 146 s together;
# 14 jobs with the 200-client ones among them filled the card's memory, and each 200-client job (4.7 GiB by
# the run's own estimate) was refused. So the paper-scale jobs come last; for them use PARALLEL 4 or fewer,
# e.g. in a second call once the per-client queue is done. At SECONDS the jobs still running are
# stopped (each resumes from its checkpoint when the queue is run again). Sweep directories:
# RUNS_DIR/{paper_t1,t1,t2}; fedcluster-report reads each. The queue runs through scripts/run_queue.sh,
# which also packs the finished runs into RUNS_DIR/finished.tgz and sets up hydra-core and Fashion-MNIST
# on a bare GPU machine.
set -uo pipefail
cd "$(dirname "$0")/.."
usage="usage: cam_tables_parallel.sh RUNS_DIR SECONDS [PARALLEL] [OVERRIDE ...]"
runs=${1:?$usage}
seconds=${2:?$usage}
parallel=${3:-10}
shift $(( $# < 3 ? $# : 3 ))
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || { echo "cam_tables_parallel.sh: SECONDS=$seconds is not a positive whole number" >&2; exit 2; }
[[ $parallel =~ ^[0-9]+$ && $parallel -gt 0 ]] || { echo "cam_tables_parallel.sh: PARALLEL=$parallel is not a positive whole number" >&2; exit 2; }
mkdir -p "$runs"
queue=$runs/queue.txt
tables=scripts/cam_fmnist_tables.sh
{
  bash $tables "$runs/t1" table1 all --list "$@"
  bash $tables "$runs/t2" table2 all --list "$@"
  bash $tables "$runs/paper_t1" table1 core --scale=paper --list "$@"
} > "$queue" || exit 2
exec bash scripts/run_queue.sh "$queue" "$runs" "$seconds" "$parallel"
