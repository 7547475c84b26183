#!/bin/bash
# PFLlib FedAvg (TsingZ0/PFLlib d832e76f, with the lines of pfllib_changes.md added) on fedcluster's exported clients
# (scripts/export_clients_npz.py), one seed after the other, one CPU thread. Usage: run_pfllib.sh SEED...
set -e
PFL=${PFL:-/work/pfllib}
LOGS=${LOGS:-/work/helper_pfllib/docs/results/pfllib_fedavg_peer/logs}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONPATH=${PFLLIB_DEPS:-/work/pfllib_deps}
cd "$PFL/system"
for s in "$@"; do
  cmd="python -u main.py -data FC_FMNIST_dir0.1_s$s -m FCCNN -algo FedAvg -gr 100 -ls 1 -lsteps 10 -lbs 32 -lr 0.001 -sgdm 0.9 -sgdwd 0 -nc 20 -jr 1.0 -eg 10 -dev cpu -ncl 10 -t 1 -seed $s -thr 1 -go fcpeer_s$s"
  echo "$cmd" > "$LOGS/pfllib_fedavg_s$s.log"
  start=$(date +%s)
  $cmd >> "$LOGS/pfllib_fedavg_s$s.log" 2>&1
  echo "wall_s=$(( $(date +%s) - start ))" >> "$LOGS/pfllib_fedavg_s$s.log"
done
