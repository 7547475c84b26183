#!/usr/bin/env bash
# Fed-CAM Table 1, Fashion-MNIST, at the paper's per-client scale (20 clients x 300 training samples,
# the paper's 60,000 / 200; 50 test samples each), every row under the same rules: the preset's
# FedAvg-paper CNN, 100 rounds, IFCA and IFCA-CAM with the mean cluster update, clients scored with
# the model they trained (IFCA's test-loss re-pick only in its labelled column), FeSEM-CAM's 3-epoch
# start-up with the matched FeSEM control. docs/results/paper_protocol/cam_fmnist_table1.md.
#
#   bash scripts/cam_fmnist_table1.sh SWEEP_DIR [core|sensitivity|all]   (default: all)
#   fedcluster-report SWEEP_DIR
#
# Resumable: every job is one sub-directory of SWEEP_DIR named by its overrides, so running the
# script again skips finished jobs and resumes killed ones from their checkpoints. Order, most
# telling first: cluster-wise Dirichlet K = 5 seed 0 (core rows, then the sensitivity rows: eq. 6 for
# IFCA and IFCA-CAM, plain FeSEM's one-round start-up, IFCA's identical init, FeSEM-CAM's lambda),
# its seeds 1-2, then the other (partition, K) cells the same way.
set -euo pipefail
dir=${1:?usage: cam_fmnist_table1.sh SWEEP_DIR [core|sensitivity|all]}
part=${2:-all}
scale=(partition.num_clients=20 dataset.train_size=6000 dataset.test_size=1000 checkpoint_every=10)

failed=0
job() {   # job PARTITION K SEED ALGORITHM [override ...]; a failed job is counted and the sweep goes on
  local partition=$1 k=$2 seed=$3 algorithm=$4
  shift 4
  run_job "$partition" "$k" "$seed" "$algorithm" "$@" || { failed=$((failed + 1)); echo "cam_fmnist_table1.sh: job failed: $*"; }
}

run_job() {
  local partition=$1 k=$2 seed=$3 algorithm=$4
  shift 4
  # algorithm= as well as its sweep parameter: the job's own overrides (algorithm.*) are checked against it
  fedcluster +preset=cam/table1 algorithm="$algorithm" hydra.sweeper.params.dataset=fashion_mnist \
    hydra.sweeper.params.partition="$partition" hydra.sweeper.params.num_clusters="$k" \
    hydra.sweeper.params.algorithm="$algorithm" hydra.sweeper.params.seed="$seed" \
    "${scale[@]}" "$@" hydra.sweep.dir="$dir"
}

core() {   # the five methods and the matched FeSEM control of one (partition, K, seed)
  job "$1" "$2" "$3" fedavg
  job "$1" "$2" "$3" ifca algorithm.report_label_pick=true
  job "$1" "$2" "$3" ifca_cam algorithm.base.report_label_pick=true
  job "$1" "$2" "$3" fesem algorithm.distance_on=fc algorithm.startup_epochs=3
  job "$1" "$2" "$3" fesem_cam
}

sensitivity() {   # seed 0 of one (partition, K)
  job "$1" "$2" 0 ifca algorithm.report_label_pick=true algorithm.update=eq6
  job "$1" "$2" 0 ifca_cam algorithm.base.report_label_pick=true algorithm.base.update=eq6
  job "$1" "$2" 0 fesem
  job "$1" "$2" 0 ifca algorithm.report_label_pick=true algorithm.init=identical
  job "$1" "$2" 0 fesem_cam algorithm.base.lam=0.001
  job "$1" "$2" 0 fesem_cam algorithm.base.lam=0.1
}

for cell in "cluster_dirichlet 5" "cluster_nclass 5" "cluster_dirichlet 10" "cluster_nclass 10"; do
  [[ $part == sensitivity ]] || core $cell 0
  [[ $part == core ]] || sensitivity $cell
  if [[ $part != sensitivity ]]; then core $cell 1; core $cell 2; fi
done
if [[ $failed -gt 0 ]]; then
  echo "cam_fmnist_table1.sh: $failed job(s) failed (see above); run the script again to retry them" >&2
  exit 1
fi
