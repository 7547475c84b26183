"""`fedcluster-report cam-cells` (fedcluster/report/cam_cells.py) on constructed per-run CSVs with known values: means, the paper's band, the
paired and Welch differences, and a run given twice refused. Also: the committed cells page regenerates
byte-identical from the committed CSVs."""
import csv
import re
import subprocess
import sys

import pytest

from conftest import ROOT

from fedcluster.report import cam_cells

FIELDS = ["table", "partition", "K", "method", "options", "seed", "acc", "micro_acc", "macro_f1", "ari",
          "cluster_sizes", "device", "wall_time_s", "run_dir"]


GPU = "cuda (NVIDIA H100 80GB HBM3)"


def write(path, rows, device=GPU):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for method, options, seed, micro in rows:
            w.writerow({"table": "cam_table1", "partition": "cluster_dirichlet", "K": 5, "method": method,
                        "options": options, "seed": seed, "acc": micro, "micro_acc": micro, "macro_f1": micro - 10,
                        "ari": 0.5, "device": device,
                        "run_dir": f"{method},{options},seed={seed}{',cpu' if device == 'cpu' else ''}"})
    return path


def test_cells_means_band_and_paired_difference(tmp_path):
    # IFCA-CAM is IFCA + 2, 3, 4 points on seeds 0-2: paired mean +3, sd 1, t(0.975, 2) = 4.303 -> ± 2.48
    a = write(tmp_path / "a.csv", [("ifca", "", s, 90.0 + s) for s in range(3)])
    b = write(tmp_path / "b.csv", [("ifca_cam", "", s, 92.0 + 2 * s) for s in range(3)]
              + [("fesem", cam_cells.CONTROL, 0, 94.0), ("ifca", "init=identical", 0, 80.0)])
    out = tmp_path / "cells.md"
    cam_cells.main([str(out), str(a), str(b)])
    text = out.read_text()
    # IFCA: mean 91.0, std 1.0; the paper's IFCA K=5 Dirichlet is 84.60 ± 2.22 -> +6.4 outside
    assert "| IFCA | 0 1 2 | 91.0 ± 1.0 | 84.60 ± 2.22 | +6.4, outside |" in text
    # IFCA-CAM: mean 94.0 against 93.33 ± 0.95 -> +0.7 within
    assert "| IFCA-CAM | 0 1 2 | 94.0 ± 2.0 | 93.33 ± 0.95 | +0.7, within |" in text
    assert "micro +3 [+0.516, +5.48] * (paired, 3)" in text
    assert "ifca (init=identical; sensitivity) | 0 | 80.0 |" in text
    assert "FeSEM-CAM −" not in text   # no FeSEM-CAM row: no difference claimed


def test_welch_where_the_seeds_differ(tmp_path):
    a = write(tmp_path / "a.csv", [("ifca", "", 0, 90.0), ("ifca", "", 1, 92.0), ("ifca", "", 2, 91.0),
                                   ("ifca_cam", "", 1, 93.0), ("ifca_cam", "", 2, 95.0), ("ifca_cam", "", 3, 94.0)])
    out = tmp_path / "cells.md"
    cam_cells.main([str(out), str(a)])   # 3 seeds a side: an interval (none from fewer: report/compare.py)
    assert "micro +3 [" in out.read_text() and "(Welch, 3 vs 3)" in out.read_text()


def test_a_run_in_two_csvs_is_refused(tmp_path, capsys):
    a = write(tmp_path / "a.csv", [("ifca", "", 0, 90.0)])
    b = write(tmp_path / "b.csv", [("ifca", "", 0, 90.0)])
    with pytest.raises(SystemExit) as e:
        cam_cells.main([str(tmp_path / "cells.md"), str(a), str(b)])
    assert e.value.code == 2 and re.search("is in both", capsys.readouterr().err)   # one line, exit 2
    assert not (tmp_path / "cells.md").exists()


def test_the_committed_cells_page_regenerates_byte_identical(tmp_path):
    page = ROOT / "docs" / "results" / "paper_protocol" / "cam_fmnist_cells.md"
    command = page.read_text().splitlines()[2].strip("`").split()
    assert command[:3] == ["fedcluster-report", "cam-cells", str(page.relative_to(ROOT))]
    out = tmp_path / "cells.md"
    subprocess.run([sys.executable, "-m", "fedcluster.report", "cam-cells", str(out)] + command[3:], cwd=ROOT,
                   check=True, capture_output=True)
    assert out.read_text().replace(str(out), command[2]) == page.read_text()


def test_one_configuration_and_seed_twice_is_refused(tmp_path, capsys):
    """Two folders of one configuration and seed (e.g. the same job run with another, ignored override)
    would leave one of them out of the mean silently; the page is not made."""
    a = write(tmp_path / "a.csv", [("ifca", "", 0, 90.0)])
    with open(a, "a", newline="") as f:
        csv.writer(f).writerow(["cam_table1", "cluster_dirichlet", 5, "ifca", "", 0, 80.0, 80.0, 70.0, 0.5, "", GPU,
                                "", "ifca,seed=0,another_folder"])
    with pytest.raises(SystemExit) as e:
        cam_cells.main([str(tmp_path / "cells.md"), str(a)])
    assert e.value.code == 2 and re.search("seed 0 has two runs", capsys.readouterr().err)   # one line, exit 2
    assert not (tmp_path / "cells.md").exists()


def test_cpu_seeds_are_marked_and_a_run_on_both_devices_counts_once(tmp_path):
    """Seed 1 of IFCA ran only on the CPU: it is in the mean, marked. Seed 0 ran on both: the GPU run (90.0)
    counts, the CPU run (95.0) does not enter the mean, and both are listed as a device cross-check."""
    gpu = write(tmp_path / "gpu.csv", [("ifca", "", 0, 90.0), ("ifca", "", 2, 92.0)])
    cpu = write(tmp_path / "cpu.csv", [("ifca", "", 0, 95.0), ("ifca", "", 1, 91.0)], device="cpu")
    out = tmp_path / "cells.md"
    cam_cells.main([str(out), str(gpu), str(cpu)])
    text = out.read_text()
    assert "| IFCA | 0 1 (CPU) 2 | 91.0 ± 1.0 |" in text
    assert "Device cross-check, ifca (defaults) seed 0: micro 90.0 on the GPU (counted above), 95.0 on this CPU" in text


def test_a_run_without_a_known_device_is_refused(tmp_path, capsys):
    a = write(tmp_path / "a.csv", [("ifca", "", 0, 90.0)], device="mps")
    with pytest.raises(SystemExit) as e:
        cam_cells.main([str(tmp_path / "cells.md"), str(a)])
    assert e.value.code == 2 and re.search("device 'mps'; allowed: cpu, cuda", capsys.readouterr().err)   # one line, exit 2
