"""Per-seed final micro accuracy of PFLlib FedAvg (logs/pfllib_fedavg_s<seed>.log) beside fedcluster's archived
FedAvg (docs/results/paper_protocol/cam_fmnist_h100_per_run*.csv, cam_table2 / dirichlet / fedavg, column
micro_acc), and the two per-round curves (ours recomputed from the archived metrics.csv per-client accuracies
times each client's test count in export/export_s<seed>.json). Writes per_seed.csv and curves.csv here."""
import csv, glob, json, os, re, statistics

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
PP = os.path.join(ROOT, "docs", "results", "paper_protocol")

ours = {}
for name in ("cam_fmnist_h100_per_run.csv", "cam_fmnist_h100_per_run_archived.csv"):
    for r in csv.DictReader(open(os.path.join(PP, name))):
        if (r["table"], r["partition"], r["method"]) == ("cam_table2", "dirichlet", "fedavg"):
            ours[int(r["seed"])] = (float(r["micro_acc"]), name, float(r["wall_time_s"]), r["device"])

rows, curves = [], []
for log in sorted(glob.glob(os.path.join(HERE, "logs", "pfllib_fedavg_s*.log"))):
    seed = int(re.search(r"_s(\d+)\.log$", log).group(1))
    text = open(log).read()
    accs = [(int(r), float(a)) for r, a in
            re.findall(r"Round number: (\d+)-+\s+Evaluate global model\s+Averaged Train Loss: [\d.]+\s+"
                       r"Averaged Test Accuracy: ([\d.]+)", text)]
    wall = re.search(r"wall_s=(\d+)", text)
    if not accs or accs[-1][0] != 100 or not wall:
        continue
    per_round = re.search(r"Average time cost per round.\s+([\d.]+)", text)
    rows.append(dict(seed=seed, pfllib_micro_acc=round(100 * accs[-1][1], 2), ours_micro_acc=ours[seed][0],
                     diff_pp=round(100 * accs[-1][1] - ours[seed][0], 2), pfllib_wall_s=int(wall.group(1)),
                     pfllib_s_per_round=round(float(per_round.group(1)), 2), pfllib_device="cpu, 1 thread",
                     ours_wall_s=ours[seed][2], ours_device=ours[seed][3], ours_source=ours[seed][1]))
    ourc = {}
    runs = glob.glob(os.path.join(PP, "cam_runs", "h100", "t2", f"algorithm=fedavg*partition=dirichlet,seed={seed}"))
    if runs:
        n = [c["test_n"] for c in json.load(open(os.path.join(HERE, "export", f"export_s{seed}.json")))["clients"]]
        by = {}
        for r in csv.DictReader(open(os.path.join(runs[0], "metrics.csv"))):
            if r["metric"] == "accuracy" and r["eval_set"] == "local_test":
                by.setdefault(int(r["round"]) + 1, {})[int(r["model_index"])] = float(r["value"])
        ourc = {t: 100 * sum(round(a[k] * n[k]) for k in a) / sum(n) for t, a in by.items()}
    for t, a in accs:
        curves.append(dict(seed=seed, round=t, pfllib_micro_acc=round(100 * a, 2),
                           ours_micro_acc=round(ourc[t], 2) if t in ourc else ""))

with open(os.path.join(HERE, "per_seed.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader(); w.writerows(rows)
with open(os.path.join(HERE, "curves.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(curves[0]))
    w.writeheader(); w.writerows(curves)
for key in ("pfllib_micro_acc", "ours_micro_acc"):
    v = [r[key] for r in rows]
    print(key, v, f"mean {statistics.mean(v):.2f} +- {statistics.stdev(v):.2f} (sample std, n={len(v)})" if len(v) > 1 else "")
