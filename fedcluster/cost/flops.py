"""A model's FLOPs per sample, counted from its layers: torch's FLOP counter (torch.utils.flop_counter, the
formulas of each matmul and convolution by shape) over one forward, and one forward and backward, of a batch on
the meta device (shapes only: no memory, no time, no draw from the global random stream)."""
from dataclasses import dataclass

import torch
from torch.utils.flop_counter import FlopCounterMode

BATCH = 2   # FLOPs grow linearly in the batch: two samples make a batch of every layer's shape


@dataclass(frozen=True)
class SampleFlops:
    forward: float   # one sample through the model (scoring, evaluation)
    train: float     # one sample's forward and backward (a training step's share)


def sample_flops(build_model, in_shape) -> SampleFlops:
    """FLOPs of one sample through the model `build_model()` makes, on inputs of `in_shape` (float, else integer
    ids for a model that embeds them). 0 where the model cannot run on the meta device."""
    with torch.random.fork_rng(devices=[]), torch.device("meta"):
        for dtype in (torch.float32, torch.long):
            try:
                model = build_model()
                x = torch.zeros(BATCH, *in_shape, dtype=dtype)
                with FlopCounterMode(display=False) as forward:
                    model(x)
                with FlopCounterMode(display=False) as both:
                    out = model(x)
                    (out[0] if isinstance(out, tuple) else out).float().sum().backward()
                return SampleFlops(forward.get_total_flops() / BATCH, both.get_total_flops() / BATCH)
            except Exception:   # noqa: BLE001 -- e.g. an embedding wants integer inputs: the next dtype
                continue
    return SampleFlops(0.0, 0.0)
