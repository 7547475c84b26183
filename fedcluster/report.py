"""`fedcluster-report DIR`: paper-shaped tables (markdown + csv) from a run or multirun dir.

Runs are grouped by the `table` their preset set; numbers are mean ± std over seeds.
Centers are relabelled per run with the Hungarian matching on test loss, so column
c(theta_j) is the center that serves distribution j; raw indices stay in summary.json."""
import argparse
import json
import sys
from pathlib import Path
from typing import List

import numpy as np
import pandas as pd

from . import paper_numbers as paper
from .io import write_csv, write_text
from .metrics import hungarian_match


def load_summaries(root: Path) -> List[dict]:
    runs = []
    for path in sorted(root.rglob("summary.json")):
        s = json.loads(path.read_text())
        s["_dir"] = str(path.parent)
        runs.append(s)
    return runs


def _fmt(values) -> str:
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if len(v) == 0:
        return "–"
    return f"{v.mean():.3g}" if len(v) == 1 else f"{v.mean():.3g} ± {v.std(ddof=0):.2g}"


def matched_matrix(run: dict, metric: str) -> np.ndarray:
    """[distribution, distribution]: row d = test distribution, column j = center matched to j."""
    names = run["distributions"]
    raw = np.array([run["centers"][metric][d] for d in names])          # [D, K]
    match = [run["matched_center"][d] for d in names]
    return raw[:, match]


def paper_matched(matrix) -> np.ndarray:
    m = np.asarray(matrix, dtype=float)
    return m[:, hungarian_match(m.T)]


def _mixture_rows(runs, metric, paper_table=None, key="partition", order=None):
    rows = []
    groups = {}
    for r in runs:
        groups.setdefault(r[key] if key != "sigma0" else r.get("sigma0"), []).append(r)
    for group in (order or sorted(groups)):
        if group not in groups:
            continue
        rs = groups[group]
        names = rs[0]["distributions"]
        mats = np.stack([matched_matrix(r, metric) for r in rs])
        ref = paper_table.get(group) if paper_table else None
        ref_m = paper_matched(ref["centers"] if isinstance(ref, dict) else ref) if ref is not None else None
        for d, name in enumerate(names):
            row = {key: group, "test": name, "seeds": len(rs)}
            for j, cname in enumerate(names):
                row[f"ours c({cname})"] = _fmt(mats[:, d, j])
            for j, cname in enumerate(names):
                row[f"paper c({cname})"] = f"{ref_m[d, j]:.3g}" if ref_m is not None else "–"
            rows.append(row)
        rows.append({key: group, "test": "local (held-out test)", "seeds": len(rs),
                     f"ours c({names[0]})": _fmt([r["local"].get(f"local_test_{metric}") for r in rs])})
        rows.append({key: group, "test": "local (training data, as the paper scored)", "seeds": len(rs),
                     f"ours c({names[0]})": _fmt([r["local"].get(f"local_train_{metric}") for r in rs]),
                     f"paper c({names[0]})": (f"{ref['local_train']:.3g}" if isinstance(ref, dict) else "–")})
        rows.append({key: group, "test": "ARI (dominant distribution)", "seeds": len(rs),
                     f"ours c({names[0]})": _fmt([r.get("ari") for r in rs])})
        errs = [max((g["max_abs_error"] for g in r.get("importance_error", {}).values()), default=None) for r in rs]
        if any(e is not None for e in errs):
            rows.append({key: group, "test": "max abs(mean u - true ratio)", "seeds": len(rs),
                         f"ours c({names[0]})": _fmt(errs)})
    return pd.DataFrame(rows).fillna("")


def table_fedsoft_table1(runs):
    title = ("FedSoft Table 1 (synthetic): test MSE of each center on each distribution's held-out test set. "
             "c(theta_j) = the center matched to theta_j (Hungarian on test MSE); paper's centers relabelled the same way.")
    return title, _mixture_rows(runs, "mse", paper.FEDSOFT_TABLE1_SYNTHETIC_MSE,
                                order=["mix_10_90", "mix_30_70", "linear", "random"])


def table_fedsoft_table6(runs):
    for r in runs:
        r["sigma0"] = float(r["config"]["dataset"]["sigma0"])
    title = ("FedSoft Table 6 (sigma0 study, random partition): test MSE of matched centers, and local models "
             "on held-out local test data and on training data (the paper's w-bar is on training data).")
    return title, _mixture_rows(runs, "mse", paper.FEDSOFT_TABLE6_SIGMA0, key="sigma0")


def table_fedsoft_table3(runs):
    names = runs[0]["distributions"]
    ref = np.asarray(paper.FEDSOFT_TABLE3_SYNTHETIC_MSE)
    rows = []
    mats = np.stack([matched_matrix(r, "mse") for r in runs])
    for d, name in enumerate(names):
        best_other = [np.min(np.delete(m[d], d)) for m in mats]
        rows.append({"test": name, "seeds": len(runs), "ours matched center": _fmt(mats[:, d, d]),
                     "ours best other center": _fmt(best_other),
                     "ours matched is best": f"{int(sum(m[d, d] <= m[d].min() for m in mats))}/{len(runs)}",
                     "paper best center": f"{ref[d].min():.3g}" if d < len(ref) else "–",
                     "paper worst center": f"{ref[d].max():.3g}" if d < len(ref) else "–"})
    rows.append({"test": "local (held-out test)", "seeds": len(runs),
                 "ours matched center": _fmt([r["local"].get("local_test_mse") for r in runs])})
    rows.append({"test": "ARI (dominant distribution)", "seeds": len(runs),
                 "ours matched center": _fmt([r.get("ari") for r in runs])})
    title = ("FedSoft Table 3 (8 synthetic distributions, random partition): test MSE of the center matched "
             "to each distribution vs the best other center. Paper: best and worst center per row.")
    return title, pd.DataFrame(rows).fillna("")


def table_generic(runs):
    rows = []
    keys = ["table", "dataset", "partition", "algorithm"]
    frame = pd.DataFrame([{k: r.get(k) for k in keys} | {"_i": i} for i, r in enumerate(runs)])
    for group, g in frame.groupby(keys[1:], dropna=False):
        rs = [runs[i] for i in g["_i"]]
        metric = rs[0]["key_metric"]
        row = dict(zip(keys[1:], group)) | {"seeds": len(rs)}
        if "centers" in rs[0]:
            names = rs[0]["distributions"]
            for j, name in enumerate(names):
                row[f"c({name}) on {name}"] = _fmt([matched_matrix(r, metric)[j, j] for r in rs])
        row[f"local test {metric}"] = _fmt([r["local"].get(f"local_test_{metric}") for r in rs])
        row[f"local train {metric}"] = _fmt([r["local"].get(f"local_train_{metric}") for r in rs])
        row["ARI"] = _fmt([r.get("ari") for r in rs])
        rows.append(row)
    return f"Runs: final {runs[0]['key_metric']} (mean ± std over seeds)", pd.DataFrame(rows).fillna("")


TABLES = {
    "fedsoft_table1_synthetic": table_fedsoft_table1,
    "fedsoft_table3_synthetic": table_fedsoft_table3,
    "fedsoft_table6_sigma0": table_fedsoft_table6,
}


def to_markdown(frame: pd.DataFrame) -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def build_report(root: Path) -> str:
    runs = load_summaries(root)
    if not runs:
        raise SystemExit(f"fedcluster-report: no summary.json under {root}; give a run or multirun directory")
    by_table = {}
    for r in runs:
        by_table.setdefault(r.get("table") or "", []).append(r)
    parts = []
    for name, rs in by_table.items():
        title, frame = TABLES.get(name, table_generic)(rs)
        slug = name or "runs"
        write_csv(root / f"report_{slug}.csv", frame)
        parts.append(f"## {title}\n\n{to_markdown(frame)}\n")
    text = "\n".join(parts)
    write_text(root / "report.md", text)
    return text


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="fedcluster-report", description=__doc__.splitlines()[0])
    p.add_argument("directory", type=Path, help="a run directory or a multirun directory")
    args = p.parse_args(argv)
    if not args.directory.is_dir():
        sys.exit(f"fedcluster-report: {args.directory} is not a directory")
    print(build_report(args.directory))


if __name__ == "__main__":
    main()
