#!/usr/bin/env bash
# Fed-CAM Tables 1 and 2, Fashion-MNIST, at the paper's per-client scale (20 clients x 300 training samples,
# the paper's 60,000 / 200; 50 test samples each), every row under the same rules: the preset's
# FedAvg-paper CNN, 100 rounds, IFCA and IFCA-CAM with the mean cluster update, clients scored with
# the model they trained (IFCA's test-loss re-pick only in its labelled column), FeSEM-CAM's 3-epoch
# start-up with the matched FeSEM control. docs/results/paper_protocol/cam_fmnist_table1.md.
#
#   bash scripts/cam_fmnist_tables.sh SWEEP_DIR [table1|table2] [core|sensitivity|all] [--scale=per_client|paper]
#                                     [--list] [OVERRIDE ...]        (default: table1 all --scale=per_client)
#   fedcluster-report SWEEP_DIR [--baseline ifca]
#
# --scale=paper runs the paper's own 200 clients on all of Fashion-MNIST instead of 20 clients x 300.
# OVERRIDEs (key=value) go to every job, e.g. hardware=cuda dataset.root=DIR. --list prints each job's
# `fedcluster` arguments, one job per line, in the script's order, and runs nothing: to run jobs side by
# side (a GPU holds several), `... --list | xargs -P 8 -L 1 fedcluster`; each job still has its own
# directory and lock, so the list can be re-run to finish what a stopped run left.
#
# Table 1: cluster-wise Dirichlet (0.1, 10) and n-class (3, 2); Table 2: client-wise Dirichlet (0.1) and
# n-class (2); K = 5 and 10 each. Resumable: every job is one sub-directory of SWEEP_DIR named by its
# overrides, so running the script again skips finished jobs and resumes killed ones from their
# checkpoints; a failed job is reported and the others go on. Order, most telling first: Dirichlet
# K = 5 seed 0 (core rows, then the sensitivity rows: IFCA's identical init, eq. 6 for IFCA-CAM and
# IFCA, plain FeSEM's one-round start-up, FeSEM-CAM's lambda), its seeds 1-2, then the other
# (partition, K) cells the same way.
set -euo pipefail
usage="usage: cam_fmnist_tables.sh SWEEP_DIR [table1|table2] [core|sensitivity|all] [--scale=per_client|paper] [--list] [OVERRIDE ...]"
dir=${1:?$usage}
table=${2:-table1}
part=${3:-all}
shift $(( $# < 3 ? $# : 3 ))
scale_name=per_client
list=false
extra=()
for arg in "$@"; do
  case $arg in
    --list) list=true ;;
    --scale=*) scale_name=${arg#--scale=} ;;
    -*) echo "cam_fmnist_tables.sh: option $arg is unknown; allowed: --scale=per_client|paper, --list" >&2; exit 2 ;;
    *=*) extra+=("$arg") ;;
    *) echo "cam_fmnist_tables.sh: argument '$arg' is not an override (key=value); $usage" >&2; exit 2 ;;
  esac
done
case $table in
  table1) cells=("cluster_dirichlet 5" "cluster_nclass 5" "cluster_dirichlet 10" "cluster_nclass 10") ;;
  table2) cells=("dirichlet 5" "nclass 5" "dirichlet 10" "nclass 10") ;;
  *) echo "cam_fmnist_tables.sh: table=$table is unknown; allowed: table1, table2" >&2; exit 2 ;;
esac
case $part in core|sensitivity|all) ;; *) echo "cam_fmnist_tables.sh: part=$part is unknown; allowed: core, sensitivity, all" >&2; exit 2 ;; esac
case $scale_name in
  per_client) scale=(partition.num_clients=20 dataset.train_size=6000 dataset.test_size=1000 checkpoint_every=10) ;;
  paper) scale=(checkpoint_every=10) ;;   # the preset's own 200 clients and the whole dataset
  *) echo "cam_fmnist_tables.sh: --scale=$scale_name is unknown; allowed: per_client, paper" >&2; exit 2 ;;
esac

failed=0
job() {   # job PARTITION K SEED ALGORITHM [override ...]; a failed job is counted and the sweep goes on
  local partition=$1 k=$2 seed=$3 algorithm=$4
  shift 4
  run_job "$partition" "$k" "$seed" "$algorithm" "$@" || { failed=$((failed + 1)); echo "cam_fmnist_tables.sh: job failed: $*"; }
}

run_job() {
  local partition=$1 k=$2 seed=$3 algorithm=$4
  shift 4
  # algorithm= as well as its sweep parameter: the job's own overrides (algorithm.*) are checked against it
  local args=(+preset=cam/$table algorithm="$algorithm" hydra.sweeper.params.dataset=fashion_mnist
    hydra.sweeper.params.partition="$partition" hydra.sweeper.params.num_clusters="$k"
    hydra.sweeper.params.algorithm="$algorithm" hydra.sweeper.params.seed="$seed"
    "${scale[@]}" "$@" ${extra[@]+"${extra[@]}"} hydra.sweep.dir="$dir")
  if $list; then echo "${args[*]}"; else fedcluster "${args[@]}"; fi
}

core() {   # the five methods and the matched FeSEM control of one (partition, K, seed)
  # FedAvg ignores K; under Table 2's client-wise partitions its data do not depend on K either: run it once
  [[ $table == table2 && $2 != 5 ]] || job "$1" "$2" "$3" fedavg
  job "$1" "$2" "$3" ifca algorithm.report_label_pick=true
  job "$1" "$2" "$3" ifca_cam algorithm.base.report_label_pick=true
  job "$1" "$2" "$3" fesem algorithm.distance_on=fc algorithm.startup_epochs=3
  job "$1" "$2" "$3" fesem_cam
}

sensitivity() {   # seed 0 of one (partition, K); IFCA's identical init and IFCA-CAM's eq. 6 first (the audit's points)
  job "$1" "$2" 0 ifca algorithm.report_label_pick=true algorithm.init=identical
  job "$1" "$2" 0 ifca_cam algorithm.base.report_label_pick=true algorithm.base.update=eq6
  job "$1" "$2" 0 ifca algorithm.report_label_pick=true algorithm.update=eq6
  job "$1" "$2" 0 fesem
  job "$1" "$2" 0 fesem_cam algorithm.base.lam=0.001
  job "$1" "$2" 0 fesem_cam algorithm.base.lam=0.1
}

for cell in "${cells[@]}"; do
  [[ $part == sensitivity ]] || core $cell 0
  [[ $part == core ]] || sensitivity $cell
  if [[ $part != sensitivity ]]; then core $cell 1; core $cell 2; fi
done
if [[ $failed -gt 0 ]]; then
  echo "cam_fmnist_tables.sh: $failed job(s) failed (see above); run the script again to retry them" >&2
  exit 1
fi
