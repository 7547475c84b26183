"""Refuse a run whose client data and per-client models cannot fit, before building them.

The estimate counts every client's training and local-test samples padded to the largest
client (inputs of `value_bytes` per value as stored: 1 for uint8 images, 4 for float32 inputs, plus
an 8-byte label and an 8-byte source id per sample; an upper bound since the inputs are stored unpadded,
data/samples.py) twice, since
the data is built from per-client pieces and then stacked (both exist at the peak), about
2 KiB of Python objects per client while building, and the training state of the models one
round trains at once (its rows, `Algorithm.training_rows`: a client's cluster model and h for
the CAM methods, all M components for FedEM): COPIES_PER_ROW parameter-sized tensors per row
plus one batch's layer outputs. Scoring buffers come on top, so it stays a lower bound. Since rounds
train in chunks (`hardware.chunk`, local_training/clients.py), the rows counted are one chunk's: one row with
`auto` (the run then sizes its chunks from what is available, `rows_per_chunk`), so a run is refused
only when it would not fit with chunks of one row; the chunk's rows when a number is set.

COPIES_PER_ROW is measured, not derived: the batched engine holds the round's start parameters,
the working parameters, their gradients, the optimizer's moments and the copies its steps take
of them. Peak resident memory grew per trained row by 10-12 parameter-sized copies plus a
batch's activations (FedAvg 84 MB, local 90, IFCA 76 per client, FeSEM-CAM 184 per client =
2 rows; FedAvg CNN of 1,663,370 parameters = 6.65 MB; peak RSS (`/usr/bin/time -f %M`) of
`fedcluster +preset=cam/table1 hydra.mode=RUN algorithm=A num_clusters=5 partition=cluster_dirichlet
partition.num_clients=N dataset.train_size=150N dataset.test_size=25N rounds=2 warmup_rounds=1
eval_every=1`, from before IFCA-CAM's warm-up was its own setting at N = 10 and 40, 2026-11-26). Since issue 56 (plans start from `Rows`, a chunk's rows train
in place, Adam steps in place) the MLP of tests/unit/test_memory_estimate.py grows by 6.4 copies per FedAvg row
(2026-11-27), so the check counts 5, below every measured value;
tests/unit/test_memory_estimate.py measures the same growth for an MLP (14.2-15.5 copies; 15.8-16.7 while the
runner held a round's trained rows through the next round's training) and fails
if it ever falls below the count. Before 2026-11-26, it counted 3
per client and no rows: 200-client FeSEM-CAM with that CNN passed it at about 5 GB and was killed
by the kernel at 16 GB (2026-11-26)."""
import os
from dataclasses import dataclass
from typing import Dict, Optional

import torch

from ..errors import ConfigError

GiB = 2 ** 30
BYTES_PER_SAMPLE_META = 16   # int64 label + int64 source id
BUILD_COPIES = 2             # per-client pieces + the stacked tensor
BYTES_PER_CLIENT_BUILD = 2048   # the pieces' tensor objects and lists while building
COPIES_PER_ROW = 5              # parameter-sized tensors per trained row at the peak (measured 6.4 since issue 56; above)


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


# Parameter-sized tensors per trained row at the peak, by optimizer, for sizing a round's chunks (engine.chunk=auto):
# measured on main 98e8503 with the FedAvg CNN (peak RSS per client, issue 56's table): SGD 10, Adam 16.5.
COPIES_PER_TRAINED_ROW = {"sgd": 10, "adam": 17}
# The most memory auto chunks give training on a CPU: a chunk's rows share the CPU's few threads, so a larger
# chunk trains no faster while memory grows with every row. FedAvg CNN, 200 clients, one round
# (benchmarks/memory_benchmark.py --child fedavg 200 1 hardware.chunk=C, 2026-11-27, loaded 2-core machine):
# C = 8: 1,365 MiB peak, 16.2 s of training; 16: 1,748 MiB, 19.8 s; 32 (the earlier 2 GiB cap): 2,420 MiB, 20.1 s.
CPU_CHUNK_BYTES = 512 * 2 ** 20


def rows_per_chunk(setting, rows: int, num_params: int, optimizer: str, device: torch.device,
                   element_size: int = 4, row_activation_bytes: int = 0) -> int:
    """Rows a round trains at once (hardware.chunk): `setting` when it is a number; "auto": as many of
    the round's `rows` as fit half the memory available now (beside whatever else runs on the machine
    or GPU), at most CPU_CHUNK_BYTES on a CPU, at least 1."""
    if setting != "auto":
        return max(1, min(int(setting), rows))
    per_row = COPIES_PER_TRAINED_ROW.get(optimizer, max(COPIES_PER_TRAINED_ROW.values())) * num_params * element_size \
        + row_activation_bytes
    limit = available_bytes(device)
    budget = (limit // 2) if limit is not None else CPU_CHUNK_BYTES
    if device.type == "cpu":
        budget = min(budget, CPU_CHUNK_BYTES)
    return max(1, min(rows, budget // max(per_row, 1)))


def data_bytes(num_clients: int, train_width: int, test_width: int, sample_numel: int, value_bytes: int = 4) -> int:
    per_sample = value_bytes * sample_numel + BYTES_PER_SAMPLE_META
    return BUILD_COPIES * num_clients * (train_width + test_width) * per_sample + num_clients * BYTES_PER_CLIENT_BUILD


def model_bytes(rows: int, num_params: int, row_activation_bytes: int = 0, element_size: int = 4) -> int:
    """The training state of `rows` models trained at once: COPIES_PER_ROW parameter vectors
    and one batch's layer outputs each."""
    return rows * (COPIES_PER_ROW * num_params * element_size + row_activation_bytes)


@dataclass
class RunSize:
    """What sets a run's memory: `num_clients` clients of up to `train_width` + `test_width` samples of
    `sample_numel` values (stored at `value_bytes` each), a model of `num_params` parameters of `element_size`
    bytes, `rows` models trained at once (None: one per client), each with one batch's layer outputs
    (`row_activation_bytes`)."""
    num_clients: int
    train_width: int
    test_width: int
    sample_numel: int
    num_params: int
    rows: Optional[int] = None
    row_activation_bytes: int = 0
    element_size: int = 4
    value_bytes: int = 4


def blame(size: RunSize, limit: int, keys: Dict[str, Optional[str]], fixed: Dict[str, int]) -> str:
    """The setting that makes the run too large, as `key=value` text: the size of one sample or
    of the model when a single client with a single sample does not fit (dataset.dim,
    model=...); else the source's own buffers (e.g. dataset.test_size) when they alone exceed
    the limit; else the per-client sample counts when a single client does not fit; else the
    number of clients."""
    # which is too large, a sample or the model: one sample's data against one model's parameters
    # and two optimizer moments (not the whole training state, which would blame the model for
    # a linear model on huge inputs, whose size the inputs set)
    sample_numel, num_params, element_size, value_bytes = size.sample_numel, size.num_params, size.element_size, \
        size.value_bytes
    data_part, model_part = data_bytes(1, 1, 1, sample_numel, value_bytes), 3 * num_params * element_size
    if data_part + model_part > limit:
        if model_part > data_part and keys.get("model"):
            return keys["model"]
        return keys.get("dim") or keys.get("model") or keys["clients"]
    for key, held in fixed.items():
        if held > limit:
            return key
    base = sum(fixed.values())
    if base + data_bytes(1, size.train_width, size.test_width, sample_numel, value_bytes) \
            + model_bytes(1, num_params, size.row_activation_bytes, element_size) > limit \
            and keys.get("samples"):
        return keys["samples"]
    return keys["clients"]


def check_fits(size: RunSize, device: torch.device, what: Optional[str] = None,
               keys: Optional[Dict[str, Optional[str]]] = None, fixed: Optional[Dict[str, int]] = None) -> None:
    """ConfigError with the estimate and the limit when the run cannot fit in memory. The
    message starts with `what`, or else with the key(s) that drive the size (`blame`): `keys`
    maps "clients", "samples", "dim", "model" to their `key=value` text; `fixed` maps a key to
    bytes the data source holds besides the clients' data (e.g. its test sets); `size` (RunSize) what
    sets the run's memory."""
    limit = available_bytes(device)
    if limit is None:
        return
    fixed = dict(fixed or {})
    num_clients, train_width, test_width, sample_numel = size.num_clients, size.train_width, size.test_width, \
        size.sample_numel
    num_params = size.num_params
    data = data_bytes(num_clients, train_width, test_width, sample_numel, size.value_bytes)
    rows = num_clients if size.rows is None else size.rows
    models = model_bytes(rows, num_params, size.row_activation_bytes, size.element_size)
    held = sum(fixed.values())
    need = data + models + held
    if need > limit:
        advice = "use fewer clients or samples"
        if what is None:
            what = blame(size, limit, {"clients": f"partition.num_clients={num_clients}", **(keys or {})}, fixed)
            advice = ("use a smaller model or smaller inputs" if what.startswith("model=")
                      else f"lower {what.split('=')[0]}")
        source = f", {held / GiB:.1f} GiB of the data set's own test sets and parameters" if held >= GiB / 10 else ""
        raise ConfigError(
            f"{what}: this run needs at least {need / GiB:.1f} GiB ({num_clients:,} clients x up to "
            f"{train_width}+{test_width} samples of {sample_numel:,} values = {data / GiB:.1f} GiB of data, "
            f"{models / GiB:.1f} GiB to train {rows:,} models at once ({num_params:,} parameters each: "
            f"{COPIES_PER_ROW} copies with gradients and optimizer state, and a batch's activations)"
            f"{source}) but {limit / GiB:.1f} GiB is available on {device.type}; {advice}")
