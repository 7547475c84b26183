#!/usr/bin/env bash
# CLoVE Tables 1, 2 and 4, FMNIST column, at a CPU-sized scale: the clove/images preset (20 clients,
# 500 training samples each, Adam 1e-3, batch 100, 1 local epoch) with fewer rounds and seeds.
# The paper's scale is `fedcluster +preset=clove/images` unchanged (100 rounds, seeds 0-2).
# Usage: [ROUNDS=30] [SEEDS=0] bash scripts/clove_fmnist_cpu.sh [OUT_DIR] [extra overrides...]
set -euo pipefail
out=${1:-outputs/presets/clove_fmnist_cpu}; shift || true
start=$(date +%s)
fedcluster +preset=clove/images rounds=${ROUNDS:-30} eval_every=10 "hydra.sweeper.params.seed='${SEEDS:-0}'" \
  hydra.sweep.dir="$out" "$@"
echo "done after $(( $(date +%s) - start )) s"
fedcluster-report "$out"
