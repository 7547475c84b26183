"""scripts/pending_jobs.py: a queue line's folder name is the one a real sweep gave that job (checked against
the archived H100 runs of Fed-CAM Tables 1-2), finished jobs are dropped whether they are folders or CSV rows,
and repeated lines keep their first place."""
import csv
import importlib.util
import subprocess

import pytest

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


def test_a_job_finished_on_another_device_is_not_queued_again(tmp_path):
    """A GPU queue line (hardware=cuda) whose configuration and seed finished on this CPU (a folder without
    hardware=...) is dropped, and the other way round."""
    gpu_line, other = table_queue("core")[:2]
    cpu_line = other.replace(" hardware=cuda", "")
    assert cpu_line != other
    done = tmp_path / "done"
    for line in (gpu_line.replace(" hardware=cuda", ""), other):
        (done / pending_jobs.folder_name(line)).mkdir(parents=True)
        (done / pending_jobs.folder_name(line) / "summary.json").write_text("{}")
    queue_in, out = tmp_path / "in.txt", tmp_path / "out.txt"
    queue_in.write_text(f"{gpu_line}\n{cpu_line}\n")
    pending_jobs.main([str(queue_in), str(out), "--done", str(done)])
    assert out.read_text() == ""


def test_two_presets_sharing_a_folder_name_are_refused(tmp_path):
    """A folder name leaves the preset out: the leaderboard's FedAvg on cluster-wise Dirichlet (CLoVE's
    protocol) and Fed-CAM Table 1's have one name, so one queue of both would let one stand for the other."""
    cam = next(l for l in table_queue("core") if "algorithm=fedavg" in l)
    board = cam.replace("+preset=cam/table1", "+preset=clove/images")
    queue_in = tmp_path / "in.txt"
    queue_in.write_text(f"{cam}\n{board}\n")
    with pytest.raises(SystemExit, match="give one folder name"):
        pending_jobs.main([str(queue_in), str(tmp_path / "out.txt")])
    assert not (tmp_path / "out.txt").exists()


def test_the_gpu_session_queue_holds_every_unfinished_job_of_both_families_once(tmp_path):
    queue = tmp_path / "gpuq" / "queue.txt"
    out = subprocess.run(["bash", "scripts/gpu_session_queue.sh", str(queue)], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    lines = queue.read_text().splitlines()
    assert f"gpu_session_queue.sh: {len(lines)} jobs" in out
    assert len(set(lines)) == len(lines) and all("hardware=cuda" in l for l in lines)
    cam = [l for l in lines if "+preset=cam/" in l]
    board = [l for l in lines if "+preset=cam/" not in l]
    assert lines == cam + board                                   # Fed-CAM first
    finished_cam = pending_jobs.finished([ARCHIVE.parent, ARCHIVE.parent.parent / "cam_fmnist_h100_per_run.csv"])
    assert not [l for l in cam if pending_jobs.canonical(pending_jobs.folder_name(l)) in finished_cam]
    archived_board = list((ROOT / "docs" / "results" / "leaderboard_runs").rglob("summary.json"))
    assert len(board) == 19 * 3 * 12 - len(archived_board)       # the leaderboard's plan less its archived runs
