#!/usr/bin/env bash
# Fetch what scripts/gpu_check.sh and a grid on Hydra's joblib launcher need on a GPU machine that has torch but no
# internet: hydra-core, omegaconf, antlr4, joblib and hydra-joblib-launcher (pure-Python wheels) into .whl/, and a copy of the
# Fashion-MNIST files into .fmnist/. Both folders are git-ignored; carry them to the machine.
# Usage: bash scripts/gpu_wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl .fmnist
python3 -m pip download -q --no-deps --only-binary=:all: -d .whl hydra-core==1.3.2 omegaconf==2.3.0 joblib \
  hydra-joblib-launcher==1.2.0
python3 -m pip wheel -q --no-deps -w .whl antlr4-python3-runtime==4.9.3   # sdist only on PyPI; pure Python
cp -n /usr/share/datasets/fashion-mnist/*.gz .fmnist/ 2>/dev/null \
  || echo "gpu_wheels.sh: no /usr/share/datasets/fashion-mnist (apt-get install -y dataset-fashion-mnist); the paper job will be skipped"
ls -l .whl .fmnist
