#!/usr/bin/env bash
# End-to-end reliability check of the `fedcluster` command: bad inputs are refused with one
# line before anything is written, and runs are never lost, overwritten or mixed (ownership,
# locks, concurrent starts, Ctrl-C, kill -9 and resume, divergence, multirun re-runs, report).
# Usage: bash tests/reliability_check.sh [WORK_DIR]     (about 5 minutes on 2 CPU cores)
# Prints one line per case and then "N passed, M failed"; exits 1 if any case failed.
# Each case is a fresh `fedcluster` process as a user starts it (about 4.5 CPU-seconds before it can
# refuse: 2.4 s of it importing torch), so this keeps one or two cases per rule; tests/ hold the rest
# (test_input_checks.py, test_config_errors.py, test_trust.py run the other values in-process).
set -u
work=${1:-$(mktemp -d /tmp/fedcluster_reliability.XXXX)}
# the cases read what they leave behind (a refusal must leave no folder): an earlier check's files would fail them
if [ -e "$work" ] && [ -n "$(ls -A "$work" 2>/dev/null)" ]; then
  echo "reliability_check.sh: WORK_DIR $work is not empty; allowed: a new or empty folder" >&2; exit 2
fi
mkdir -p "$work" && cd "$work" || exit 2
FC=${FEDCLUSTER:-fedcluster}
REPORT=${FEDCLUSTER_REPORT:-fedcluster-report}
BASE=(partition.num_clients=10 partition.min_samples=20 partition.max_samples=30 train.epochs=1 rounds=2
      dataset.test_size=100 progress=false plots=false)
SMALL=("${BASE[@]}" algorithm.selection_size=5)   # FedSoft (the default) picks 5 of the 10 clients
passed=0; failed=0
section() { echo "== $1 (at ${SECONDS}s)"; }

ok()   { echo "PASS  $1"; }
bad()  { echo "FAIL  $1${2:+ -- $2}"; }
with_sigint() { exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' "$@"; }
tree_hash() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16); }

# expect_refusal NEEDLE ARGS...: exit 2, exactly one stderr line containing NEEDLE, no traceback,
# and nothing left behind: the run directory is three levels below a new folder, which must not
# exist afterwards (a refusal removes every directory it created). Cases run two at a time
# (`settle` waits for them and counts their results).
case_no=0
expect_refusal() {
  local needle=$1; shift
  case_no=$((case_no + 1))
  local top="$work/refused_$case_no"
  local args=("${SMALL[@]}")
  [[ " $* " == *" algorithm="* || " $* " == *" +preset="* ]] && args=("${BASE[@]}")   # other algorithms have no selection_size
  (
    err=$("$FC" "${args[@]}" "$@" "hydra.run.dir=$top/a/b/c" 2>&1 >/dev/null); rc=$?
    lines=$(printf '%s\n' "$err" | grep -c .)
    if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && [[ "$err" == *"$needle"* ]] && [[ "$err" != *Traceback* ]] && [ ! -e "$top" ]; then
      echo "PASS  refused: $* -> ${err:0:110}"
    else
      echo "FAIL  refused: $* -- rc=$rc lines=$lines left=$([ -e "$top" ] && echo yes || echo no) err=${err:0:300}"
    fi
  ) > "$work/case_$case_no.txt" &
  [ "$(jobs -rp | wc -l)" -ge 2 ] && wait -n
}
settle() {
  wait
  local f
  for f in $(ls "$work"/case_*.txt 2>/dev/null | sort -V); do
    cat "$f"
    rm -f "$f"
  done
}

main() {
section "bad inputs (each refused with one line before anything is written)"
expect_refusal "train.lr=nan is not a finite number" train.lr=nan
expect_refusal "train.lr=-1.0 is out of range" train.lr=-1
expect_refusal "eval_every=0 is out of range" eval_every=0
expect_refusal "checkpoint_every=-1 is out of range" checkpoint_every=-1
expect_refusal "rounds=0 is out of range" rounds=0
expect_refusal "seed=-1 is out of range" seed=-1
expect_refusal "train.epochs=0 is out of range" train.epochs=0
expect_refusal "train.batch_size=0 is out of range" train.batch_size=0
expect_refusal "train.momentum=1.0 is out of range" train.momentum=1.0
expect_refusal "train.weight_decay=-1.0 is out of range" train.weight_decay=-1
expect_refusal "train.optimizer='rmsprop' is unknown" train.optimizer=rmsprop
expect_refusal "partition.num_clients=0 is out of range" partition.num_clients=0
expect_refusal "this run needs at least" partition.num_clients=100000000   # ~577 GiB: refused on any machine
expect_refusal "min_samples=100 exceeds partition.max_samples=50" partition.min_samples=100 partition.max_samples=50
expect_refusal "partition.local_test_fraction=1.5 is out of range" partition.local_test_fraction=1.5
expect_refusal "dataset.theta_var=-1.0 is out of range" dataset.theta_var=-1
expect_refusal "dataset.delta=0.0 is out of range" dataset=separated_regression dataset.delta=0
expect_refusal "num_clusters=0 is out of range" num_clusters=0
expect_refusal "algorithm.lam=-1.0 is out of range" algorithm.lam=-1
expect_refusal "algorithm.selection_size=0 is out of range" algorithm.selection_size=0
expect_refusal "algorithm.smoother=nan is not a finite" algorithm.smoother=nan
expect_refusal "algorithm.selection_size=500" algorithm.selection_size=500
expect_refusal "algorithm.client_fraction=0.0 is out of range" algorithm=fedavg algorithm.client_fraction=0
expect_refusal "algorithm.mu=-1.0 is out of range" algorithm=fedprox algorithm.mu=-1
expect_refusal "algorithm.eps1=-1.0 is out of range" algorithm=cfl algorithm.eps1=-1
expect_refusal "model=letters_cnn does not fit dataset=synthetic's inputs (shape (10,))" model=letters_cnn
expect_refusal "model=lenet does not fit dataset=digits's inputs (shape (1, 8, 8))" model=lenet dataset=digits partition=random
expect_refusal "engine='fast' is unknown" engine=fast
expect_refusal "hardware.precision='fp16' is not allowed" hardware.precision=fp16
if ! python -c "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  expect_refusal "no CUDA GPU is available" hardware=cuda
fi


section "composition errors (Hydra's own, as one line)"
expect_refusal "train.lr=abc: wrong type for train.lr; allowed: a number" train.lr=abc
expect_refusal "partition.num_clients=1.5: wrong type" partition.num_clients=1.5
expect_refusal "seed=: wrong type" seed=
expect_refusal "plots=maybe: wrong type for plots; allowed: true or false" plots=maybe
expect_refusal "rouns is not a setting (did you mean rounds?)" rouns=3
expect_refusal "rouns (did you mean rounds?) is not a fedcluster setting" +rouns=3
expect_refusal "algorithm.trim is not a fedcluster setting" +algorithm.trim=0.1
expect_refusal "algorithm.tua is not a setting (did you mean tau?)" algorithm.tua=2
expect_refusal "algorithm=nope is unknown; allowed: cfl" algorithm=nope
expect_refusal "dataset=cifar is unknown (did you mean cifar10?)" dataset=cifar
expect_refusal "model=cnn is unknown" model=cnn
expect_refusal "preset=fedsoft/table9 is unknown" +preset=fedsoft/table9
expect_refusal "train is a group of settings" train=3
expect_refusal "cannot read the argument 'dir'" "hydra.run.dir=my" dir
expect_refusal "cannot read the argument" "train.lr=(0.1"
expect_refusal "rounds is missing (deleted with ~rounds?)" '~rounds'
expect_refusal "train.lr cannot be resolved" 'train.lr=${nope}'

section "input checks: models that cannot train on the data, memory, values, damaged data files"
expect_refusal "model.vocab_size cannot be resolved with model=textcnn, dataset=digits" model=textcnn dataset=digits partition=random
expect_refusal "model=textcnn does not fit dataset=digits's inputs" model=textcnn model.vocab_size=100 dataset=digits partition=random
expect_refusal "model=mlp does not fit dataset=digits's inputs (shape (1, 8, 8), task reconstruction)" model=mlp dataset=digits partition=random dataset.unsupervised=true
expect_refusal "model=fc_autoencoder does not fit dataset=synthetic's inputs (shape (10,), task regression)" model=fc_autoencoder
expect_refusal "the classification loss needs (4, 10)" model=fc_autoencoder dataset=digits partition=random
expect_refusal "algorithm=fedproto reads the model's features but model=linear has none" algorithm=fedproto model=linear dataset=digits 'dataset.distributions=[{rotation:0}]' partition=random
expect_refusal "dataset.dim=1000000000: this run needs at least" dataset.dim=1000000000
expect_refusal "dataset.test_size=1000000000: this run needs at least" dataset.test_size=1000000000
expect_refusal "partition.max_samples=100000: this run needs at least" dataset.dim=100000 partition.min_samples=100 partition.max_samples=100000
expect_refusal "model=mlp on inputs of shape (10,): this run needs at least" model=mlp 'model.hidden=[100000,100000]'
expect_refusal "model.hidden[0]=0 is out of range; allowed: >= 1" model=mlp 'model.hidden=[0]'
expect_refusal "model.hidden=[] is empty" model=fc_autoencoder 'model.hidden=[]' dataset=digits partition=random dataset.unsupervised=true
expect_refusal "model.channels=[4] has 1 entries; allowed: exactly 2" model=conv_autoencoder 'model.channels=[4]' dataset=digits partition=random dataset.unsupervised=true
expect_refusal "model.dropout=1.0 is out of range" model=bn_cnn model.dropout=1.0 dataset=digits partition=random
expect_refusal "hardware.precision='tf32' is an NVIDIA GPU mode" hardware.precision=tf32
expect_refusal "rounds=99999999999999999999 does not fit in 64 bits" rounds=99999999999999999999
expect_refusal "seed=18446744073709551616 does not fit in 64 bits" seed=18446744073709551616
expect_refusal "rounds=2000000 is out of range; allowed: in [1, 1000000]" rounds=2000000
expect_refusal "train.batch_size=100000000000 is out of range" train.batch_size=100000000000
expect_refusal "objective=local_val_accuracy is not a metric of this run" objective=local_val_accuracy
expect_refusal "is a reconstruction task" objective=local_val_accuracy model=fc_autoencoder dataset=digits partition=random dataset.unsupervised=true
expect_refusal "objective=local_val_mse is not a metric of this run" objective=local_val_mse dataset=digits partition=random
expect_refusal "algorithm.server_lr=-1.0 is out of range" algorithm=clove algorithm.server_lr=-1
expect_refusal "distribution rot0 has 674 train images but the partition asks for" dataset=digits partition=random partition.min_samples=2000 partition.max_samples=3000
fake_mnist() {   # fake_mnist DIR [gz]: 4 IDX files of 200/60 28x28 images under DIR/MNIST/raw
  python3 - "$1" "${2:-}" <<'PY'
import gzip, struct, sys, pathlib, random
raw = pathlib.Path(sys.argv[1]) / "MNIST" / "raw"; raw.mkdir(parents=True, exist_ok=True)
rnd = random.Random(0)
def idx(name, shape):
    n = 1
    for s in shape: n *= s
    data = bytes([0, 0, 8, len(shape)]) + b"".join(struct.pack(">I", s) for s in shape) + bytes(rnd.randrange(10) for _ in range(n))
    if sys.argv[2]: (raw / (name + ".gz")).write_bytes(gzip.compress(data))
    else: (raw / name).write_bytes(data)
idx("train-images-idx3-ubyte", (200, 28, 28)); idx("train-labels-idx1-ubyte", (200,))
idx("t10k-images-idx3-ubyte", (60, 28, 28)); idx("t10k-labels-idx1-ubyte", (60,))
PY
}
MN=(dataset=mnist model=lenet)
d=$work/data_trunc; fake_mnist "$d"; f=$d/MNIST/raw/train-images-idx3-ubyte; head -c 5000 "$f" > "$f.tmp" && mv "$f.tmp" "$f"
expect_refusal "$f: truncated: header says 200x28x28 = 156,800 bytes, file has 4,984" "${MN[@]}" dataset.root=$d
d=$work/data_magic; fake_mnist "$d"; f=$d/MNIST/raw/train-images-idx3-ubyte; printf '\x00\x00\x0d\x03' | dd of="$f" conv=notrunc status=none
expect_refusal "$f: wrong magic 0x00000d03; expected an unsigned-byte IDX file" "${MN[@]}" dataset.root=$d
d=$work/data_empty; fake_mnist "$d"; f=$d/MNIST/raw/t10k-labels-idx1-ubyte; : > "$f"
expect_refusal "$f: empty file (0 bytes)" "${MN[@]}" dataset.root=$d
d=$work/data_gztrunc; fake_mnist "$d" gz; f=$d/MNIST/raw/train-images-idx3-ubyte.gz; head -c 3000 "$f" > "$f.tmp" && mv "$f.tmp" "$f"
expect_refusal "$f: truncated gzip" "${MN[@]}" dataset.root=$d
d=$work/data_notgz; fake_mnist "$d" gz; f=$d/MNIST/raw/train-labels-idx1-ubyte.gz; echo "not gzip" > "$f"
expect_refusal "$f: not gzip" "${MN[@]}" dataset.root=$d
d=$work/data_labels; fake_mnist "$d"; f=$d/MNIST/raw/train-labels-idx1-ubyte; python3 -c "import sys; open(sys.argv[1], 'r+b').write(bytes([0, 0, 8, 1, 0, 0, 0, 200]) + bytes([200]) * 200)" "$f"
expect_refusal "$f: holds label 200; MNIST has 10 classes" "${MN[@]}" dataset.root=$d
d=$work/data_cifar; mkdir -p "$d/cifar-10-batches-py"; for b in data_batch_1 data_batch_2 data_batch_3 data_batch_4 data_batch_5 test_batch; do printf 'garbage, not a pickle' > "$d/cifar-10-batches-py/$b"; done
expect_refusal "$d/cifar-10-batches-py/data_batch_1: not a pickled CIFAR-10 batch" dataset=cifar10 model=lenet dataset.root=$d
DG=(dataset=digits partition=random)
expect_refusal "dataset.distributions[0].rotation='abc' is not allowed" "${DG[@]}" 'dataset.distributions=[{rotation:abc}]'
expect_refusal "dataset.distributions[0].rotaton is not a setting" "${DG[@]}" 'dataset.distributions=[{rotaton:0}]'
expect_refusal "dataset.distributions='abc' is not a list" "${DG[@]}" dataset.distributions=abc
expect_refusal "dataset.augment.pad is not a setting" "${DG[@]}" 'dataset.augment={pad:4}'
expect_refusal "dataset.reader_kwargs.foo is not a setting of the digits reader" "${DG[@]}" '+dataset.reader_kwargs={foo:1}'

settle

# The cases below run in two lanes side by side (each mostly one process at a time; the
# refusals above already keep both cores busy); each lane's lines are printed when both are done.
lane_a() {
section "output directories"
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

section "ownership: finished runs are never replaced or redone"
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

section "concurrency"
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

section "interruption and resume"
intdir="$work/interrupted"
# SIGINT at its default in the child, as in a terminal (a background job of a script starts with it ignored)
with_sigint "$FC" "${SMALL[@]}" rounds=40 checkpoint_every=2 "hydra.run.dir=$intdir" 2> "$work/int.err" & pid=$!
for _ in $(seq 300); do [ -e "$intdir/checkpoint.pt" ] && break; sleep 0.1; done
kill -INT $pid; wait $pid; rc=$?
err=$(cat "$work/int.err")
[ $rc -eq 130 ] && [[ "$err" == *"interrupted after"* ]] && [ "$(echo "$err" | grep -c .)" -eq 1 ] \
  && ok "Ctrl-C -> exit 130, one line: ${err:0:150}" || bad "Ctrl-C" "rc=$rc $err"
"$FC" "${SMALL[@]}" rounds=40 checkpoint_every=2 "hydra.run.dir=$intdir" 2>/dev/null; rc=$?
"$FC" "${SMALL[@]}" rounds=40 checkpoint_every=2 "hydra.run.dir=$work/uninterrupted" 2>/dev/null
[ $rc -eq 0 ] && cmp -s "$intdir/metrics.csv" "$work/uninterrupted/metrics.csv" \
  && ok "the same command resumes; metrics identical to an uninterrupted run" || bad "resume after Ctrl-C" "rc=$rc"
killdir="$work/killed"
"$FC" "${SMALL[@]}" rounds=40 checkpoint_every=2 "hydra.run.dir=$killdir" 2>/dev/null & pid=$!
for _ in $(seq 300); do [ -e "$killdir/checkpoint.pt" ] && break; sleep 0.1; done
sleep 0.5; kill -9 $pid; wait $pid 2>/dev/null
# what the kill hit, for a failure's message (the case failed once in many runs, 2026-11-26, with rc=0 only; one cause
# found: a run that ended before the kill was re-run as "nothing redone" without removing temp files, mended 2026-11-27)
at_kill="summary.json $([ -e "$killdir/summary.json" ] && echo present || echo absent) after the kill, metrics.csv $(grep -c . "$killdir/metrics.csv" 2>/dev/null || echo 0) lines"
touch "$killdir/.metrics.csv.stale.tmp"
"$FC" "${SMALL[@]}" rounds=40 checkpoint_every=2 "hydra.run.dir=$killdir" 2>/dev/null; rc=$?
left=$(ls -A "$killdir" | grep '\.tmp$' | tr '\n' ' ')
same=$(cmp -s "$killdir/metrics.csv" "$work/uninterrupted/metrics.csv" && echo yes || echo no)
[ $rc -eq 0 ] && [ "$same" = yes ] && [ -z "$left" ] \
  && ok "kill -9 then resume: identical metrics, stale temp files removed" \
  || bad "kill -9 resume" "rc=$rc identical=$same temp files left: ${left:-none}; $at_kill"


section "divergence"
err=$("$FC" "${SMALL[@]}" rounds=5 train.lr=1e6 "hydra.run.dir=$work/diverged" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [[ "$err" == *"train.lr=1000000.0"* ]] && [[ "$err" == *"client"* ]] && grep -q '"status": "diverged"' "$work/diverged/summary.json" \
  && ok "divergence stops with one line, summary marked diverged -> ${err:0:150}" || bad "divergence" "rc=$rc $err"

section "multirun re-run"
sweep="$work/sweep"
"$FC" -m "${SMALL[@]}" seed=0,1 "hydra.sweep.dir=$sweep" >/dev/null 2>&1
job=$(find "$sweep" -mindepth 1 -maxdepth 1 -type d -name '*seed=0*' | head -1)
before=$(tree_hash "$job")
err=$("$FC" -m "${SMALL[@]}" seed=0,1 checkpoint_every=3 plots=true "hydra.sweep.dir=$sweep" 2>&1 >/dev/null); rc=$?
[ $rc -eq 0 ] && [ "$(echo "$err" | grep -c "already holds")" -eq 2 ] && [ "$(tree_hash "$job")" = "$before" ] \
  && ok "re-running a sweep skips its finished jobs (volatile keys do not change job directories)" || bad "multirun re-run" "rc=$rc $err"

section "refused sweeps leave nothing"
sweep_refused() {   # sweep_refused NEEDLE ARGS...: one line, exit 2, no sweep directory or parent left
  local needle=$1; shift
  local top="$work/sweep_refused_$RANDOM"
  err=$("$FC" -m "${SMALL[@]}" "$@" "hydra.sweep.dir=$top/a/b/c" 2>&1 >/dev/null); rc=$?
  [ $rc -eq 2 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [[ "$err" == *"$needle"* ]] && [ ! -e "$top" ] \
    && ok "refused sweep: $* -> ${err:0:110}" || bad "refused sweep: $*" "rc=$rc left=$([ -e "$top" ] && echo yes || echo no) ${err:0:300}"
}
sweep_refused "rouns is not a setting (did you mean rounds?)" rouns=2,3
sweep_refused "all 2 jobs of the sweep were refused, nothing was written: seed=abc: wrong type for seed" seed=abc,xyz
# one job that cannot be composed: reported in one line, the other job finishes, the sweep ends with one line
top="$work/sweep_partial_$RANDOM"
err=$("$FC" -m "${SMALL[@]}" seed=0,abc "hydra.sweep.dir=$top" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$(echo "$err" | grep -c '^fedcluster: error:')" -eq 1 ] && [[ "$err" == *"seed=abc: wrong type for seed"* ]] \
  && [[ "$(echo "$err" | tail -1)" == *"1 finished, 0 skipped (already finished), 1 failed; the table: fedcluster-report $top" ]] \
  && [ "$(ls "$top"/*/summary.json | wc -l)" -eq 1 ] \
  && ok "a sweep with one job that cannot be composed: the other finishes, one closing line" \
  || bad "partial sweep seed=0,abc" "rc=$rc ${err:0:400}"
sweep_refused "all 2 jobs of the sweep were refused, nothing was written: rounds=-1 is out of range" 'rounds=range(-1,1)'
sweep_refused "all 2 jobs of the sweep were refused" seed=0,1 train.lr=-1
mkdir -p "$work/preset_cwd"
err=$(cd "$work/preset_cwd" && "$FC" +preset=fedsoft/table1_synthetic train.lr=-1 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [[ "$err" == *"all 12 jobs of the sweep were refused"* ]] \
  && [ -z "$(ls -A "$work/preset_cwd")" ] && ok "a preset whose every job is refused: one line, no outputs/ folder" \
  || bad "refused preset" "rc=$rc $(ls -A "$work/preset_cwd") ${err:0:300}"
err=$("$FC" -m "${SMALL[@]}" seed=0,1 hydra.sweep.dir= 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [[ "$err" == *"hydra.sweep.dir=''"* ]] && ok "an empty hydra.sweep.dir is named" || bad "empty sweep dir" "rc=$rc $err"

section "Ctrl-C while starting"
for delay in 0.3 1.5 3.0; do
  d="$work/sigint_start_$delay"
  with_sigint "$FC" "${SMALL[@]}" rounds=12 checkpoint_every=2 "hydra.run.dir=$d" 2> "$work/start.err" & pid=$!
  sleep $delay; kill -INT $pid; wait $pid; rc=$?
  err=$(cat "$work/start.err")
  "$FC" "${SMALL[@]}" rounds=12 checkpoint_every=2 "hydra.run.dir=$d" 2>/dev/null; rc2=$?
  [ $rc -eq 130 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [[ "$err" == *"interrupted"* ]] && [[ "$err" != *Traceback* ]] && [ $rc2 -eq 0 ] \
    && ok "Ctrl-C ${delay} s after start: exit 130, one line, the same command then runs -> ${err:0:100}" \
    || bad "Ctrl-C ${delay} s after start" "rc=$rc rc2=$rc2 ${err:0:300}"
done

section "report"
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

}
lane_b() {
section "ownership cannot be defeated"
held="$work/held"; mkdir -p "$held"; ino=$(stat -c %i "$held")
err=$(python - "$held" "$FC" "${SMALL[@]}" <<'PY' 2>&1
import subprocess, sys
from fedcluster.run_records.rundir import locked
from pathlib import Path
held, fc, *args = sys.argv[1:]
with locked(Path(held)):   # the owner holds the still-empty directory
    p = subprocess.run([fc, *args, f"hydra.run.dir={held}"], capture_output=True, text=True)
    print(p.returncode, p.stderr.strip())
PY
)
[[ "$err" == "2 fedcluster: error: output directory $held is in use"* ]] && [ -d "$held" ] && [ "$(stat -c %i "$held")" = "$ino" ] \
  && ok "a refused process leaves the empty directory another holds (same inode)" || bad "held empty directory" "$err"
paused="$work/paused"
"$FC" "${SMALL[@]}" rounds=30 checkpoint_every=0 "hydra.run.dir=$paused" 2>/dev/null & owner=$!
for _ in $(seq 300); do [ -e "$paused/config.yaml" ] && break; sleep 0.05; done
kill -STOP $owner
e2=$("$FC" "${SMALL[@]}" rounds=30 checkpoint_every=0 "hydra.run.dir=$paused" 2>&1 >/dev/null); r2=$?
e3=$("$FC" "${SMALL[@]}" rounds=30 checkpoint_every=0 seed=1 "hydra.run.dir=$paused" 2>&1 >/dev/null); r3=$?
kill -CONT $owner; wait $owner; r1=$?
seeds=$(python -c "import json,yaml,pandas as pd,sys; d=sys.argv[1]; print(yaml.safe_load(open(d+'/config.yaml'))['seed'], json.load(open(d+'/summary.json'))['seed'], sorted(int(s) for s in pd.read_csv(d+'/metrics.csv')['seed'].unique()))" "$paused" 2>&1)
[ $r1 -eq 0 ] && [ $r2 -eq 2 ] && [ $r3 -eq 2 ] && [[ "$e2" == *"in use"* ]] && [[ "$e3" == *"in use"* ]] && [ "$seeds" = "0 0 [0]" ] \
  && ok "owner paused (SIGSTOP): same and other config refused, nothing mixed" || bad "paused owner" "r=$r1/$r2/$r3 seeds=$seeds $e2 $e3"
for trial in 1; do   # tests/cli/test_trust.py repeats it
  shared="$work/shared_$trial"; pids=()
  for extra in "" "" "" "seed=1" "seed=1"; do
    ("$FC" "${SMALL[@]}" $extra "hydra.run.dir=$shared" > /dev/null 2> "$shared.$RANDOM.err") & pids+=($!)
  done
  wait "${pids[@]}"
  wrote=$(cat "$shared".*.err | grep -c "fedcluster: wrote")
  tracebacks=$(cat "$shared".*.err | grep -c Traceback)
  multi=0; for f in "$shared".*.err; do [ "$(grep -c . "$f")" -le 1 ] || multi=1; done
  seeds=$(python -c "import json,yaml,pandas as pd,sys; d=sys.argv[1]; print(yaml.safe_load(open(d+'/config.yaml'))['seed'], json.load(open(d+'/summary.json'))['seed'], sorted(int(s) for s in pd.read_csv(d+'/metrics.csv')['seed'].unique()))" "$shared" 2>&1)
  [ "$wrote" -eq 1 ] && [ "$tracebacks" -eq 0 ] && [ $multi -eq 0 ] && [[ "$seeds" =~ ^(0\ 0\ \[0\]|1\ 1\ \[1\])$ ]] \
    && ok "5 processes (2 configs) started together, trial $trial: one owner, others one line, nothing mixed" \
    || bad "started together, trial $trial" "wrote=$wrote tracebacks=$tracebacks multi=$multi seeds=$seeds"
done

section "integrity: checkpoints"
ckref="$work/ck_reference"
"$FC" "${SMALL[@]}" rounds=12 checkpoint_every=2 "hydra.run.dir=$ckref" 2>/dev/null
damage() {   # damage FILE HOW
  python - "$1" "$2" <<'PY'
import os, sys
path, how = sys.argv[1:]
data = bytearray(open(path, "rb").read())
if how == "flip": data[len(data) // 2] ^= 0x01
elif how == "truncate": data = data[: len(data) // 3]
elif how == "empty": data = bytearray()
else: data = bytearray(os.urandom(4096))
open(path, "wb").write(bytes(data))
PY
}
killed_run() {   # a run of the reference config killed after its 2nd checkpoint
  "$FC" "${SMALL[@]}" rounds=12 checkpoint_every=2 "hydra.run.dir=$1" 2>/dev/null & local pid=$!
  for _ in $(seq 600); do [ -e "$1/checkpoint.prev.pt" ] && [ -e "$1/checkpoint.pt" ] && break; sleep 0.05; done
  kill -9 $pid; wait $pid 2>/dev/null
}
killed_run "$work/ck_killed"
for how in flip truncate empty garbage; do
  d="$work/ck_$how"; cp -r "$work/ck_killed" "$d"; damage "$d/checkpoint.pt" $how
  err=$("$FC" "${SMALL[@]}" rounds=12 checkpoint_every=2 "hydra.run.dir=$d" 2>&1 >/dev/null); rc=$?
  [ $rc -eq 0 ] && [[ "$err" == *"warning: $d/checkpoint.pt"*"resuming from the previous checkpoint"* ]] && cmp -s "$d/metrics.csv" "$ckref/metrics.csv" \
    && ok "checkpoint $how: set aside, the previous one resumes, same metrics -> $(echo "$err" | grep warning | cut -c1-150)" \
    || bad "checkpoint $how" "rc=$rc $err"
done
d="$work/ck_both"; cp -r "$work/ck_killed" "$d"; damage "$d/checkpoint.pt" flip; damage "$d/checkpoint.prev.pt" truncate
before=$(tree_hash "$d")
err=$("$FC" "${SMALL[@]}" rounds=12 checkpoint_every=2 "hydra.run.dir=$d" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [[ "$err" == *"overwrite=true"* ]] && [ "$(tree_hash "$d")" = "$before" ] \
  && ok "no good checkpoint left: one line saying what to do, nothing changed -> ${err:0:150}" || bad "both checkpoints damaged" "rc=$rc $err"

section "integrity: finished runs"
fin() { rm -rf "$1"; cp -r "$ckref" "$1"; }
check_finished() {   # check_finished NAME NEEDLE [ARGS]   (two at a time; `settle` counts them)
  local name=$1 needle=$2; shift 2
  case_no=$((case_no + 1))
  (
    d="$work/fin_$name"; before=$(tree_hash "$d")
    err=$("$FC" "${SMALL[@]}" rounds=12 checkpoint_every=2 "$@" "hydra.run.dir=$d" 2>&1 >/dev/null); rc=$?
    [ $rc -eq 2 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [[ "$err" == *"$needle"* ]] && [ "$(tree_hash "$d")" = "$before" ] \
      && echo "PASS  finished run, $name: refused, never rerun -> ${err:0:150}" || echo "FAIL  finished run, $name -- rc=$rc $err"
  ) > "$work/case_$case_no.txt" &
  [ "$(jobs -rp | wc -l)" -ge 2 ] && wait -n
}
fin "$work/fin_noconfig"; rm "$work/fin_noconfig/config.yaml"; check_finished noconfig "config.yaml is missing"
fin "$work/fin_nometrics"; rm "$work/fin_nometrics/metrics.csv"; check_finished nometrics "metrics.csv is missing"
fin "$work/fin_editmetrics"; sed -i '2s/,0\./,1./' "$work/fin_editmetrics/metrics.csv"; check_finished editmetrics "metrics.csv was changed"
fin "$work/fin_editconfig"; sed -i 's/^seed: 0/seed: 1/' "$work/fin_editconfig/config.yaml"; check_finished editconfig "config.yaml was changed" seed=1
fin "$work/fin_editconfig2"; sed -i 's/^seed: 0/seed: 1/' "$work/fin_editconfig2/config.yaml"; check_finished editconfig2 "seed: 1 -> 0"
fin "$work/fin_summary"; echo '{"status": "compl' > "$work/fin_summary/summary.json"; check_finished summary "summary.json is damaged"
fin "$work/fin_assign"; rm "$work/fin_assign/assignments.csv"; check_finished assign "assignments.csv is missing"
fin "$work/fin_summaryedit"; sed -i 's/"seed": 0/"seed": 5/' "$work/fin_summaryedit/summary.json"; check_finished summaryedit "summary.json was changed"
fin "$work/fin_summarygone"; rm "$work/fin_summarygone/summary.json"; check_finished summarygone "summary.json is missing"
settle

moved="$work/moving"
"$FC" "${SMALL[@]}" rounds=150 checkpoint_every=7 "hydra.run.dir=$moved" 2> "$work/moved.err" & pid=$!
for _ in $(seq 600); do [ -e "$moved/checkpoint.pt" ] && break; sleep 0.05; done
mv "$moved" "$work/moved_away"; wait $pid; rc=$?; err=$(cat "$work/moved.err")
[ $rc -eq 1 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [[ "$err" == *"the run directory was moved"* ]] && [ ! -e "$moved" ] \
  && ok "a run whose directory is moved away stops, writing nothing elsewhere -> ${err:0:120}" || bad "moved directory" "rc=$rc $err"

section "stop signals"
for sig in TERM USR1; do
  d="$work/sig_$sig"
  "$FC" "${SMALL[@]}" rounds=12 checkpoint_every=2 "hydra.run.dir=$d" 2> "$work/sig.err" & pid=$!
  for _ in $(seq 600); do [ -e "$d/checkpoint.pt" ] && break; sleep 0.05; done
  kill -$sig $pid; wait $pid; rc=$?
  err=$(cat "$work/sig.err"); want=$((128 + $(kill -l $sig)))
  "$FC" "${SMALL[@]}" rounds=12 checkpoint_every=2 "hydra.run.dir=$d" 2>/dev/null; rc2=$?
  [ $rc -eq $want ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [[ "$err" == *"interrupted by SIG$sig after"* ]] && [ $rc2 -eq 0 ] \
    && cmp -s "$d/metrics.csv" "$ckref/metrics.csv" \
    && ok "SIG$sig: exit $want, one line, the same command resumes to the same metrics -> ${err:0:130}" || bad "SIG$sig" "rc=$rc rc2=$rc2 $err"
done

section "write faults"
disk="$work/disk"; mkdir -p "$disk"
if mount -t tmpfs -o size=4m tmpfs "$disk" 2>/dev/null; then
  d="$disk/run"
  "$FC" "${SMALL[@]}" rounds=12 checkpoint_every=2 "hydra.run.dir=$d" 2> "$work/full.err" & pid=$!
  for _ in $(seq 600); do [ -e "$d/checkpoint.pt" ] && break; sleep 0.05; done
  dd if=/dev/zero of="$disk/filler" bs=64k 2>/dev/null; wait $pid; rc=$?
  err=$(cat "$work/full.err"); rm -f "$disk/filler"
  "$FC" "${SMALL[@]}" rounds=12 checkpoint_every=2 "hydra.run.dir=$d" 2>/dev/null; rc2=$?
  [ $rc -eq 1 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [[ "$err" == *"No space left on device"*"resumes from the checkpoint after round"* ]] \
    && [ $rc2 -eq 0 ] && cmp -s "$d/metrics.csv" "$ckref/metrics.csv" \
    && ok "disk full mid-run: one line naming the file, resumes after to the same metrics -> ${err:0:160}" || bad "disk full" "rc=$rc rc2=$rc2 $err"
  umount -l "$disk"
else
  echo "SKIP  disk full mid-run (cannot mount a tmpfs here)"
fi

section "overwrite=true is refused like any start: the finished run stays"
ow="$work/overwrite_refused"
"$FC" "${SMALL[@]}" "hydra.run.dir=$ow" 2>/dev/null; before=$(tree_hash "$ow")
for extra in model=lenet algorithm.selection_size=11; do
  err=$("$FC" "${SMALL[@]}" overwrite=true $extra "hydra.run.dir=$ow" 2>&1 >/dev/null); rc=$?
  [ $rc -eq 2 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [ "$(tree_hash "$ow")" = "$before" ] \
    && ok "overwrite=true $extra refused, the finished run byte-identical" || bad "overwrite=true $extra" "rc=$rc $err"
done

section "report labels: a run is placed beside a paper's numbers only if it is that table's run"
d="$work/labels_ifca"
"$FC" +preset=fedsoft/table1_synthetic algorithm=ifca "${BASE[@]}" \
  hydra.sweeper.params.seed=0 hydra.sweeper.params.partition=linear "hydra.sweep.dir=$d" >/dev/null 2>&1
out=$("$REPORT" "$d" 2>&1); rc=$?
[ "$rc" -eq 0 ] && [[ "$out" != *"## FedSoft Table 1"* ]] && [ ! -e "$d/report_fedsoft_table1_synthetic.csv" ] \
   && [[ "$out" == *"not shown under FedSoft Table 1 (synthetic)"*"algorithm.name ifca (the table's: fedsoft)"* ]] \
  && ok "report: the FedSoft Table 1 preset run with algorithm=ifca is not under FedSoft Table 1" \
  || bad "report labels: algorithm=ifca" "rc=$rc out=${out:0:300}"
d="$work/labels_data"
"$FC" +preset=fedsoft/table1_synthetic dataset=separated_regression dataset.num_distributions=2 \
  algorithm.selection_size=5 "${BASE[@]}" hydra.sweeper.params.seed=0 hydra.sweeper.params.partition=linear \
  "hydra.sweep.dir=$d" >/dev/null 2>&1
out=$("$REPORT" "$d" 2>&1); rc=$?
[ "$rc" -eq 0 ] && [[ "$out" != *"## FedSoft Table 1"* ]] && [[ "$out" == *"dataset.name separated_regression (the table's: synthetic)"* ]] \
  && ok "report: the FedSoft Table 1 preset on another data set is not under FedSoft Table 1" \
  || bad "report labels: other data set" "rc=$rc out=${out:0:300}"
d="$work/labels_minor"
"$FC" +preset=fedsoft/table1_synthetic "${BASE[@]}" algorithm.selection_size=5 partition.minor=0.3 \
  hydra.sweeper.params.seed=0 hydra.sweeper.params.partition=mix_10_90 "hydra.sweep.dir=$d" >/dev/null 2>&1
out=$("$REPORT" "$d" 2>&1); rc=$?
[ "$rc" -eq 0 ] && [[ "$out" != *"## FedSoft Table 1"* ]] && [[ "$out" == *"partition.minor 0.3 (the table's: 0.1)"* ]] \
  && ok "report: 30:70 data under the option mix_10_90 is not under FedSoft Table 1" \
  || bad "report labels: partition settings" "rc=$rc out=${out:0:300}"
}
trust_boundary() {
section "trust boundary: nothing runs from a file, nothing escapes its directory, a user's files stay"
killed_run() {   # a run of the reference config killed after its 2nd checkpoint
  "$FC" "${SMALL[@]}" rounds=12 checkpoint_every=2 "hydra.run.dir=$1" 2>/dev/null & local pid=$!
  for _ in $(seq 600); do [ -e "$1/checkpoint.prev.pt" ] && [ -e "$1/checkpoint.pt" ] && break; sleep 0.05; done
  kill -9 $pid; wait $pid 2>/dev/null
}
d="$work/tb_pickle"; killed_run "$d"
python - "$d" "$work/PWNED" "$FC" <<'PY' || bad "crafted pickle" "could not craft it"
import io, os, subprocess, sys, torch, yaml
from fedcluster.run_records.identity import config_fingerprint
from fedcluster.run_records.integrity import pack_checkpoint
run, marker = sys.argv[1], sys.argv[2]
class Boom:
    def __reduce__(self):
        return (os.system, (f"touch {marker}",))
fp = config_fingerprint(yaml.safe_load(open(f"{run}/config.yaml")))
for name in ("checkpoint.pt", "checkpoint.prev.pt"):
    b = io.BytesIO(); torch.save({"fingerprint": fp, "next_round": 4, "x": Boom()}, b)
    open(f"{run}/{name}", "wb").write(pack_checkpoint(b.getvalue(), fp, 4))
PY
err=$("$FC" "${SMALL[@]}" rounds=12 checkpoint_every=2 "hydra.run.dir=$d" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [ ! -e "$work/PWNED" ] && [[ "$err" == *"cannot be loaded"* ]] \
  && ok "crafted pickle checkpoint (header recomputed): nothing executed, one line -> ${err:0:140}" || bad "crafted pickle" "rc=$rc pwned=$([ -e "$work/PWNED" ] && echo yes) $err"
d="$work/tb_fifo"; killed_run "$d"; rm "$d/checkpoint.pt" "$d/checkpoint.prev.pt"; mkfifo "$d/checkpoint.pt"
err=$(timeout 120 "$FC" "${SMALL[@]}" rounds=12 checkpoint_every=2 "hydra.run.dir=$d" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [[ "$err" == *"named pipe"* ]] \
  && ok "checkpoint.pt a named pipe: refused at once, no hang -> ${err:0:120}" || bad "FIFO checkpoint" "rc=$rc $err"
top="$work/tb_escape"; mkdir -p "$top"
err=$("$FC" -m dataset=digits model=mlp partition=random algorithm=fedavg rounds=1 progress=false plots=false \
      partition.num_clients=4 'dataset.root=../../../../ESCAPED,data' "hydra.sweep.dir=$top/a/b/S" 2>&1 >/dev/null); rc=$?
outside=$(find "$top" -mindepth 1 -not -path "$top/a/b/S*" -not -path "$top/a" -not -path "$top/a/b" | head -3)
jobs=$(ls "$top/a/b/S"/*/summary.json 2>/dev/null | wc -l)
[ $rc -eq 0 ] && [ -z "$outside" ] && [ "$jobs" -eq 2 ] && ok "dataset.root=../../../../ESCAPED in a sweep: its job stays one folder inside the sweep" \
  || bad "sweep escape" "rc=$rc jobs=$jobs outside: $outside"
d="$work/tb_log"; killed_run "$d"; echo theirs > "$work/tb_outside.log"; rm "$d/run.log"; ln -s "$work/tb_outside.log" "$d/run.log"
err=$("$FC" "${SMALL[@]}" rounds=12 checkpoint_every=2 "hydra.run.dir=$d" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [ "$(cat "$work/tb_outside.log")" = theirs ] && [[ "$err" == *"symbolic link"*"run.log"* ]] \
  && ok "run.log a link to a file outside: refused, nothing appended -> ${err:0:120}" || bad "linked run.log" "rc=$rc $err"
d="$work/tb_user"; "$FC" "${SMALL[@]}" "hydra.run.dir=$d" 2>/dev/null
echo mine > "$d/my_analysis.csv"; echo mine > "$d/figure_for_paper.pdf"; echo mine > "$d/seed_comparison.png"
"$FC" "${SMALL[@]}" seed=1 overwrite=true "hydra.run.dir=$d" 2>/dev/null; rc=$?
[ $rc -eq 0 ] && [ "$(cat "$d/my_analysis.csv" "$d/figure_for_paper.pdf" "$d/seed_comparison.png")" = "$(printf 'mine\nmine\nmine')" ] && grep -q "seed: 1" "$d/config.yaml" \
  && ok "overwrite=true replaces the run and keeps the user's own files" || bad "overwrite keeps user files" "rc=$rc"
d="$work/tb_onlyuser"; mkdir -p "$d"; echo m > "$d/measurements.csv"; echo p > "$d/plot.png"; echo p > "$d/paper.pdf"; before=$(tree_hash "$d")
err=$("$FC" "${SMALL[@]}" overwrite=true "hydra.run.dir=$d" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$(tree_hash "$d")" = "$before" ] && [[ "$err" == *"holds no fedcluster run"* ]] \
  && ok "a folder of a user's files: refused even with overwrite=true, untouched" || bad "user folder + overwrite" "rc=$rc $err"
d="$work/tb_tblink"; "$FC" "${SMALL[@]}" "hydra.run.dir=$d" 2>/dev/null; mkdir -p "$work/tb_outside"; echo keep > "$work/tb_outside/x"
ln -s "$work/tb_outside" "$d/tensorboard"; before=$(tree_hash "$d")
err=$("$FC" "${SMALL[@]}" seed=1 overwrite=true "hydra.run.dir=$d" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [ "$(cat "$work/tb_outside/x")" = keep ] && [ "$(tree_hash "$d")" = "$before" ] \
  && ok "overwrite=true with tensorboard/ a link outside: one line, old run and outside intact" || bad "tensorboard link" "rc=$rc $err"
d="$work/tb_fail"; "$FC" "${SMALL[@]}" "hydra.run.dir=$d" 2>/dev/null; echo mine > "$d/notes.txt"; before=$(tree_hash "$d")
"$FC" "${SMALL[@]}" train.lr=1e6 overwrite=true "hydra.run.dir=$d" >/dev/null 2>&1; rc=$?
[ $rc -ne 0 ] && [ "$(tree_hash "$d")" = "$before" ] && ok "a replacement that fails (divergence) leaves the old run whole (rc=$rc)" || bad "failed replacement" "rc=$rc"
if python -c "import hydra_plugins.hydra_joblib_launcher" 2>/dev/null; then
  s="$work/tb_joblib"
  "$FC" -m "${SMALL[@]}" hydra/launcher=parallel rounds=150 checkpoint_every=0 seed=0,1,2,3 "hydra.sweep.dir=$s" > /dev/null 2> "$work/tb_joblib.err" & pid=$!
  victim=""
  for _ in $(seq 1200); do
    if ls "$s"/*/config.yaml >/dev/null 2>&1; then victim=$(pgrep -P $pid -f "popen_loky|LokyProcess" | head -1); [ -n "$victim" ] && break; fi; sleep 0.1
  done
  [ -n "$victim" ] && kill -9 "$victim"; wait $pid; rc=$?; err=$(cat "$work/tb_joblib.err")
  n=$(ls "$s"/*/summary.json 2>/dev/null | wc -l)
  [ $rc -eq 0 ] && [ "$n" -eq 4 ] && [ "$(echo "$err" | grep -c 'worker process of the sweep died')" -eq 1 ] && [[ "$err" != *Traceback* ]] \
    && ok "kill -9 of a joblib worker: its job named in one line and run again, all 4 finish -> $(echo "$err" | grep 'died' | cut -c1-110)" \
    || bad "joblib worker killed" "rc=$rc finished=$n victim=$victim $(echo "$err" | tail -3)"
else
  echo "SKIP  joblib worker killed (pip install 'fedcluster[joblib]')"
fi
}
trust_boundary
escape_routes() {
section "escape routes: which files are a run's comes from its seal; set-aside folders and links mid-run; a user's tables"
d="$work/er_aside"; "$FC" "${SMALL[@]}" "hydra.run.dir=$d" 2>/dev/null; echo mine > "$d/notes.txt"; mkdir "$d/.fedcluster-replaced"
before=$(tree_hash "$d"); beforelist=$(cd "$d" && find . | sort)
err=$("$FC" "${SMALL[@]}" train.lr=1e12 overwrite=true "hydra.run.dir=$d" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [ "$(tree_hash "$d")" = "$before" ] && [ "$(cd "$d" && find . | sort)" = "$beforelist" ] \
  && ok "a planted empty .fedcluster-replaced/ and a failing replacement: refused, the finished run byte-identical -> ${err:0:110}" \
  || bad "planted set-aside" "rc=$rc $err"
d="$work/er_manifest"; "$FC" "${SMALL[@]}" "hydra.run.dir=$d" 2>/dev/null; echo mine > "$d/notes.txt"
echo '["notes.txt"]' > "$d/.fedcluster-files.json"
err=$("$FC" "${SMALL[@]}" seed=1 overwrite=true "hydra.run.dir=$d" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$(cat "$d/notes.txt")" = mine ] && [[ "$err" == *".fedcluster-files.json does not list"* ]] \
  && ok "a manifest edited to list a user's file: refused, the file stays -> ${err:0:110}" || bad "edited manifest" "rc=$rc $err"
d="$work/er_link"; echo theirs > "$work/er_outside.csv"
"$FC" "${SMALL[@]}" rounds=200 checkpoint_every=0 "hydra.run.dir=$d" >/dev/null 2> "$work/er_link.err" & pid=$!
for _ in $(seq 1200); do [ -s "$d/metrics.csv" ] && break; sleep 0.05; done
rm -f "$d/metrics.csv"; ln -s "$work/er_outside.csv" "$d/metrics.csv"; wait $pid; rc=$?; err=$(cat "$work/er_link.err")
[ $rc -ne 0 ] && [ "$(cat "$work/er_outside.csv")" = theirs ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [[ "$err" == *"metrics.csv"*"symbolic link"* ]] \
  && ok "metrics.csv swapped for a link mid-run: nothing appended outside, one line -> ${err:0:120}" || bad "link mid-run" "rc=$rc $err"
python - "$work" <<'PY'
import sys, numpy as np, pandas as pd
w = sys.argv[1]; g = np.random.default_rng(0)
f = pd.DataFrame(g.normal(size=(300, 4)), columns=[f"f{i}" for i in range(4)]); f["y"] = (f.f0 + f.f1 > 0).astype(int)
f[:200].to_csv(f"{w}/er_train.csv", index=False); f[200:].to_csv(f"{w}/er_test.csv", index=False)
f[200:][["y", "f3", "f2", "f1", "f0"]].to_csv(f"{w}/er_test_reordered.csv", index=False)
f[200:].rename(columns={"f0": "a", "f1": "b", "f2": "c", "f3": "d"}).to_csv(f"{w}/er_test_renamed.csv", index=False)
open(f"{w}/er_ragged.csv", "w").write("f0,f1,y\n1,2,0\n1,2,3,4\n")
PY
TAB0=(algorithm=fedavg dataset=tensors dataset.labels=y model=mlp partition=dirichlet partition.num_clients=4
      partition.min_samples=5 rounds=3 progress=false plots=false)
TAB=("${TAB0[@]}" "dataset.path=$work/er_train.csv")
"$FC" "${TAB[@]}" "dataset.test_path=$work/er_test.csv" "hydra.run.dir=$work/er_t1" 2>/dev/null
"$FC" "${TAB[@]}" "dataset.test_path=$work/er_test_reordered.csv" "hydra.run.dir=$work/er_t2" 2>/dev/null
a=$(python -c "import json,sys; print(json.load(open(sys.argv[1]))['local']['local_test_accuracy'])" "$work/er_t1/summary.json" 2>/dev/null)
b=$(python -c "import json,sys; print(json.load(open(sys.argv[1]))['local']['local_test_accuracy'])" "$work/er_t2/summary.json" 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] && ok "a test table with its header reordered scores the same ($a = $b): columns matched by name" \
  || bad "test table by name" "plain=$a reordered=$b"
for case in "er_test_renamed.csv|missing ['f0', 'f1', 'f2', 'f3']; extra ['a', 'b', 'c', 'd']|dataset.path=$work/er_train.csv|dataset.test_path=$work/er_test_renamed.csv" \
            "er_ragged.csv|er_ragged.csv: cannot be parsed as CSV|dataset.path=$work/er_ragged.csv|progress=false"; do
  IFS='|' read -r name needle arg1 arg2 <<< "$case"; top="$work/er_refused_${name%.csv}"
  err=$("$FC" "${TAB0[@]}" "$arg1" "$arg2" "hydra.run.dir=$top/a/b" 2>&1 >/dev/null); rc=$?
  [ $rc -eq 2 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [[ "$err" == *"$needle"* ]] && [ ! -e "$top" ] \
    && ok "$name: one line, nothing written -> ${err:0:120}" || bad "$name refused" "rc=$rc $err"
done
top="$work/er_rows"; err=$("$FC" -m +preset=cam/fmnist/table1 algorithm=local "hydra.sweep.dir=$top" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && [ ! -e "$top" ] && [[ "$err" == *"algorithm=local chooses none of the sweep's rows"* ]] \
  && ok "a sweep whose rows the command line leaves empty: one line, nothing written -> ${err:0:110}" || bad "rows select nothing" "rc=$rc $err"
err=$("$FC" -m +preset=cam/fmnist/table1 hydra.sweeper.rows=abc "hydra.sweep.dir=$top" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ ! -e "$top" ] && [[ "$err" == *"hydra.sweeper.rows=abc: not a list of rows"* ]] \
  && ok "hydra.sweeper.rows=abc: one line naming its shape" || bad "rows shape" "rc=$rc $err"
err=$(FEDCLUSTER_CONF="$work/no_such_conf" "$FC" rounds=1 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$(echo "$err" | grep -c .)" -eq 1 ] && ok "FEDCLUSTER_CONF at a missing folder: exit 2, one line" || bad "FEDCLUSTER_CONF" "rc=$rc $err"
err=$("$FC" show partition=flower partition.kind=nosuch 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [[ "$err" == *"partition.kind='nosuch' is unknown"* ]] && ok "show refuses what a run refuses (partition.kind=nosuch)" \
  || bad "show partition.kind" "rc=$rc $err"
if python -c "import datasets" 2>/dev/null; then
  python -c "
import sys, datasets; from sklearn.datasets import load_wine
datasets.Dataset.from_pandas(load_wine(as_frame=True).frame).save_to_disk(sys.argv[1])" "$work/er_wine" >/dev/null 2>&1
  "$FC" -m dataset=hf "dataset.path=$work/er_wine" dataset.input=null dataset.labels=target dataset.standardize=true model=mlp \
    partition=dirichlet partition.num_clients=6 partition.min_samples=5 num_clusters=2 algorithm=fedavg,ifca seed=0,1 rounds=5 \
    progress=false plots=false "hydra.sweep.dir=$work/er_wine_runs" >/dev/null 2>&1; rc=$?
  table=$("$REPORT" "$work/er_wine_runs" --baseline fedavg 2>/dev/null)
  [ $rc -eq 0 ] && [[ "$table" == *"| ifca | 2 |"* ]] && [[ "$table" == *"n=2: too few seeds for an interval"* ]] \
    && ok "dataset=hf flat table (wine, 13 columns + target): fedavg, ifca x 2 seeds and the report, no interval from 2 seeds" \
    || bad "hf flat table" "rc=$rc $(echo "$table" | tail -3)"
else
  echo "SKIP  dataset=hf flat table (pip install 'fedcluster[hf]')"
fi
}
escape_routes
lane_a > "$work/lane_a.log" 2>&1 &
lane_b > "$work/lane_b.log" 2>&1 &
wait
cat "$work/lane_a.log" "$work/lane_b.log"

}
main | tee "$work/all.log"
passed=$(grep -c '^PASS' "$work/all.log"); failed=$(grep -c '^FAIL' "$work/all.log")
echo "$passed passed, $failed failed (${SECONDS}s)"
[ "$failed" -eq 0 ]
