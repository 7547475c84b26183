#!/usr/bin/env bash
# End-to-end reliability check of the `fedcluster` command: bad inputs are refused with one
# line before anything is written, and runs are never lost, overwritten or mixed (ownership,
# locks, concurrent starts, Ctrl-C, kill -9 and resume, divergence, multirun re-runs, report).
# Usage: bash scripts/reliability_check.sh [WORK_DIR]     (about 5 minutes on 2 CPU cores)
# Prints one line per case and then "N passed, M failed"; exits 1 if any case failed.
set -u
work=${1:-$(mktemp -d /tmp/fedcluster_reliability.XXXX)}
mkdir -p "$work" && cd "$work" || exit 2
FC=${FEDCLUSTER:-fedcluster}
REPORT=${FEDCLUSTER_REPORT:-fedcluster-report}
BASE=(partition.num_clients=10 partition.min_samples=20 partition.max_samples=30 train.epochs=1 rounds=2
      dataset.test_size=100 progress=false plots=false)
SMALL=("${BASE[@]}" algorithm.selection_size=5)   # FedSoft (the default) picks 5 of the 10 clients
passed=0; failed=0

ok()   { passed=$((passed + 1)); echo "PASS  $1"; }
bad()  { failed=$((failed + 1)); echo "FAIL  $1${2:+ -- $2}"; }
tree_hash() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16); }

# expect_refusal NEEDLE ARGS...: exit 2, exactly one stderr line containing NEEDLE, no traceback,
# and no output directory left behind.
expect_refusal() {
  local needle=$1; shift
  local dir="$work/refused"
  rm -rf "$dir"
  local args=("${SMALL[@]}")
  [[ " $* " == *" algorithm="* ]] && args=("${BASE[@]}")   # other algorithms have no selection_size
  local err; err=$("$FC" "${args[@]}" "$@" "hydra.run.dir=$dir" 2>&1 >/dev/null); local rc=$?
  local lines; lines=$(printf '%s\n' "$err" | grep -c .)
  if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && [[ "$err" == *"$needle"* ]] && [[ "$err" != *Traceback* ]] && [ ! -e "$dir" ]; then
    ok "refused: $* -> ${err:0:110}"
  else
    bad "refused: $*" "rc=$rc lines=$lines dir_left=$([ -e "$dir" ] && echo yes || echo no) err=${err:0:300}"
  fi
}

echo "== bad inputs (each refused with one line before anything is written)"
expect_refusal "train.lr=nan is not a finite number" train.lr=nan
expect_refusal "train.lr=inf is not a finite number" train.lr=inf
expect_refusal "train.lr=-1.0 is out of range" train.lr=-1
expect_refusal "train.lr=0.0 is out of range" train.lr=0
expect_refusal "eval_every=0 is out of range" eval_every=0
expect_refusal "eval_every=-1 is out of range" eval_every=-1
expect_refusal "checkpoint_every=-1 is out of range" checkpoint_every=-1
expect_refusal "rounds=0 is out of range" rounds=0
expect_refusal "rounds=-5 is out of range" rounds=-5
expect_refusal "seed=-1 is out of range" seed=-1
expect_refusal "train.epochs=0 is out of range" train.epochs=0
expect_refusal "train.batch_size=0 is out of range" train.batch_size=0
expect_refusal "train.steps=0 is out of range" train.steps=0
expect_refusal "train.momentum=1.0 is out of range" train.momentum=1.0
expect_refusal "train.momentum=-0.1 is out of range" train.momentum=-0.1
expect_refusal "train.weight_decay=-1.0 is out of range" train.weight_decay=-1
expect_refusal "train.weight_decay=nan is not a finite" train.weight_decay=nan
expect_refusal "train.optimizer='rmsprop' is unknown" train.optimizer=rmsprop
expect_refusal "partition.num_clients=0 is out of range" partition.num_clients=0
expect_refusal "this run needs at least" partition.num_clients=100000000   # ~577 GiB: refused on any machine
expect_refusal "partition.min_samples=0 is out of range" partition.min_samples=0
expect_refusal "min_samples=100 exceeds partition.max_samples=50" partition.min_samples=100 partition.max_samples=50
expect_refusal "partition.local_test_fraction=1.5 is out of range" partition.local_test_fraction=1.5
expect_refusal "partition.local_test_fraction=nan is not a finite" partition.local_test_fraction=nan
expect_refusal "dataset.theta_var=-1.0 is out of range" dataset.theta_var=-1
expect_refusal "dataset.noise_std=inf is not a finite" dataset.noise_std=inf
expect_refusal "dataset.dim=0 is out of range" dataset.dim=0
expect_refusal "dataset.test_size=0 is out of range" dataset.test_size=0
expect_refusal "dataset.delta=0.0 is out of range" dataset=separated_regression dataset.delta=0
expect_refusal "num_clusters=0 is out of range" num_clusters=0
expect_refusal "algorithm.lam=-1.0 is out of range" algorithm.lam=-1
expect_refusal "algorithm.tau=0 is out of range" algorithm.tau=0
expect_refusal "algorithm.selection_size=0 is out of range" algorithm.selection_size=0
expect_refusal "algorithm.smoother=nan is not a finite" algorithm.smoother=nan
expect_refusal "algorithm.selection_size=500" algorithm.selection_size=500
expect_refusal "algorithm.client_fraction=0.0 is out of range" algorithm=fedavg algorithm.client_fraction=0
expect_refusal "algorithm.client_fraction=1.5 is out of range" algorithm=fedavg algorithm.client_fraction=1.5
expect_refusal "algorithm.mu=-1.0 is out of range" algorithm=fedprox algorithm.mu=-1
expect_refusal "algorithm.eps1=-1.0 is out of range" algorithm=cfl algorithm.eps1=-1
expect_refusal "divergence_factor=0.0 is out of range" divergence_factor=0
expect_refusal "model=letters_cnn does not fit dataset=synthetic's inputs (shape (10,))" model=letters_cnn
expect_refusal "model=lenet does not fit dataset=digits's inputs (shape (1, 8, 8))" model=lenet dataset=digits partition=random
expect_refusal "engine='fast' is unknown" engine=fast
expect_refusal "hardware.precision='fp16' is not allowed" hardware.precision=fp16
if ! python -c "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  expect_refusal "no CUDA GPU is available" hardware=cuda
fi

echo "== output directories"
touch "$work/afile"
err=$("$FC" "${SMALL[@]}" "hydra.run.dir=$work/afile" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [[ "$err" == *"is an existing file"* ]] && [ "$(echo "$err" | grep -c .)" -eq 1 ] \
  && ok "run dir is a file -> $err" || bad "run dir is a file" "rc=$rc $err"
err=$("$FC" "${SMALL[@]}" "hydra.run.dir=/proc/fedcluster_check/run" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [[ "$err" == *"cannot be created"* ]] && [ "$(echo "$err" | grep -c .)" -eq 1 ] \
  && ok "run dir cannot be created -> $err" || bad "run dir cannot be created" "rc=$rc $err"
mkdir -p "$work/foreign" && echo notes > "$work/foreign/notes.txt"
err=$("$FC" "${SMALL[@]}" "hydra.run.dir=$work/foreign" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [[ "$err" == *"holds no fedcluster run"* ]] && [ "$(ls -A "$work/foreign")" = "notes.txt" ] \
  && ok "a non-empty foreign directory is refused and untouched" || bad "foreign directory" "rc=$rc $err"

echo "== ownership: finished runs are never replaced or redone"
run0="$work/run0"
"$FC" "${SMALL[@]}" "hydra.run.dir=$run0" 2>/dev/null; before=$(tree_hash "$run0")
err=$("$FC" "${SMALL[@]}" seed=1 rounds=3 "hydra.run.dir=$run0" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [[ "$err" == *"seed: 0 -> 1"* ]] && [ "$(tree_hash "$run0")" = "$before" ] \
  && ok "another config refused, directory byte-identical -> ${err:0:140}" || bad "another config" "rc=$rc $err"
err=$("$FC" "${SMALL[@]}" "hydra.run.dir=$run0" 2>&1 >/dev/null); rc=$?
[ $rc -eq 0 ] && [[ "$err" == *"already holds this config's finished run"* ]] && [ "$(tree_hash "$run0")" = "$before" ] \
  && ok "same config, finished: not redone" || bad "same config finished" "rc=$rc $err"
err=$("$FC" "${SMALL[@]}" seed=1 overwrite=true "hydra.run.dir=$run0" 2>&1 >/dev/null); rc=$?
[ $rc -eq 0 ] && grep -q '"seed": 1' "$run0/summary.json" && ok "overwrite=true replaces it" || bad "overwrite" "rc=$rc $err"
modes=$(stat -c '%a' "$run0"/*.csv "$run0"/*.json "$run0"/config.yaml | sort -u | tr '\n' ' ')
[ "$modes" = "644 " ] && ok "result files are 0644 under umask 022" || bad "file modes" "$modes"

echo "== concurrency"
lockdir="$work/locked"
"$FC" "${SMALL[@]}" rounds=400 checkpoint_every=0 "hydra.run.dir=$lockdir" 2>/dev/null & first=$!
for _ in $(seq 300); do [ -e "$lockdir/config.yaml" ] && break; sleep 0.2; done
err=$("$FC" "${SMALL[@]}" rounds=400 checkpoint_every=0 "hydra.run.dir=$lockdir" 2>&1 >/dev/null); rc=$?
alive=$(kill -0 $first 2>/dev/null && echo yes || echo no)
kill $first 2>/dev/null; wait $first 2>/dev/null
[ $rc -eq 2 ] && [[ "$err" == *"in use by another fedcluster process"* ]] && [ "$alive" = yes ] \
  && ok "second process on a running directory fails at once -> ${err:0:120}" || bad "lock" "rc=$rc alive=$alive $err"
mkdir -p "$work/together" && (cd "$work/together" && { "$FC" "${SMALL[@]}" 2>/dev/null & "$FC" "${SMALL[@]}" 2>/dev/null & wait; })
n=$(find "$work/together/outputs/runs" -name summary.json | wc -l)
[ "$n" -eq 2 ] && ok "two runs started together with the default pattern: 2 directories" || bad "default pattern" "$n summaries"

echo "== interruption and resume"
intdir="$work/interrupted"
set -m   # job control: a background job would otherwise start with SIGINT ignored, like no terminal's Ctrl-C
"$FC" "${SMALL[@]}" rounds=80 checkpoint_every=2 "hydra.run.dir=$intdir" 2> "$work/int.err" & pid=$!
set +m
for _ in $(seq 300); do [ -e "$intdir/checkpoint.pt" ] && break; sleep 0.1; done
kill -INT $pid; wait $pid; rc=$?
err=$(cat "$work/int.err")
[ $rc -eq 130 ] && [[ "$err" == *"interrupted after"* ]] && [ "$(echo "$err" | grep -c .)" -eq 1 ] \
  && ok "Ctrl-C -> exit 130, one line: ${err:0:150}" || bad "Ctrl-C" "rc=$rc $err"
"$FC" "${SMALL[@]}" rounds=80 checkpoint_every=2 "hydra.run.dir=$intdir" 2>/dev/null; rc=$?
"$FC" "${SMALL[@]}" rounds=80 checkpoint_every=2 "hydra.run.dir=$work/uninterrupted" 2>/dev/null
[ $rc -eq 0 ] && cmp -s "$intdir/metrics.csv" "$work/uninterrupted/metrics.csv" \
  && ok "the same command resumes; metrics identical to an uninterrupted run" || bad "resume after Ctrl-C" "rc=$rc"
killdir="$work/killed"
"$FC" "${SMALL[@]}" rounds=80 checkpoint_every=2 "hydra.run.dir=$killdir" 2>/dev/null & pid=$!
for _ in $(seq 300); do [ -e "$killdir/checkpoint.pt" ] && break; sleep 0.1; done
sleep 0.5; kill -9 $pid; wait $pid 2>/dev/null
touch "$killdir/.metrics.csv.stale.tmp"
"$FC" "${SMALL[@]}" rounds=80 checkpoint_every=2 "hydra.run.dir=$killdir" 2>/dev/null; rc=$?
[ $rc -eq 0 ] && cmp -s "$killdir/metrics.csv" "$work/uninterrupted/metrics.csv" && [ -z "$(ls -A "$killdir" | grep '\.tmp$')" ] \
  && ok "kill -9 then resume: identical metrics, stale temp files removed" || bad "kill -9 resume" "rc=$rc"

echo "== divergence"
err=$("$FC" "${SMALL[@]}" rounds=5 train.lr=1e6 "hydra.run.dir=$work/diverged" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [[ "$err" == *"train.lr=1000000.0"* ]] && [[ "$err" == *"client"* ]] && grep -q '"status": "diverged"' "$work/diverged/summary.json" \
  && ok "divergence stops with one line, summary marked diverged -> ${err:0:150}" || bad "divergence" "rc=$rc $err"

echo "== multirun re-run"
sweep="$work/sweep"
"$FC" -m "${SMALL[@]}" seed=0,1 "hydra.sweep.dir=$sweep" >/dev/null 2>&1
job=$(find "$sweep" -mindepth 1 -maxdepth 1 -type d -name '*seed=0*' | head -1)
before=$(tree_hash "$job")
err=$("$FC" -m "${SMALL[@]}" seed=0,1 checkpoint_every=3 plots=true "hydra.sweep.dir=$sweep" 2>&1 >/dev/null); rc=$?
[ $rc -eq 0 ] && [ "$(echo "$err" | grep -c "already holds")" -eq 2 ] && [ "$(tree_hash "$job")" = "$before" ] \
  && ok "re-running a sweep skips its finished jobs (volatile keys do not change job directories)" || bad "multirun re-run" "rc=$rc $err"

echo "== report"
grid="$work/grid"
"$FC" -m "${BASE[@]}" algorithm=fedavg train.lr=0.01,0.001 seed=0,1,2 "hydra.sweep.dir=$grid" >/dev/null 2>&1
out=$("$REPORT" "$grid" 2>&1); rc=$?
rows=$(printf '%s\n' "$out" | grep -cE '^\| 0\.(01|001) \| 3 \|')   # train.lr | seeds=3 | ...
[ $rc -eq 0 ] && [ "$rows" -eq 2 ] && [[ "$out" == *"train.lr"* ]] \
  && ok "report: 2 learning rates x 3 seeds -> 2 rows, train.lr named as varying" || bad "report grouping" "rc=$rc rows=$rows"
cut=$(find "$grid" -path '*seed=0*' -name summary.json | head -1)
echo '{"algorithm": "fedavg", "versions": {"fedcl' > "$cut"
out=$("$REPORT" "$grid" 2>&1); rc=$?
[ $rc -eq 0 ] && [[ "$out" == *"$(basename "$(dirname "$cut")")"* ]] && [[ "$out" != *Traceback* ]] \
  && ok "report: a truncated summary.json is listed as skipped" || bad "report truncated summary" "rc=$rc ${out:0:300}"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
