#!/usr/bin/env bash
# The queue a session lent a GPU runs, most needed first, without any job already finished on either device:
# Fed-CAM Table 1 (core rows, then sensitivity rows), Fed-CAM Table 2 (the same), then the leaderboard's
# cells (conf/preset/leaderboard/, listed by `fedcluster-report leaderboard DIR --list`). Finished means: a row of the committed per-run CSV of the first GPU session,
# or a run folder archived under docs/results (scripts/archive_runs.py), or one under any extra DONE folder.
#
#   bash scripts/gpu_session_queue.sh QUEUE [DONE ...]        # writes QUEUE, prints how many jobs it holds
# (DONE: extra folders of finished runs, e.g. a sweep not archived yet; each is read for both families, so
#  name a folder of one family's runs only)
#   bash scripts/run_queue.sh QUEUE gpu_runs 545 10             # on the GPU machine (carry .whl .fmnist .gpuq)
#
# Every job's folder lies under gpu_runs/ (cam: gpu_runs/t1, gpu_runs/t2; leaderboard: gpu_runs/lb), so the
# returned gpu_runs/finished.tgz is archived with
#   python scripts/archive_runs.py UNPACKED/gpu_runs/t1 docs/results/paper_protocol/cam_runs/h100/t1   (t2 alike)
#   python scripts/archive_runs.py UNPACKED/gpu_runs/lb docs/results/leaderboard_runs
set -euo pipefail
cd "$(dirname "$0")/.."
queue=${1:?usage: gpu_session_queue.sh QUEUE [DONE ...]}
shift
P=docs/results/paper_protocol
cam=$(mktemp); board=$(mktemp); cam_left=$(mktemp); board_left=$(mktemp)
trap 'rm -f "$cam" "$board" "$cam_left" "$board_left"' EXIT
# one pending_jobs.py call per family: a folder name leaves the preset out, so Fed-CAM's runs must not stand
# for the leaderboard's jobs of the same partition and method (CLoVE's protocol there)
for m in core all; do bash scripts/cam_fmnist_tables.sh gpu_runs/t1 table1 $m --list hardware=cuda; done >> "$cam"
for m in core all; do bash scripts/cam_fmnist_tables.sh gpu_runs/t2 table2 $m --list hardware=cuda; done >> "$cam"
fedcluster-report leaderboard gpu_runs/lb --list hardware=cuda >> "$board"
python3 scripts/pending_jobs.py "$cam" "$cam_left" --done "$P/cam_fmnist_h100_per_run.csv" "$P/cam_runs" "$@"
python3 scripts/pending_jobs.py "$board" "$board_left" --done docs/results/leaderboard_runs "$@"
mkdir -p "$(dirname "$queue")"
cat "$cam_left" "$board_left" > "$queue.tmp" && mv "$queue.tmp" "$queue"
echo "gpu_session_queue.sh: $(grep -c . "$queue" || true) jobs -> $queue (Fed-CAM first, then the leaderboard)"
