"""Refuse a run whose client data and per-client models cannot fit, before building them.

The estimate counts every client's training and local-test samples padded to the largest
client (float32 inputs, plus an 8-byte label and an 8-byte source id per sample) twice, since
the data is built from per-client pieces and then stacked (both exist at the peak), about
2 KiB of Python objects per client while building, and one parameter vector plus two
optimizer moments per client. It is a lower bound (activations and scoring buffers come on
top), so a refusal is certain to be needed."""
import os
from typing import Dict, Optional

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


def model_bytes(num_clients: int, num_params: int) -> int:
    """One parameter vector plus two optimizer moments per client, float32."""
    return num_clients * num_params * 4 * 3


def blame(num_clients: int, train_width: int, test_width: int, sample_numel: int, num_params: int, limit: int,
          keys: Dict[str, Optional[str]], fixed: Dict[str, int]) -> str:
    """The setting that makes the run too large, as `key=value` text: the size of one sample or
    of the model when a single client with a single sample does not fit (dataset.dim,
    model=...); else the source's own buffers (e.g. dataset.test_size) when they alone exceed
    the limit; else the per-client sample counts when a single client does not fit; else the
    number of clients."""
    data_part, model_part = data_bytes(1, 1, 1, sample_numel), model_bytes(1, num_params)
    if data_part + model_part > limit:
        if model_part > data_part and keys.get("model"):
            return keys["model"]
        return keys.get("dim") or keys.get("model") or keys["clients"]
    for key, size in fixed.items():
        if size > limit:
            return key
    base = sum(fixed.values())
    if base + data_bytes(1, train_width, test_width, sample_numel) + model_bytes(1, num_params) > limit \
            and keys.get("samples"):
        return keys["samples"]
    return keys["clients"]


def check_fits(num_clients: int, train_width: int, test_width: int, sample_numel: int, num_params: int,
               device: torch.device, what: Optional[str] = None, keys: Optional[Dict[str, Optional[str]]] = None,
               fixed: Optional[Dict[str, int]] = None) -> None:
    """ConfigError with the estimate and the limit when the run cannot fit in memory. The
    message starts with `what`, or else with the key(s) that drive the size (`blame`): `keys`
    maps "clients", "samples", "dim", "model" to their `key=value` text; `fixed` maps a key to
    bytes the data source holds besides the clients' data (e.g. its test sets)."""
    limit = available_bytes(device)
    if limit is None:
        return
    fixed = dict(fixed or {})
    data = data_bytes(num_clients, train_width, test_width, sample_numel)
    models = model_bytes(num_clients, num_params)
    held = sum(fixed.values())
    need = data + models + held
    if need > limit:
        advice = "use fewer clients or samples"
        if what is None:
            what = blame(num_clients, train_width, test_width, sample_numel, num_params, limit,
                         {"clients": f"partition.num_clients={num_clients}", **(keys or {})}, fixed)
            advice = ("use a smaller model or smaller inputs" if what.startswith("model=")
                      else f"lower {what.split('=')[0]}")
        source = f", {held / GiB:.1f} GiB of the data set's own test sets and parameters" if held >= GiB / 10 else ""
        raise ConfigError(
            f"{what}: this run needs at least {need / GiB:.1f} GiB ({num_clients:,} clients x up to "
            f"{train_width}+{test_width} samples of {sample_numel:,} values = {data / GiB:.1f} GiB of data, "
            f"{models / GiB:.1f} GiB of per-client models ({num_params:,} parameters each) and optimizer state"
            f"{source}) but {limit / GiB:.1f} GiB is available on {device.type}; {advice}")
