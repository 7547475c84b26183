#!/usr/bin/env bash
# The GPU check suite, one command: bash scripts/gpu_check.sh
#   1. pytest -m gpu: every algorithm for 2 rounds on cuda, batched == sequential on cuda,
#      same seed -> same metrics.csv on cuda, fp32/tf32/bf16, peak GPU memory per run;
#   2. benchmarks/benchmark.py --device cuda --json (workloads a-d, fedcluster vs the reference loop);
#   3. one paper-protocol job with its wall time: Fed-CAM IFCA-CAM, Fashion-MNIST, 200 clients,
#      cluster-wise Dirichlet, K=10, 100 rounds.
# Where CUDA is absent (CI, this CPU machine) step 1 reports its tests as skipped and the script
# stops there with exit 0. On a machine without hydra-core/omegaconf it installs them from the
# wheels in ${FEDCLUSTER_WHEELS:-.whl} (made by scripts/gpu_wheels.sh); Fashion-MNIST is read
# from ${FEDCLUSTER_FMNIST:-.fmnist} or the Debian package's folder.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
OUT=${OUT:-outputs/gpu_check}
mkdir -p "$OUT"
echo "== 1. pytest -m gpu"
tests_failed=0
"$PY" -m pytest -m gpu -q -rs -s -p no:cacheprovider tests/runs/test_gpu.py || tests_failed=1   # the benchmark still runs
if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "gpu_check.sh: no CUDA GPU here; the GPU tests were skipped, benchmark and paper job not run"
  exit 0
fi
"$PY" -c "import torch; print('GPU:', torch.cuda.get_device_name(0), '| torch', torch.__version__)"
FMNIST=${FEDCLUSTER_FMNIST:-.fmnist}
[ -e "$FMNIST/train-images-idx3-ubyte.gz" ] || FMNIST=/usr/share/datasets/fashion-mnist
if [ ! -e "$FMNIST/train-images-idx3-ubyte.gz" ]; then
  echo "gpu_check.sh: no Fashion-MNIST files (.fmnist/ or /usr/share/datasets/fashion-mnist); benchmark and paper job not run"
  exit 1
fi
mkdir -p "$OUT/data/FashionMNIST/raw" && cp -n "$FMNIST"/*.gz "$OUT/data/FashionMNIST/raw/"
echo "== 2. benchmark (cuda)"
FEDCLUSTER_DATA_ROOT="$OUT/data" "$PY" benchmarks/benchmark.py --device cuda --json --rounds 4 | tee "$OUT/benchmark_cuda.jsonl"
echo "== 3. paper-protocol job: Fed-CAM IFCA-CAM, FMNIST, 200 clients, cluster-wise Dirichlet, K=10, 100 rounds"
start=$(date +%s)
"$PY" -m fedcluster.command.cli +preset=cam/table1 hydra.mode=RUN hardware=cuda dataset.root="$OUT/data" \
  partition=cluster_dirichlet num_clusters=10 algorithm=ifca_cam seed=0 rounds=100 \
  hydra.run.dir="$OUT/cam_ifca_cam_fmnist_k10_s0_$(date +%s)"
echo "paper job wall time: $(( $(date +%s) - start )) s"
[ "$tests_failed" = 0 ] || { echo "gpu_check.sh: some GPU tests failed (above)"; exit 1; }
