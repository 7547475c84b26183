"""Arithmetic precision of the model's forward passes (`hardware.precision`).

- `fp32` (default): full float32 everywhere; same config + seed + device + thread count gives
  the same metrics.
- `tf32`: float32 storage, TensorFloat-32 matrix multiplies and convolutions on NVIDIA GPUs
  (10-bit mantissa products): faster on Ampere and newer, results differ from fp32 in about
  the 3rd-4th significant digit. No effect on a CPU.
- `bf16`: forward passes (training objective, scoring, evaluation) under `torch.autocast`
  with bfloat16; parameters, optimizer state and losses stay float32. Fastest on a GPU,
  results differ from fp32 in about the 2nd-3rd digit.
tf32 and bf16 runs are still deterministic for a given device, but compare them only with runs
of the same precision."""
import contextlib

import torch

PRECISIONS = ("fp32", "tf32", "bf16")
_state = {"mode": "fp32", "device_type": "cpu"}


def set_precision(mode: str, device_type: str) -> None:
    from ..errors import ConfigError
    if mode not in PRECISIONS:
        raise ConfigError(f"hardware.precision={mode!r} is not allowed; use one of {list(PRECISIONS)}")
    _state.update(mode=mode, device_type=device_type)
    if device_type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
        torch.backends.cudnn.allow_tf32 = mode == "tf32"
        # same seed -> same metrics on one GPU: cuDNN's deterministic kernels, no autotuning
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False


def autocast():
    """The context for a forward pass under the configured precision."""
    if _state["mode"] != "bf16":
        return contextlib.nullcontext()
    return torch.autocast(_state["device_type"], dtype=torch.bfloat16)


def full_precision(out: torch.Tensor) -> torch.Tensor:
    """Outputs of an autocast forward back in float32 (losses and metrics are never bf16)."""
    return out.float() if out.dtype in (torch.bfloat16, torch.float16) else out
