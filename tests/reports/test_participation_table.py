"""`fedcluster-report participation` (fedcluster/report/participation.py): the seen/unseen and partial-participation page is made from archived runs,
each run's own config saying whether it held clients out, sampled them, or neither; the committed page's table
is what the archives give; a run that changes both at once is refused, by name."""
import json
import re
import shutil

import pytest
import yaml
from omegaconf import OmegaConf

from conftest import ROOT, archived_run_names, make_cfg, reseal, unpacked_copy
from rows_grid import grid, name

from fedcluster.report import participation as participation_table

RESULTS = ROOT / "docs" / "results"
PAGE = RESULTS / "paper_protocol" / "unseen_and_partial_ls3.md"
FOLDERS = [RESULTS / "leaderboard_runs_authors_code", RESULTS / "participation_ls3"]


def page_table(text):
    return text.split("<!-- table -->\n", 1)[1].split("\n\n", 1)[0] + "\n"


def test_the_committed_table_is_what_the_archived_runs_give(tmp_path, capsys):
    out = tmp_path / "page.md"
    shutil.copy(PAGE, out)
    assert participation_table.main([*map(str, FOLDERS), "--out", str(out)]) == 0
    assert page_table(out.read_text()) == page_table(PAGE.read_text())
    assert out.read_text() == PAGE.read_text()        # the prose around the table is kept as it was
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[0].startswith("| method") and rows[1].startswith("| fedavg ")   # FedAvg, the baseline, first


@pytest.mark.parametrize("edit,expected", [
    ({}, "full"),
    ({"partition": {"holdout_clients": 0.2}}, "holdout"),
    ({"algorithm": {"client_fraction": 0.5}}, "partial"),
    ({"algorithm": {"base": {"client_dropout": 0.1}}}, "partial"),   # CAM samples as its base does
])
def test_each_run_is_placed_by_its_own_config(edit, expected):
    config = {"partition": {"holdout_clients": 0.0}, "algorithm": {"client_fraction": 1.0, "client_dropout": 0.0}}
    config.update(edit)                               # a group given replaces the run's whole group
    assert participation_table.condition(config, "a run") == expected


def test_a_run_that_holds_out_and_samples_clients_is_refused_by_name(tmp_path, capsys):
    unpacked_copy(RESULTS / "participation_ls3" / "holdout", tmp_path / "holdout")
    source = next((tmp_path / "holdout").glob("algorithm=cfl,*seed=0"))
    both = tmp_path / "runs" / "both"
    shutil.copytree(source, both)
    config = yaml.safe_load((both / "config.yaml").read_text())
    config["algorithm"]["client_fraction"] = 0.5
    (both / "config.yaml").write_text(yaml.safe_dump(config))
    reseal(both, config)   # a run sealed so (not an edited one, which is never read)
    assert json.loads((both / "summary.json").read_text())["status"] == "complete"
    with pytest.raises(SystemExit) as e:
        participation_table.main([str(tmp_path / "runs")])
    assert e.value.code == 2 and re.search(f"{both}.*both holds clients out and samples them", capsys.readouterr().err)   # one line, exit 2


def test_the_preset_runs_every_method_in_each_condition_and_the_script_places_each_job():
    """conf/preset/clove/ls3_participation.yaml: 11 methods x 3 seeds, full and held out, and partial for all but
    FedSoft (which samples by its own rule); each job composes as the CLI composes it, and the page's script
    places the composed run where the row meant it."""
    jobs = grid("clove/ls3_participation")
    assert len(jobs) == 11 * 3 * 2 + 10 * 3 and len({name(j) for j in jobs}) == len(jobs)
    seen = {}
    for job in jobs:
        if "seed=0" not in job:          # the seeds compose alike (CI time)
            continue
        cfg = OmegaConf.to_container(make_cfg(["+preset=clove/ls3_participation", *job]), resolve=True)
        assert cfg["partition"]["name"] == "label_skew3" and cfg["table"] is None   # the runs' own table
        seen.setdefault(participation_table.condition(cfg, name(job)), set()).add(cfg["algorithm"]["name"])
    methods = {"fedavg", "ifca", "clove", "fedsoft", "cfl", "fesem", "flexcfl", "pacfl", "fedem", "ifca_cam",
               "fesem_cam"}
    assert seen == {"full": methods, "holdout": methods, "partial": methods - {"fedsoft"}}


def test_a_method_chosen_on_the_command_line_keeps_its_three_conditions_and_the_archive_is_named_as_the_grid():
    jobs = grid("clove/ls3_participation", ["algorithm=fesem,flexcfl,pacfl", "hardware=cuda"])
    assert len(jobs) == 3 * 3 * 3 and all("hardware=cuda" in j for j in jobs)
    names = {name(j) for j in grid("clove/ls3_participation")}
    archived = set(archived_run_names(RESULTS / "participation_ls3"))
    # the runs made after the grid's keys settled are its jobs by name (FedSoft's earlier ones carry its image
    # settings as overrides, the first partial ones the top-level client_dropout of their day)
    later = {a for a in archived if "algorithm=cfl," in a or "algorithm=ifca_cam," in a}
    assert len(later) == 18 and later <= names


def test_a_cell_with_fewer_seeds_than_the_table_says_how_many(tmp_path, capsys):
    """Runs still to come (a sweep in progress) leave a cell on fewer seeds: it says so, the others do not."""
    runs = unpacked_copy(RESULTS / "participation_ls3", tmp_path / "runs")
    for seed in (1, 2):
        shutil.rmtree(next((runs / "holdout").glob(f"algorithm=cfl,*seed={seed}")))
    shutil.rmtree(next((runs / "partial").glob("*algorithm=cfl,*seed=2")))
    assert participation_table.main([str(RESULTS / "leaderboard_runs_authors_code"), str(runs)]) == 0
    rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in capsys.readouterr().out.splitlines()
            if line.startswith("| ") and "---" not in line}
    assert rows["cfl"][2].endswith(" (1 of 3 seeds)") and rows["cfl"][3].endswith(" (1 of 3 seeds)")
    assert rows["cfl"][4] == "–"                                   # no interval from one seed
    assert rows["cfl"][5].endswith(" (2 of 3 seeds)") and "seeds" not in rows["cfl"][1]
    assert not any("seeds" in c for c in rows["ifca"])
    assert "*" in rows["fesem_cam"][6] and "*" not in rows["cfl"][6]   # a gap from fewer seeds is never starred
