#!/usr/bin/env bash
# Run a list of fedcluster jobs side by side within a time limit, for a machine with one GPU and many cores,
# where one job at a time leaves the GPU mostly idle:
#
#   bash scripts/run_queue.sh QUEUE RUNS_DIR SECONDS [PARALLEL]
#
# QUEUE: one job per line, its `fedcluster` arguments (the --list output of scripts/cam_fmnist_tables.sh or
# `fedcluster-report leaderboard DIR --list`; each names its own hydra.sweep.dir, which should lie under RUNS_DIR). PARALLEL
# (default 10) jobs run at once, one thread each; at SECONDS the jobs still running are stopped (each resumes
# from its checkpoint when the queue is run again: finished jobs are skipped, one directory per job). At the
# end RUNS_DIR/finished.tgz holds every finished run under RUNS_DIR without checkpoints or PDFs (for a
# machine that is given back). Memory: on an H100 (80 GB) 14 jobs at once, 200-client ones among them, filled
# the card (docs/results/paper_protocol/cam_fmnist_table1.md); 10 jobs of 20 clients ran; 15 did not (16 out-of-memory
# crashes in 545 s; the processes held 3.1-9.6 GiB each, above the runs' own estimates), so keep PARALLEL at 10 there. Where hydra-core is
# not installed it is taken from the wheels in ${FEDCLUSTER_WHEELS:-.whl} (scripts/gpu_wheels.sh), and
# Fashion-MNIST from ${FEDCLUSTER_FMNIST:-.fmnist} into ./data (the data sets' default root).
set -uo pipefail
cd "$(dirname "$0")/.."
usage="usage: run_queue.sh QUEUE RUNS_DIR SECONDS [PARALLEL]"
queue=${1:?$usage}
runs=${2:?$usage}
seconds=${3:?$usage}
parallel=${4:-10}
[[ -f $queue ]] || { echo "run_queue.sh: QUEUE=$queue is not a file" >&2; exit 2; }
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || { echo "run_queue.sh: SECONDS=$seconds is not a positive whole number" >&2; exit 2; }
[[ $parallel =~ ^[0-9]+$ && $parallel -gt 0 ]] || { echo "run_queue.sh: PARALLEL=$parallel is not a positive whole number" >&2; exit 2; }
source scripts/gpu_env.sh
FMNIST=${FEDCLUSTER_FMNIST:-.fmnist}
if [[ -e $FMNIST/train-images-idx3-ubyte.gz && ! -e data/FashionMNIST/raw/train-images-idx3-ubyte.gz ]]; then
  mkdir -p data/FashionMNIST/raw && cp "$FMNIST"/*.gz data/FashionMNIST/raw/
fi
mkdir -p "$runs"
echo "run_queue.sh: $(wc -l < "$queue") jobs, $parallel at a time, for at most $seconds s"
start=$(date +%s)
# timeout stops the whole process group (xargs and every job) at the limit
OMP_NUM_THREADS=1 timeout "$seconds" xargs -P "$parallel" -L 1 "$PY" -m fedcluster.command.cli < "$queue"
status=$?
echo "run_queue.sh: queue stopped after $(( $(date +%s) - start )) s (exit $status; 124: the time limit)"
finished=()
while IFS= read -r -d '' summary; do   # complete or diverged: a result either way
  finished+=("${summary%/summary.json}")
done < <(find "$runs" -name summary.json -print0 | sort -z)
echo "run_queue.sh: ${#finished[@]} finished runs (a summary.json each)"
if [[ ${#finished[@]} -gt 0 ]]; then
  tar czf "$runs/finished.tgz" --exclude='*.pt' --exclude='*.pdf' "${finished[@]}"
fi
