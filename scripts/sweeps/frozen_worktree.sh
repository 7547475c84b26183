# Sourced by the sweep scripts: run the sweep from a frozen worktree, one thread a job.
#   . "$(dirname "$0")/frozen_worktree.sh" RUNS_DIR [DEFAULT_REV]
# Sets runs (RUNS_DIR, default /work/runs), frozen_rev (FROZEN, else DEFAULT_REV, else the commit this script came
# with), frozen (RUNS_DIR/frozen_<rev>, created as a git worktree where missing) and PY (PYTHON, default python);
# enters the worktree and puts its checkout first on PYTHONPATH, with one OpenMP/MKL thread.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
runs=${1:-/work/runs}; frozen_rev=${FROZEN:-${2:-$(git -C "$here" rev-parse --short HEAD)}}
repo=$(cd "$here/../.." && pwd); frozen="$runs/frozen_$frozen_rev"
[ -d "$frozen" ] || git -C "$repo" worktree add "$frozen" "$frozen_rev"
cd "$frozen"
export PYTHONPATH="$frozen" OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
PY=${PYTHON:-python}
