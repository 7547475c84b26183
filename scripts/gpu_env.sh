# Sourced by scripts/gpu_check.sh, and before a grid on a GPU machine (from the repository root): $PY, this checkout
# on PYTHONPATH, and hydra-core/omegaconf from the wheels in ${FEDCLUSTER_WHEELS:-.whl} (made by
# scripts/gpu_wheels.sh) where the machine has torch but not them (the GPU machines, no internet).
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ! "$PY" -c "import hydra, omegaconf" 2>/dev/null; then
  WHEELS=${FEDCLUSTER_WHEELS:-.whl}
  ls "$WHEELS"/*.whl >/dev/null 2>&1 || { echo "$(basename "$0"): hydra-core is missing and no wheels in $WHEELS (run scripts/gpu_wheels.sh where pip works)"; exit 1; }
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/fedcluster-site "$WHEELS"/*.whl || exit 1
  export PYTHONPATH="$PYTHONPATH:/tmp/fedcluster-site"
fi
