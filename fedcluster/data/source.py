"""What every data source offers: S distributions to draw samples from."""
from typing import List, Protocol, Tuple

import torch

from ..errors import ConfigError


class Source(Protocol):
    task: str                      # "regression" or "classification"
    num_classes: int               # 0 for regression
    in_shape: Tuple[int, ...]
    distribution_names: List[str]
    # Optional `decode`: a callable that makes model inputs (floats) of the stored samples `sample`
    # returns (ImageSource: uint8 pixels, data/samples.py ImageDecode); without it the samples are the inputs.
    # Optional `value_bytes`: bytes per stored input value, for the memory check (data/budget.py; default 4).

    def sample(self, split: str, distribution: int, n: int, g: torch.Generator) -> Tuple[torch.Tensor, torch.Tensor]:
        """n samples of `distribution` from `split` ('train' or 'test'). Called once per
        (split, distribution) per run, so sources that hold finite data return disjoint samples.
        n=None asks for every sample available."""
        ...


def the_reader(settings, readers, kind: str) -> str:
    """The reader a source's settings pick: `reader`, or, in a config recorded before `name` became a label only
    (2026-12-03; `reader` null), the one `name` names."""
    reader = settings.reader if settings.reader is not None else settings.name
    if reader not in readers:
        raise ConfigError(f"dataset.reader={reader!r} is not {kind}; allowed: {sorted(readers)}")
    return reader
