"""Device and precision selection (conf/hardware/*.yaml)."""
import os
from dataclasses import dataclass
from typing import Annotated, Union

import torch

from .local_training.precision import set_precision
from .errors import ConfigError
from .rules import AtLeast, AutoOr

_DTYPES = {"float32": torch.float32, "float64": torch.float64}
CPU_PRECISIONS = ("fp32", "bf16")   # tf32 is TensorFloat-32 matrix units of NVIDIA GPUs


@dataclass
class Hardware:
    device: str = "cpu"
    dtype: str = "float32"
    precision: str = "fp32"     # fp32 | tf32 | bf16 (fedcluster/local_training/precision.py)
    # rows (a client training one model) a round trains at once before folding them into the aggregate:
    # "auto" sizes it from the memory available and the model (data/budget.py rows_per_chunk); a number sets it
    chunk: Annotated[Union[int, str], AutoOr(AtLeast(1))] = "auto"

    def __post_init__(self):
        chunk_problem = AutoOr(AtLeast(1)).problem("hardware.chunk", self.chunk)
        if chunk_problem:
            raise ConfigError(chunk_problem)
        if self.device not in ("cpu", "cuda") and not self.device.startswith("cuda:"):
            raise ConfigError(f"hardware.device={self.device!r} is not allowed; use 'cpu', 'cuda' or 'cuda:N'")
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ConfigError(
                f"hardware.device={self.device!r} but no CUDA GPU is available on this machine "
                "(torch.cuda.is_available() is False); run with hardware=cpu")
        if self.dtype not in _DTYPES:
            raise ConfigError(f"hardware.dtype={self.dtype!r} is not allowed; use one of {sorted(_DTYPES)}")
        device_type = "cuda" if self.device.startswith("cuda") else "cpu"
        if device_type == "cpu" and self.precision == "tf32":
            raise ConfigError(f"hardware.precision={self.precision!r} is an NVIDIA GPU mode and has no effect on "
                              f"hardware.device={self.device!r}; allowed on a CPU: {list(CPU_PRECISIONS)}")
        set_precision(self.precision, device_type)

    @property
    def torch_device(self) -> torch.device:
        return torch.device(self.device)

    @property
    def torch_dtype(self) -> torch.dtype:
        return _DTYPES[self.dtype]

    def describe(self) -> str:
        """What a run's summary.json records as its device ("cpu", "cuda (NVIDIA H100 80GB HBM3)")."""
        if self.torch_device.type == "cuda":
            return f"cuda ({torch.cuda.get_device_name(self.torch_device)})"
        return "cpu"


def device_kind(described) -> str:
    """The device type of a recorded device (Hardware.describe's text): "cpu", "cuda", or "not recorded"."""
    return str(described).split(" ")[0] if described else "not recorded"


def machine() -> dict:
    """The processor (and GPU) a run ran on, recorded in its summary: one config gives last-digit differences
    across CPUs (an AMD EPYC against an Intel Xeon with AMX), so a verdict near a band's edge is read with the
    machine beside it. Linux: /proc/cpuinfo's model name; elsewhere platform.processor()."""
    import platform
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), None)
    except OSError:
        pass
    out = {"cpu": cpu or platform.processor() or platform.machine(), "cpu_count": os.cpu_count()}
    if torch.cuda.is_available():
        out["gpu"] = torch.cuda.get_device_name(0)
    return out
