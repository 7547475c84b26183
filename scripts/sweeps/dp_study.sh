#!/usr/bin/env bash
# Issue 78's study: client-level DP (privacy=client_dp, DP-FedAvg) on a clustered setting with enough clients for
# noise to average out: Fashion-MNIST concept shift (CLoVE's exp111 label swaps, 4 clusters) over 1,000 clients of
# 50 training and 10 test samples (250 a cluster), softmax regression (model=linear, 7,850 parameters), 100 rounds,
# 10 % of the clients a round (Poisson under client_dp), 1 local epoch of batch 10 at lr 0.05, clip norm 1.
# FedAvg, IFCA, CLoVE (client_fraction 0.1) and FedSoft (4 selections of 25 clients a round; its selections are
# drawn from the importance weights, so no credit for sampling: rate 1) at epsilon = inf (privacy=none), 8, 4, 1
# (delta 1e-5), seeds 0-2: each epsilon's noise multiplier from python -m fedcluster.privacy.calibrate; and the
# mechanism without noise (clipping, Poisson participation, uniform weights, the fixed denominator: epsilon inf), to
# tell what the noise costs from what the rest of the mechanism costs.
# From a frozen worktree of FROZEN (default: this script's commit), one job at a time, one thread.
# Rerun the same command to resume (finished jobs are skipped). Then:
#   fedcluster-report privacy RUNS_DIR/dp_study --out docs/results/privacy
# (the runs stay out of the repository: 1,000 clients' rows make each metrics.csv 6 MB; privacy_records.json keeps
# what the page reads of each, by run_id, and `fedcluster-report privacy --records` renders the page again)
set -u
. "$(dirname "$0")/frozen_worktree.sh" "${1:-}"
ROUNDS=100
SETTING=(dataset=fashion_mnist 'dataset.distributions=[{rotation:0}]' partition=concept_shift
         partition.num_clients=1000 partition.samples_per_client=50 partition.test_samples_per_client=10
         partition.test_class_samples_per_cluster=250 model=linear num_clusters=4 rounds=$ROUNDS eval_every=10
         train.epochs=1 train.batch_size=10 train.lr=0.05 plots=false progress=false)
sampled=$($PY -m fedcluster.privacy.calibrate --epsilon 8 4 1 --rate 0.1 --rounds $ROUNDS | tr ' ' ',')
selected=$($PY -m fedcluster.privacy.calibrate --epsilon 8 4 1 --rate 1 --rounds $ROUNDS | tr ' ' ',')
for seed in 0 1 2; do
  for method in "algorithm=fedavg algorithm.client_fraction=0.1" "algorithm=ifca algorithm.client_fraction=0.1" \
                "algorithm=clove algorithm.client_fraction=0.1" "algorithm=fedsoft algorithm.selection_size=25"; do
    noise=$sampled; [[ $method == *fedsoft* ]] && noise=$selected
    $PY -m fedcluster -m "${SETTING[@]}" $method seed=$seed hydra.sweep.dir="$runs/dp_study"
    $PY -m fedcluster -m "${SETTING[@]}" $method seed=$seed privacy=client_dp privacy.clip_norm=1.0 \
        privacy.noise_multiplier=$noise hydra.sweep.dir="$runs/dp_study"
    $PY -m fedcluster -m "${SETTING[@]}" $method seed=$seed privacy=client_dp privacy.clip_norm=1.0 \
        privacy.noise_multiplier=0 hydra.sweep.dir="$runs/dp_study"
  done
done
