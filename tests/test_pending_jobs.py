"""scripts/pending_jobs.py: a queue line's folder name is the one a real sweep gave that job (checked against
the archived H100 runs of Fed-CAM Tables 1-2), finished jobs are dropped whether they are folders or CSV rows,
and repeated lines keep their first place."""
import csv
import importlib.util
import subprocess

from conftest import ROOT

spec = importlib.util.spec_from_file_location("pending_jobs", ROOT / "scripts" / "pending_jobs.py")
pending_jobs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pending_jobs)

ARCHIVE = ROOT / "docs" / "results" / "paper_protocol" / "cam_runs" / "h100"


def table_queue(mode="all"):
    lines = []
    for sub, table in (("t1", "table1"), ("t2", "table2")):
        out = subprocess.run(["bash", "scripts/cam_fmnist_tables.sh", f"gpu_runs/{sub}", table, mode, "--list",
                              "hardware=cuda"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
        lines += out.splitlines()
    return lines


def test_every_archived_run_folder_is_named_as_its_queue_line_says():
    names = {pending_jobs.canonical(pending_jobs.folder_name(line)) for line in table_queue()}
    archived = [p.parent.name for p in ARCHIVE.rglob("summary.json")]
    assert len(archived) >= 49
    assert [a for a in archived if pending_jobs.canonical(a) not in names] == []


def test_finished_jobs_are_dropped_and_the_first_place_kept(tmp_path):
    core, full = table_queue("core"), table_queue("all")
    queue_in = tmp_path / "in.txt"
    queue_in.write_text("\n".join(core + full) + "\n")
    done_csv = tmp_path / "done.csv"
    with open(done_csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["run_dir"])
        w.writeheader()
        w.writerow({"run_dir": pending_jobs.folder_name(core[1]).replace("=true", "=True")})
    done_dir = tmp_path / "sweep" / "t1" / pending_jobs.folder_name(core[0])
    done_dir.mkdir(parents=True)
    (done_dir / "summary.json").write_text("{}")
    out = tmp_path / "out.txt"
    pending_jobs.main([str(queue_in), str(out), "--done", str(done_csv), str(tmp_path / "sweep")])
    kept = out.read_text().splitlines()
    assert len(kept) == len(set(full)) - 2
    assert kept[:len(core) - 2] == core[2:]          # the core rows first, as the caller ordered them
    assert core[0] not in kept and core[1] not in kept
