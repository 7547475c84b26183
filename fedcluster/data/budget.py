"""Refuse a run whose client data and per-client models cannot fit, before building them.

The estimate counts every client's training and local-test samples padded to the largest
client (float32 inputs, plus an 8-byte label and an 8-byte source id per sample) twice, since
the data is built from per-client pieces and then stacked (both exist at the peak), about
2 KiB of Python objects per client while building, and one parameter vector plus two
optimizer moments per client. It is a lower bound (activations and scoring buffers come on
top), so a refusal is certain to be needed."""
import os
from typing import Optional

import torch

from ..errors import ConfigError

GiB = 2 ** 30
BYTES_PER_SAMPLE_META = 16   # int64 label + int64 source id
BUILD_COPIES = 2             # per-client pieces + the stacked tensor
BYTES_PER_CLIENT_BUILD = 2048   # the pieces' tensor objects and lists while building


def available_bytes(device: torch.device) -> Optional[int]:
    """Memory the run may use: MemAvailable on CPU (Linux), free memory on a GPU; None if unknown."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def data_bytes(num_clients: int, train_width: int, test_width: int, sample_numel: int) -> int:
    per_sample = 4 * sample_numel + BYTES_PER_SAMPLE_META
    return BUILD_COPIES * num_clients * (train_width + test_width) * per_sample + num_clients * BYTES_PER_CLIENT_BUILD


def check_fits(num_clients: int, train_width: int, test_width: int, sample_numel: int, num_params: int,
               device: torch.device, what: str) -> None:
    """ConfigError with the estimate and the limit when the run cannot fit in memory."""
    limit = available_bytes(device)
    if limit is None:
        return
    data = data_bytes(num_clients, train_width, test_width, sample_numel)
    models = num_clients * num_params * 4 * 3
    need = data + models
    if need > limit:
        raise ConfigError(
            f"{what}: this run needs at least {need / GiB:.1f} GiB ({num_clients:,} clients x up to "
            f"{train_width}+{test_width} samples of {sample_numel} values = {data / GiB:.1f} GiB of data, "
            f"{models / GiB:.1f} GiB of per-client models and optimizer state) but {limit / GiB:.1f} GiB "
            f"is available on {device.type}; use fewer clients or samples")
