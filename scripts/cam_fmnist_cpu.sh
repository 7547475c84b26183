#!/usr/bin/env bash
# The FMNIST half of Fed-CAM Tables 1 and 2 at a CPU-sized scale, one seed:
# 20 clients with 200 training / 50 test images each (the paper: 200 clients over 60k/10k, 300 / 50 each),
# 20 rounds (6 warm-up, the paper's 30%), the paper's optimizer (SGD 1e-3, momentum 0.9, batch 32, 10 local steps).
# The paper's scale is `fedcluster +preset=cam/table1` unchanged (200 clients, 100 rounds, 3 seeds).
# Runs in blocks, cheapest and most telling first (the ensembles cost K trainings per round):
#   single (FedAvg, FedProx; independent of K), then per partition and K the clustered methods,
#   then the FedAvg+/FedProx+ ensembles. Each block is one Hydra multirun in OUT_DIR/table<t>/<block>.
# Usage: [TABLES="1 2"] [BLOCKS="single k5 k10 ens5 ens10"] bash scripts/cam_fmnist_cpu.sh [OUT_DIR] [overrides...]
# (TABLES=1 and TABLES=2 may run side by side, e.g. with OMP_NUM_THREADS=1 each on a 2-core machine.)
set -euo pipefail
out=${1:-outputs/presets/cam_fmnist_cpu}; shift || true
common=(partition.num_clients=20 dataset.train_size=4000 dataset.test_size=1000 rounds=20
        eval_every=5 engine=batched hydra.sweeper.params.dataset=fashion_mnist hydra.sweeper.params.seed=0 "$@")
start=$(date +%s)
for t in ${TABLES:-1 2}; do
  for block in ${BLOCKS:-single k5 k10 ens5 ens10}; do
    case $block in
      single) args=("hydra.sweeper.params.algorithm='fedavg,fedprox'" hydra.sweeper.params.num_clusters=5) ;;
      k5)     args=("hydra.sweeper.params.algorithm='ifca,ifca_cam,fesem,fesem_cam'" hydra.sweeper.params.num_clusters=5) ;;
      k10)    args=("hydra.sweeper.params.algorithm='ifca,ifca_cam,fesem,fesem_cam'" hydra.sweeper.params.num_clusters=10) ;;
      ens5)   args=("hydra.sweeper.params.algorithm='fedavg_plus,fedprox_plus'" hydra.sweeper.params.num_clusters=5) ;;
      ens10)  args=("hydra.sweeper.params.algorithm='fedavg_plus,fedprox_plus'" hydra.sweeper.params.num_clusters=10) ;;
      *) echo "unknown block $block" >&2; exit 2 ;;
    esac
    [ -n "${PARTITIONS:-}" ] && args+=("hydra.sweeper.params.partition=$PARTITIONS")
    fedcluster +preset=cam/table$t "${common[@]}" "${args[@]}" hydra.sweep.dir="$out/table$t/$block${SUFFIX:-}"
    echo "table $t block $block done after $(( $(date +%s) - start )) s"
  done
done
