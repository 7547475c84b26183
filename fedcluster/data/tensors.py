"""A user's own data as a data set, no code: `dataset=tensors dataset.path=<file>` (issue 59).

The file holds one row per sample: a CSV table (one column the label, the others numeric features),
a NumPy `.npz` archive or a PyTorch `.pt` file holding a dict of tensors (`features` and `labels`
name the arrays). Read as plain data only: `.npz` without pickles (`allow_pickle=False`), `.pt` with
`torch.load(weights_only=True)`, so a file handed over cannot run code.

The test split comes from `test_path` (the same layout) or, without one, a seeded `test_fraction`
of the rows. `distributions` names a column (or array) with each sample's group, a data set's
"distributions": mixture and cluster partitions draw from them, label partitions split each; without
it the data is one distribution. Labels of a classification table may be any values (strings too):
they become 0..C-1 in sorted order. Every label partition (dirichlet, nclass, ...) and the mixture
partitions work on it; models take its flat feature vector (model=mlp, model=linear)."""
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, List, Optional, Tuple

import numpy as np
import torch

from ..errors import ConfigError, DataFileError, DataNotFoundError
from ..rng import generator
from ..rules import AtLeast, Between, CheckedSettings, Help, OneOf

FORMATS = (".csv", ".npz", ".pt")


def _columns(path: Path, features: str, feature_columns: Optional[List[str]], labels: str,
             distributions: Optional[str], ignore_columns: Optional[List[str]] = None,
             like: Optional[dict] = None):
    """{name: 1-d or 2-d array} of the file: features (2-d), labels, and the distributions column; a CSV's
    also its header (`header`) and its feature columns in order (`feature_names`). `like`: the training
    file's columns, for its test file: the same column names are required (any order) and the features
    are taken by name, in the training file's order."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        import pandas as pd
        table = read_csv_table(path)
        if like is not None and set(table.columns) != set(like["header"]):
            missing = [c for c in like["header"] if c not in table.columns]
            extra = [c for c in table.columns if c not in like["header"]]
            said = "; ".join(f"{what} {cols}" for what, cols in (("missing", missing), ("extra", extra)) if cols)
            raise ConfigError(f"dataset.test_path={path}: its columns are not the training file's ({said}); allowed: "
                              f"the columns of dataset.path, in any order: {list(like['header'])}")
        if like is not None:
            feature_columns = like["feature_names"]
        missing = [c for c in (labels, distributions) if c is not None and c not in table.columns]
        if missing:
            raise ConfigError(f"dataset.path={path}: no column {missing[0]!r}; its columns: {list(table.columns)}")
        ignored = list(ignore_columns or [])
        unknown = [c for c in ignored if c not in table.columns]
        if unknown:
            raise ConfigError(f"dataset.ignore_columns names {unknown[0]!r}, not a column of {path}; its columns: "
                              f"{list(table.columns)}")
        rest = [c for c in table.columns if c not in (labels, distributions) and c not in ignored]
        chosen = rest if feature_columns is None else list(feature_columns)
        unknown = [c for c in chosen if c not in table.columns]
        if unknown:
            raise ConfigError(f"dataset.feature_columns names {unknown[0]!r}, not a column of {path}; its columns: "
                              f"{list(table.columns)}")
        text = [c for c in chosen if not pd.api.types.is_numeric_dtype(table[c])]
        if text:
            raise ConfigError(f"dataset.path={path}: feature column {text[0]!r} is not numeric; allowed: numeric "
                              f"feature columns (leave it out: dataset.ignore_columns=[{text[0]}], make it the groups: "
                              f"dataset.distributions={text[0]}, or name the features: dataset.feature_columns=[a,b,...])")
        for column in (labels, distributions):
            empty = table[column].isna().to_numpy().nonzero()[0] if column is not None else []
            if len(empty):
                raise DataFileError(f"{path}: column {column!r} has an empty cell in data row {empty[0] + 1}; expected "
                                    "a value in every row of the label and distributions columns")
        out = {"features": table[chosen].to_numpy(np.float32), "labels": table[labels].to_numpy()}
        if distributions is not None:
            out["distributions"] = table[distributions].to_numpy()
        return out, {"header": list(table.columns), "feature_names": list(chosen)}
    if suffix == ".npz":
        arrays = read_npz_arrays(path)
    else:
        try:
            loaded = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:   # noqa: BLE001 -- a pickled object, a damaged file: one line
            raise ConfigError(f"dataset.path={path} cannot be read as plain tensors ({str(e).splitlines()[0][:120]}); "
                              "allowed: a dict of tensors saved with torch.save") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"dataset.path={path} holds a {type(loaded).__name__}; allowed: a dict of tensors")
        arrays = {k: (v.numpy() if torch.is_tensor(v) else np.asarray(v)) for k, v in loaded.items()}
    key = features
    for name in (key, labels, distributions):
        if name is not None and name not in arrays:
            raise ConfigError(f"dataset.path={path}: no array {name!r}; its arrays: {sorted(arrays)}")
    if arrays[key].dtype.kind not in "biuf":
        raise DataFileError(f"{path}: array {key!r} holds {arrays[key].dtype} values; expected numeric features "
                            "(booleans, integers or floats)")
    out = {"features": arrays[key].astype(np.float32), "labels": arrays[labels]}
    if distributions is not None:
        out["distributions"] = arrays[distributions]
    return out, None


def read_csv_table(path: Path):
    """A CSV file as a table, or one line naming the file and what is wrong with it (an empty file, a row
    with more cells than the header, an unclosed quote, bytes that are not UTF-8)."""
    import pandas as pd
    expected = "expected a UTF-8 CSV table: a header of column names, then one row of cells per sample"
    try:
        table = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise DataFileError(f"{path}: empty file (no header, no rows); {expected}") from None
    except pd.errors.ParserError as e:
        said = " ".join(str(e).split())[:160]
        raise DataFileError(f"{path}: cannot be parsed as CSV ({said}); {expected}") from None
    except UnicodeDecodeError as e:
        raise DataFileError(f"{path}: holds bytes that are not UTF-8 (0x{e.object[e.start]:02x}); {expected}") from None
    except OSError as e:
        raise DataFileError(f"{path}: cannot be read ({e.strerror or e})") from None
    if table.empty:
        raise DataFileError(f"{path}: a header but no rows; {expected}")
    return table


def read_npz_arrays(path: Path) -> dict:
    """{name: array} of a .npz archive, read as plain data: each member's header is checked first (a numeric or
    string dtype, no object arrays or pickles, and no more bytes declared than the member holds, so a header
    declaring 10^12 elements is refused before memory is asked for)."""
    import zipfile
    from numpy.lib import format as npy
    expected = "expected a .npz archive of numeric arrays (numpy.savez)"
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise DataFileError(f"{path}: not a .npz archive ({' '.join(str(e).split())[:100]}); {expected}") from None
    arrays = {}
    with archive:
        for info in archive.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            try:
                with archive.open(info) as member:
                    version = npy.read_magic(member)
                    read_header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
                    shape, _, dtype = read_header(member)   # the header only: nothing allocated yet
                    if dtype.hasobject:
                        raise DataFileError(f"{path}: array {name!r} holds Python objects (a pickle); {expected}")
                    declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
                    if declared > info.file_size:
                        raise DataFileError(f"{path}: array {name!r} declares {shape} {dtype} ({declared:,} bytes) but "
                                            f"its member holds {info.file_size:,} bytes; {expected}")
            except DataFileError:
                raise
            except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
                raise DataFileError(f"{path}: member {info.filename!r} is not a .npy array "
                                    f"({' '.join(str(e).split())[:100]}); {expected}") from None
        try:
            with np.load(path, allow_pickle=False) as loaded:
                arrays = {k: loaded[k] for k in loaded.files}
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
            raise DataFileError(f"{path}: cannot be read ({' '.join(str(e).split())[:100]}); {expected}") from None
    return arrays


class TensorSource(CheckedSettings, group="dataset"):   # declared rules checked when built (rules.py)
    """Samples from the user's file(s). See the module docstring for the layout."""
    value_bytes = 4

    @classmethod
    def task_for(cls, settings: dict) -> str:
        return settings.get("task", "classification")

    @dataclass(frozen=True)
    class Settings:
        path: Annotated[Optional[str], Help("the training (or whole) file: .csv, .npz or .pt")] = None
        test_path: Annotated[Optional[str], Help("its test rows (null: test_fraction of path's rows)")] = None
        labels: Annotated[str, Help("the label column (CSV) or array (npz, pt)")] = "y"
        features: Annotated[str, Help("the feature array (npz, pt)")] = "x"
        feature_columns: Annotated[Optional[List[str]], Help(
            "a CSV's feature columns (null: every column but the label, distributions and ignored ones)")] = None
        ignore_columns: Annotated[Optional[List[str]], Help(
            "a CSV's columns that are neither features nor labels (an id, a site used for nothing)")] = None
        distributions: Annotated[Optional[str], Help(
            "a column or array with each sample's group (null: one distribution)")] = None
        task: Annotated[str, OneOf("classification", "regression"), Help("what the labels are")] = "classification"
        test_fraction: Annotated[float, Between(0, 1, lo_open=True, hi_open=True),
                                 Help("the seeded share of path's rows held out for testing without test_path")] = 0.2
        standardize: Annotated[bool, Help(
            "each feature shifted and scaled by its mean and std over the training rows (the test rows with the "
            "same numbers), for tables whose columns have different units")] = False
        seed: Annotated[int, AtLeast(0)] = 0
        name: Annotated[str, Help("the data set's label in summaries and reports")] = "tensors"

    def __init__(self, *args, **given):
        s = self.Settings(*args, **given)
        if s.path is None:
            raise ConfigError("dataset.path is not set; allowed: a .csv, .npz or .pt file of your samples "
                              "(docs/own_data.md)")
        self.name, self.task, self.seed = s.name, s.task, s.seed
        train, names = self._read(s.path, s)
        test = None if s.test_path is None else self._read(s.test_path, s, names)[0]   # a CSV's columns by name
        self.feature_names = None if names is None else names["feature_names"]
        self._settle(train, test, s.distributions is not None, s.test_fraction, s.standardize,
                     f"dataset.test_path={s.test_path}")

    def _settle(self, train: dict, test: Optional[dict], grouped: bool, test_fraction: float, standardize: bool,
                test_source: str) -> None:
        """The pools from the read columns ({features, labels, distributions}): the test rows `test`, or a seeded
        `test_fraction` of `train`'s; features standardised by the training rows; labels as 0..C-1."""
        if test is None:
            rows = len(train["labels"])
            order = torch.randperm(rows, generator=generator(self.seed, "tensors-test-split")).numpy()
            cut = int(round(rows * test_fraction))
            if cut < 1 or cut >= rows:
                raise ConfigError(f"dataset.test_fraction={test_fraction} of {rows} rows leaves no training or no "
                                  "test row; allowed: a fraction that leaves both, or dataset.test_path")
            test = {k: v[order[:cut]] for k, v in train.items()}
            train = {k: v[order[cut:]] for k, v in train.items()}
        if train["features"].shape[1:] != test["features"].shape[1:]:
            raise ConfigError(f"{test_source}: samples of shape {test['features'].shape[1:]}, the "
                              f"training file's are {train['features'].shape[1:]}")
        self.in_shape = tuple(train["features"].shape[1:])
        if standardize:
            mean, std = train["features"].mean(0), train["features"].std(0)
            std[std == 0] = 1.0   # a constant column stays as it is, shifted to 0
            for part in (train, test):
                part["features"] = ((part["features"] - mean) / std).astype(np.float32)
        y_train, y_test = self._targets(train["labels"], test["labels"])
        groups = sorted(set(np.unique(train.get("distributions", np.zeros(1)))) |
                        set(np.unique(test.get("distributions", np.zeros(1)))), key=str)
        self.distribution_names = [str(g) for g in groups] if grouped else ["all"]
        self._pools = {split: self._by_distribution(part, y, groups if grouped else None)
                       for split, part, y in (("train", train, y_train), ("test", test, y_test))}

    def _read(self, path: str, s: "TensorSource.Settings", like=None):
        """(columns, a CSV's header and feature names or None) of one file, checked; `s`: the columns it reads."""
        file = Path(path).expanduser()
        if file.suffix.lower() not in FORMATS:
            raise ConfigError(f"dataset.path={path} is not a file fedcluster reads; allowed: {', '.join(FORMATS)}")
        if not file.is_file():
            raise DataNotFoundError(f"dataset.path={path}: no such file")
        if like is not None and file.suffix.lower() != ".csv":
            like = None   # arrays are named by their keys already
        columns, names = _columns(file, s.features, s.feature_columns, s.labels, s.distributions, s.ignore_columns,
                                  like)
        rows = {k: len(v) for k, v in columns.items()}
        if len(set(rows.values())) != 1 or columns["features"].ndim < 2:
            raise ConfigError(f"dataset.path={path}: the arrays' rows differ ({rows}) or the features are not one row "
                              "per sample; allowed: features [rows, ...] and labels [rows]")
        if not np.isfinite(columns["features"]).all():
            raise ConfigError(f"dataset.path={path}: the features hold NaN or infinite values; allowed: finite numbers")
        return columns, names

    def _targets(self, train, test) -> Tuple[torch.Tensor, torch.Tensor]:
        if self.task == "regression":
            try:
                self.num_classes = 0
                return (torch.as_tensor(train.astype(np.float32)).reshape(len(train), -1).squeeze(1),
                        torch.as_tensor(test.astype(np.float32)).reshape(len(test), -1).squeeze(1))
            except (TypeError, ValueError):
                raise ConfigError("dataset.task=regression needs numeric labels") from None
        classes = sorted(set(train.tolist()) | set(test.tolist()), key=lambda v: (str(type(v)), v))
        index = {c: i for i, c in enumerate(classes)}
        self.class_names = [str(c) for c in classes]
        self.num_classes = len(classes)
        if self.num_classes < 2:
            raise ConfigError(f"dataset.labels: one class only ({self.class_names}); allowed: two or more classes")
        return (torch.tensor([index[v] for v in train.tolist()], dtype=torch.long),
                torch.tensor([index[v] for v in test.tolist()], dtype=torch.long))

    @staticmethod
    def _by_distribution(part: dict, y: torch.Tensor, groups: Optional[List]):
        x = torch.as_tensor(part["features"])
        if groups is None:
            return [(x, y)]
        keys = part["distributions"]
        return [(x[torch.as_tensor(keys == g)], y[torch.as_tensor(keys == g)]) for g in groups]

    def pool(self, split: str, distribution: int = 0):
        """Every sample of `split` in one distribution (for label partitions)."""
        return self._pools[split][distribution]

    def sample(self, split, distribution, n, g):
        x, y = self._pools[split][distribution]
        if n is None:
            return x, y
        if n > len(y):
            raise ConfigError(f"dataset=tensors: distribution {self.distribution_names[distribution]} has {len(y)} "
                              f"{split} samples but the partition asks for {n}; lower partition.num_clients or the "
                              "per-client sample sizes")
        pick = torch.randperm(len(y), generator=g)[:n]
        return x[pick], y[pick]
