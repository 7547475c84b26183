"""The jobs of a queue (one `fedcluster` command line each, as scripts/cam_fmnist_tables.sh --list writes) that
have no finished run yet, in the queue's order, each once.

Why: a sweep skips a job whose folder holds its finished run, but some finished runs survive only as rows of a
committed per-run CSV (their folders were lost with a working machine; docs/results/paper_protocol/
cam_fmnist_table1.md), and a GPU session's minutes should not redo them. A job's folder name is the one Hydra
gives it in a sweep (its result-changing overrides, fedcluster/lifecycle/identity.py NAME_EXCLUDED_KEYS left out, sorted),
so it is compared with a CSV's `run_dir` column and with the run folders (those holding summary.json) under
each DIR given. The name leaves the preset out, so a queue and its --done runs must be of the same presets
(a queue whose lines of two presets share a name is refused). Concatenating lists (core rows first, then all
rows) and passing them through here keeps the first occurrence of each job, so the order is the caller's
priority.

  python scripts/pending_jobs.py QUEUE_IN QUEUE_OUT [--done CSV_OR_DIR ...]
"""
import argparse
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hydra._internal.config_loader_impl import get_overrides_dirname          # noqa: E402
from hydra.core.override_parser.overrides_parser import OverridesParser      # noqa: E402

from fedcluster.config.store import sweep_job_dirname                               # noqa: E402
from fedcluster.lifecycle.identity import NAME_EXCLUDED_KEYS                           # noqa: E402

SWEPT = "hydra.sweeper.params."


def folder_name(line: str) -> str:
    """The sweep folder of the job on this queue line (a sweep parameter `hydra.sweeper.params.K=V` is the
    job's override K=V; a plain override that it repeats counts once)."""
    overrides = {}
    for token in line.split():
        if "=" not in token:
            continue
        key, value = token.split("=", 1)
        overrides[key[len(SWEPT):] if key.startswith(SWEPT) else key] = value
    parsed = OverridesParser.create().parse_overrides([f"{k}={v}" for k, v in overrides.items()])
    dirname = get_overrides_dirname(overrides=parsed, exclude_keys=list(NAME_EXCLUDED_KEYS), item_sep=",",
                                    kv_sep="=")
    return sweep_job_dirname(dirname)


def preset_of(line: str) -> str:
    """The job's +preset (a folder name leaves it out, so two presets' jobs can share a name)."""
    return next((t.split("=", 1)[1] for t in line.split() if t.startswith("+preset=")), "")


def canonical(name: str) -> str:
    """A folder name compared without its spelling of booleans (a sweep writes a bool as `True` where the
    command line said `true`; observed: `algorithm.report_label_pick=True` from `...=true`) and without
    `hardware=...`: a job finished on this CPU is not redone on a GPU, nor the other way round (the same
    configuration; cam_cells.py and `fedcluster-report leaderboard` say which device ran each seed), and without the retired
    top-level `warmup_rounds=` (identity.RETIRED_KEYS): the leaderboard's old script gave IFCA-CAM's jobs 30 % of their rounds
    that way, which is IFCA-CAM's own default now, so today's job has no such override."""
    items = []
    for item in name.split(","):
        key, _, value = item.partition("=")
        if key in ("hardware", "warmup_rounds"):
            continue
        items.append(f"{key}={value.lower()}" if value in ("True", "False", "true", "false") else item)
    return ",".join(sorted(items))


def finished(paths) -> set:
    names = set()
    for path in map(Path, paths):
        if path.is_dir():
            names |= {canonical(p.parent.name) for p in path.rglob("summary.json")}
        elif path.suffix == ".csv":
            with open(path, newline="") as f:
                names |= {canonical(row["run_dir"]) for row in csv.DictReader(f)}
        else:
            raise SystemExit(f"pending_jobs.py: --done {path}: not a folder or a .csv; allowed: a sweep/archive "
                             f"folder or a per-run CSV (scripts/per_run_csv.py)")
    return names


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("queue_in")
    ap.add_argument("queue_out")
    ap.add_argument("--done", nargs="*", default=[])
    args = ap.parse_args(argv)
    done = finished(args.done)
    seen, keep, skipped, repeats = {}, [], 0, 0
    for line in Path(args.queue_in).read_text().splitlines():
        if not line.strip():
            continue
        name = canonical(folder_name(line))
        if name in seen and seen[name] != preset_of(line):
            raise SystemExit(f"pending_jobs.py: {args.queue_in}: +preset={preset_of(line)} and +preset={seen[name]} "
                             f"give one folder name, {name!r}; allowed: one preset per folder name (a folder name "
                             f"leaves the preset out: queue each preset's jobs with the runs of that preset)")
        if name in seen:
            repeats += 1
        elif name in done:
            skipped += 1
        else:
            keep.append(line)
        seen[name] = preset_of(line)
    tmp = Path(args.queue_out).with_suffix(".tmp")
    tmp.write_text("".join(f"{line}\n" for line in keep))
    tmp.replace(args.queue_out)
    print(f"pending_jobs.py: {len(keep)} jobs pending -> {args.queue_out} ({skipped} already finished, "
          f"{repeats} repeated lines dropped)")


if __name__ == "__main__":
    main()
