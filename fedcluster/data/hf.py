"""Any HuggingFace `datasets` data set on this machine as a data set: `dataset=hf dataset.path=<dir or file>`
(optional extra `fedcluster[hf]`; issue 59).

`path` is a directory written by `save_to_disk` (a Dataset, or a DatasetDict whose `split` and `test_split`
are read), or a `.parquet` / `.arrow` file (its test rows from `test_path`, or a seeded `test_fraction`).
Nothing is downloaded and nothing is unpickled: `load_from_disk` and the parquet/arrow readers read Arrow
tables, and nothing is written (no cache: parquet is read into memory, arrow memory-mapped). `input` names the column a model reads:
- an image column (datasets' Image feature, or nested lists of pixels): stored as uint8 [C, H, W] and turned
  into x / 255 only when a batch is read, as fedcluster's own image sets are (models: lenet, genconv, ...);
- a text column: word ids from scikit-learn's CountVectorizer (the `vocab_size` most frequent words of the
  training texts, cut or padded to `max_len`, 0 padding and 1 unknown), as dataset=ag_news (model=textcnn);
- a numeric column (a number or a fixed-length list per row): float features (model=mlp, model=linear).
`labels` is the label column, `distributions` an optional column of each row's group (partition=natural,
partition=flower partition.partition_by=group, mixtures). Splitting, labels and groups follow dataset=tensors."""
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, List, Optional

import numpy as np

from ..errors import ConfigError, DataFileError, DataNotFoundError
from ..rules import AtLeast, Between, Help, OneOf
from .samples import ImageDecode
from .tensors import TensorSource
from .text import token_ids

FILES = (".parquet", ".arrow")


def _datasets():
    try:
        import datasets
    except ImportError:
        raise ConfigError("dataset=hf needs HuggingFace datasets, which is not installed; allowed: "
                          "pip install 'fedcluster[hf]' (or pip install datasets)") from None
    return datasets


def load_table(path: str, split: str):
    """The HF Dataset at `path` (a save_to_disk directory, a DatasetDict's `split`, or a parquet/arrow file)."""
    datasets = _datasets()
    where = Path(path).expanduser()
    if where.is_dir():
        try:
            loaded = datasets.load_from_disk(str(where))
        except Exception as e:   # noqa: BLE001 -- an empty or foreign folder, damaged Arrow files: one line
            raise DataFileError(f"dataset.path={path}: not a data set written by save_to_disk "
                                f"({type(e).__name__}: {' '.join(str(e).split())[:140]}); expected a folder holding "
                                "dataset_info.json and state.json (a Dataset) or dataset_dict.json (a DatasetDict)") from None
        if isinstance(loaded, datasets.DatasetDict):
            if split not in loaded:
                raise ConfigError(f"dataset.path={path} has the splits {sorted(loaded)}; dataset.split={split} is none "
                                  "of them")
            return loaded[split]
        return loaded
    if where.suffix.lower() not in FILES:
        raise ConfigError(f"dataset.path={path} is not what dataset=hf reads; allowed: a save_to_disk directory or a "
                          f"{' / '.join(FILES)} file")
    if not where.is_file():
        raise DataNotFoundError(f"dataset.path={path}: no such file or directory")
    try:
        if where.suffix.lower() == ".arrow":
            return datasets.Dataset.from_file(str(where))   # memory-mapped in place
        import pyarrow.parquet as pq   # read into memory: Dataset.from_parquet would write a cache under ~/.cache
        return datasets.Dataset(pq.read_table(str(where)))
    except Exception as e:   # noqa: BLE001 -- pyarrow's ArrowInvalid and friends for a file that is not one
        kind = "an Arrow stream file (Dataset.save_to_disk's data-*.arrow)" if where.suffix.lower() == ".arrow" \
            else "a Parquet file"
        raise DataFileError(f"dataset.path={path}: cannot be read ({type(e).__name__}: "
                            f"{' '.join(str(e).split())[:140]}); expected {kind}") from None


def has_split(path: str, split: str) -> bool:
    where = Path(path).expanduser()
    return where.is_dir() and (where / split).is_dir() and (where / "dataset_dict.json").is_file()


class HuggingFaceSource(TensorSource):
    """Rows of a HuggingFace data set on disk. See the module docstring."""

    @dataclass(frozen=True)
    class Settings:
        path: Annotated[Optional[str], Help("a save_to_disk directory or a parquet/arrow file")] = None
        split: Annotated[str, Help("a DatasetDict's training split")] = "train"
        test_split: Annotated[str, Help("a DatasetDict's test split (a directory without it, or a file: "
                                        "test_path's rows, else a seeded test_fraction)")] = "test"
        test_path: Annotated[Optional[str], Help("a second data set whose test_split holds the test rows")] = None
        input: Annotated[Optional[str], Help("the column the model reads (null: a flat table's feature "
                                             "columns)")] = "image"
        labels: Annotated[str, Help("the label column")] = "label"
        distributions: Annotated[Optional[str], Help("a column of each row's group (null: one distribution)")] = None
        feature_columns: Annotated[Optional[List[str]], Help("a flat table's feature columns (null: all but the "
                                                             "label, distributions and ignored ones)")] = None
        ignore_columns: Annotated[Optional[List[str]], Help("a flat table's columns that are neither features "
                                                            "nor labels")] = None
        task: Annotated[str, OneOf("classification", "regression"), Help("what the labels are")] = "classification"
        test_fraction: Annotated[float, Between(0, 1, lo_open=True, hi_open=True),
                                 Help("the seeded share held out for testing when no test rows are given")] = 0.2
        vocab_size: Annotated[int, AtLeast(1), Help("a text column's vocabulary: its most frequent words")] = 20000
        max_len: Annotated[int, AtLeast(1), Help("a text column's word ids per row, cut or padded")] = 64
        standardize: Annotated[bool, Help("a numeric column's features shifted and scaled by the training rows' "
                                          "mean and std")] = False
        seed: Annotated[int, AtLeast(0)] = 0
        name: Annotated[str, Help("the data set's label in summaries and reports")] = "hf"

    def __init__(self, *args, **given):
        s = self.Settings(*args, **given)
        path, split, test_split, test_path, input, labels = s.path, s.split, s.test_split, s.test_path, s.input, s.labels
        distributions, feature_columns, ignore_columns = s.distributions, s.feature_columns, s.ignore_columns
        if path is None:
            raise ConfigError("dataset.path is not set; allowed: a save_to_disk directory or a parquet/arrow file of a "
                              "HuggingFace data set (docs/own_data.md)")
        self.name, self.task, self.seed, self.vocab_size, self.max_len = s.name, s.task, s.seed, s.vocab_size, s.max_len
        train = load_table(path, split)
        if test_path is not None:
            test = load_table(test_path, test_split)
        else:
            test = load_table(path, test_split) if has_split(path, test_split) else None
        for column in (input, labels, distributions, *(feature_columns or ()), *(ignore_columns or ())):
            if column is not None and column not in train.column_names:
                raise ConfigError(f"dataset.path={path}: no column {column!r}; its columns: {train.column_names}")
        if input is None:   # a flat table: feature columns beside a label column, as dataset=tensors reads a CSV
            kind = "numeric"
            chosen = self._flat_features(train, path, labels, distributions, feature_columns, ignore_columns)
            if test is not None and set(test.column_names) != set(train.column_names):
                missing = [c for c in train.column_names if c not in test.column_names]
                extra = [c for c in test.column_names if c not in train.column_names]
                said = "; ".join(f"{w} {c}" for w, c in (("missing", missing), ("extra", extra)) if c)
                raise ConfigError(f"dataset.test_split={test_split}: its columns are not the training rows' ({said}); "
                                  f"allowed: the same columns, in any order: {train.column_names}")
            read = lambda table: self._flat_columns(table, chosen, labels, distributions)
            self.feature_names = chosen
        else:
            kind = self._kind(train, input)
            read = lambda table: self._columns(table, input, labels, distributions, kind)
        columns = [read(train), None if test is None else read(test)]
        if kind == "text":
            columns = self._tokenized(columns)
        if s.standardize and kind != "numeric":
            raise ConfigError(f"dataset.standardize=true scales numeric features; dataset.input={input} is a {kind} "
                              "column; allowed: standardize=false for it")
        self._settle(columns[0], columns[1], distributions is not None, s.test_fraction, s.standardize,
                     f"dataset.test_split={test_split}")
        if kind == "image":
            self.decode, self.value_bytes = ImageDecode(), 1   # uint8 until a batch is read (data/samples.py)

    @staticmethod
    def _flat_features(table, path, labels, distributions, feature_columns, ignore_columns) -> list:
        """A flat table's feature columns by name: `feature_columns`, or every column but the label, the
        distributions and the ignored ones; each must hold one number per row."""
        skip = {labels, distributions, *(ignore_columns or ())}
        chosen = list(feature_columns) if feature_columns is not None else \
            [c for c in table.column_names if c not in skip]
        if not chosen:
            raise ConfigError(f"dataset.path={path}: no feature column left (columns {table.column_names}); allowed: "
                              "dataset.feature_columns=[...] naming numeric columns")
        for c in chosen:
            feature = table.features[c]
            if type(feature).__name__ != "Value" or not (feature.dtype.startswith(("int", "uint", "float"))
                                                           or feature.dtype == "bool"):
                raise ConfigError(f"dataset.path={path}: feature column {c!r} holds {feature}, not one number per row; "
                                  f"allowed: numeric feature columns (leave it out: dataset.ignore_columns=[{c}], or "
                                  "name the features: dataset.feature_columns=[a,b,...])")
        return chosen

    @staticmethod
    def _flat_columns(table, chosen, labels, distributions) -> dict:
        wanted = list(dict.fromkeys([*chosen, labels, *([distributions] if distributions else [])]))
        frame = table.select_columns(wanted).to_pandas()
        features = frame[chosen].to_numpy(np.float32)   # by name, in the training rows' order
        if not np.isfinite(features).all():
            raise ConfigError("dataset: the feature columns hold NaN or infinite values; allowed: finite numbers")
        for column in (labels, distributions):
            if column is not None and frame[column].isna().any():
                row = int(frame[column].isna().to_numpy().nonzero()[0][0])
                raise ConfigError(f"dataset: column {column!r} is empty in row {row}; allowed: a value in every row")
        out = {"features": features, "labels": frame[labels].to_numpy()}
        if distributions is not None:
            out["distributions"] = np.asarray([str(v) for v in frame[distributions]])
        return out

    @staticmethod
    def _kind(table, column: str) -> str:
        feature = table.features[column]
        type_name = type(feature).__name__
        if type_name == "Image":
            return "image"
        if type_name == "Value" and feature.dtype in ("string", "large_string"):
            return "text"
        return "numeric"

    def _columns(self, table, input: str, labels: str, distributions: Optional[str], kind: str) -> dict:
        raw = table[input]
        if kind == "image":
            pixels = np.stack([np.asarray(v) for v in raw])
            if pixels.ndim == 3:          # [N, H, W]: one channel
                pixels = pixels[:, None]
            elif pixels.ndim == 4:        # [N, H, W, C] as PIL gives colour images
                pixels = pixels.transpose(0, 3, 1, 2)
            else:
                raise ConfigError(f"dataset.input={input}: images of shape {pixels.shape[1:]}; allowed: H x W or "
                                  "H x W x C pixels")
            features = np.ascontiguousarray(pixels.astype(np.uint8))
        elif kind == "text":
            features = np.asarray([str(t) for t in raw], dtype=object)
        else:
            try:
                features = np.asarray(raw, dtype=np.float32)
            except (TypeError, ValueError):
                raise ConfigError(f"dataset.input={input}: rows are not numbers of one length; allowed: an image, a "
                                  "text, or a numeric column") from None
            if features.ndim == 1:
                features = features[:, None]
            if not np.isfinite(features).all():
                raise ConfigError(f"dataset.input={input}: NaN or infinite values; allowed: finite numbers")
        out = {"features": features, "labels": np.asarray(table[labels])}
        if distributions is not None:
            out["distributions"] = np.asarray([str(v) for v in table[distributions]])
        return out

    def _tokenized(self, columns):
        """Word ids [n, max_len] of each text, the vocabulary from the training texts alone."""
        from sklearn.feature_extraction.text import CountVectorizer
        texts = [c["features"] if c is not None else None for c in columns]
        vectorizer = CountVectorizer(max_features=self.vocab_size, lowercase=True).fit(list(texts[0]))
        vocabulary, analyzer = vectorizer.vocabulary_, vectorizer.build_analyzer()
        for c, t in zip(columns, texts):
            if c is not None:
                c["features"] = token_ids(list(t), vocabulary, analyzer, self.max_len).numpy()
        return columns
