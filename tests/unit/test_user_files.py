"""A user's own files (issue 75): a test table is read by its column names, and every file fedcluster
cannot parse is one line naming the file, what is wrong and what is expected, before anything is written
(dataset=tensors: CSV, .npz; dataset=hf: save_to_disk folders, parquet, arrow, flat tables)."""
import io
import os
import pickle
import subprocess
import zipfile

import numpy as np
import pandas as pd
import pytest

from fedcluster.data.tensors import TensorSource
from fedcluster.errors import ConfigError

from conftest import make_cfg
from test_cli import _fedcluster


@pytest.fixture
def files(tmp_path):
    g = np.random.default_rng(0)
    frame = pd.DataFrame(g.normal(size=(60, 4)).astype(np.float32), columns=[f"f{i}" for i in range(4)])
    frame["y"] = g.integers(0, 2, 60)
    frame.to_csv(tmp_path / "train.csv", index=False)
    frame.to_csv(tmp_path / "test.csv", index=False)
    frame[["y", "f3", "f1", "f0", "f2"]].to_csv(tmp_path / "test_reordered.csv", index=False)
    frame.rename(columns={"f0": "a", "f1": "b", "f2": "c", "f3": "d"}).to_csv(tmp_path / "test_renamed.csv", index=False)
    frame.drop(columns=["f3"]).to_csv(tmp_path / "test_missing.csv", index=False)
    frame.assign(f4=1.0).to_csv(tmp_path / "test_extra.csv", index=False)
    (tmp_path / "ragged.csv").write_text("f0,f1,y\n1,2,0\n1,2,3,4\n")
    (tmp_path / "quote.csv").write_text('f0,f1,y\n1,2,0\n"1,2,1\n')
    (tmp_path / "empty_label.csv").write_text("f0,f1,y\n1,2,0\n3,4,\n5,6,1\n")
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "header_only.csv").write_text("f0,f1,y\n")
    (tmp_path / "latin1.csv").write_bytes("f0,f1,y\n1,2,caf\xe9\n".encode("latin-1"))
    np.savez(tmp_path / "objects.npz", x=np.array([{"a": 1}, None], dtype=object), y=np.array([0, 1]))
    (tmp_path / "pickle.npz").write_bytes(pickle.dumps({"x": [1, 2]}))
    np.savez(tmp_path / "strings.npz", x=np.array([["a", "b"], ["c", "d"]]), y=np.array([0, 1]))
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (10 ** 6, 10 ** 6)})
    with zipfile.ZipFile(tmp_path / "huge.npz", "w") as z:   # declares 10^12 floats in a 128-byte member
        z.writestr("x.npy", header.getvalue())
        z.writestr("y.npy", b"")
    return tmp_path


def test_a_test_table_is_read_by_its_column_names(files):
    plain = TensorSource(str(files / "train.csv"), test_path=str(files / "test.csv"), labels="y")
    reordered = TensorSource(str(files / "train.csv"), test_path=str(files / "test_reordered.csv"), labels="y")
    for a, b in zip(plain.pool("test"), reordered.pool("test")):
        assert (a == b).all()   # the same features in the same order, whatever the header's order


@pytest.mark.parametrize("name, said", [
    ("test_renamed.csv", "missing ['f0', 'f1', 'f2', 'f3']; extra ['a', 'b', 'c', 'd']"),
    ("test_missing.csv", "missing ['f3']"),
    ("test_extra.csv", "extra ['f4']"),
])
def test_a_test_table_with_other_columns_is_refused_naming_them(files, name, said):
    with pytest.raises(ConfigError) as e:
        TensorSource(str(files / "train.csv"), test_path=str(files / name), labels="y")
    assert said in str(e.value) and name in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("name, said", [
    ("ragged.csv", "Expected 3 fields in line 3, saw 4"),
    ("quote.csv", "EOF inside string"),
    ("empty_label.csv", "column 'y' has an empty cell in data row 2"),
    ("empty.csv", "empty file"),
    ("header_only.csv", "a header but no rows"),
    ("latin1.csv", "not UTF-8 (0xe9)"),
    ("objects.npz", "holds Python objects"),
    ("pickle.npz", "not a .npz archive"),
    ("strings.npz", "holds <U1 values; expected numeric features"),
    ("huge.npz", "declares (1000000, 1000000) float32 (4,000,000,000,000 bytes) but its member holds"),
])
def test_a_file_that_cannot_be_parsed_is_one_line_naming_it(files, name, said):
    with pytest.raises(ConfigError) as e:
        TensorSource(str(files / name), labels="y")
    message = str(e.value)
    assert said in message and name in message and "expected" in message and "\n" not in message


def test_the_command_refuses_an_unparsable_file_in_one_line_and_writes_nothing(files):
    top = files / "runs"
    proc = subprocess.run([_fedcluster(), "dataset=tensors", f"dataset.path={files / 'ragged.csv'}", "dataset.labels=y",
                           "model=mlp", "partition=dirichlet", "partition.num_clients=2", "rounds=1",
                           f"hydra.run.dir={top / 'a' / 'b'}"], capture_output=True, text=True, timeout=300)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "ragged.csv" in lines[0], proc.stderr
    assert not top.exists()


# -- dataset=hf -------------------------------------------------------------------------------------------

datasets = pytest.importorskip("datasets")


@pytest.fixture
def wine(tmp_path):
    from sklearn.datasets import load_wine
    frame = load_wine(as_frame=True).frame
    datasets.Dataset.from_pandas(frame).save_to_disk(str(tmp_path / "wine"))
    return tmp_path / "wine", frame


def test_hf_reads_a_flat_table_by_its_column_names(wine):
    from fedcluster.data.hf import HuggingFaceSource
    path, frame = wine
    source = HuggingFaceSource(str(path), input=None, labels="target")
    assert source.in_shape == (13,) and source.num_classes == 3
    assert source.feature_names == [c for c in frame.columns if c != "target"]


def test_hf_flat_table_runs_from_the_composed_config(wine, tmp_path):
    from fedcluster.runner import run
    path, _ = wine
    summary = run(make_cfg(["dataset=hf", f"dataset.path={path}", "dataset.input=null", "dataset.labels=target",
                            "dataset.standardize=true", "model=mlp", "partition=dirichlet", "partition.num_clients=4",
                            "partition.min_samples=5", "algorithm=fedavg", "rounds=2", "plots=false"]), tmp_path / "r")
    assert summary["status"] == "complete" if "status" in summary else summary


@pytest.mark.parametrize("name, make, said", [
    ("random.parquet", lambda p: p.write_bytes(os.urandom(256)), "expected a Parquet file"),
    ("random.arrow", lambda p: p.write_bytes(os.urandom(256)), "expected an Arrow stream file"),
    ("empty_folder", lambda p: p.mkdir(), "not a data set written by save_to_disk"),
])
def test_hf_files_that_cannot_be_read_are_one_line(tmp_path, name, make, said):
    from fedcluster.data.hf import HuggingFaceSource
    make(tmp_path / name)
    with pytest.raises(ConfigError) as e:
        HuggingFaceSource(str(tmp_path / name))
    assert said in str(e.value) and name in str(e.value) and "\n" not in str(e.value)
