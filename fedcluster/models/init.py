"""Weight initialisation shared by the models (`model.init`).

- `xavier` (FedSoft §5, App. C; authors' models.py): Xavier-normal linear weights, Kaiming-uniform
  conv weights, zero biases. fedcluster's default, and the FedSoft presets'.
- `pytorch`: PyTorch's own default initialisation of each layer (Kaiming-uniform with a=sqrt(5),
  uniform biases), which CLoVE §5.2 says it used; the CLoVE presets set it."""
import torch.nn as nn

from ..errors import ConfigError

INITS = ("xavier", "pytorch")


def xavier_normal_linear_kaiming_conv(module: nn.Module) -> None:
    """FedSoft (§5, App. C; authors' models.py): Xavier-normal linear weights,
    Kaiming-uniform conv weights, zero biases."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_normal_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Conv2d):
            nn.init.kaiming_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)


def initialize(module: nn.Module, init: str) -> None:
    """Apply `model.init` to a freshly built module (its layers already hold PyTorch's default)."""
    if init not in INITS:
        raise ConfigError(f"model.init={init!r} is unknown; allowed: {list(INITS)}")
    if init == "xavier" and not any(p.is_meta for p in module.parameters()):
        # a copy on the meta device (assemble.count_parameters, activation_numel) holds shapes only: no
        # values to draw, and drawing them there loads torch._dynamo (about a second), which a looped-engine run
        # needs nowhere else (torch.func's grad and torch.optim's step import it, measured 2026-11-29; that engine
        # uses neither); a CNN's sizes are probed on an uninitialised CPU copy for the same reason (models/cnn.py
        # _flat_size, assemble.activation_numel)
        xavier_normal_linear_kaiming_conv(module)


def check_sizes(key: str, values, allow_empty: bool = False, length: int = None) -> tuple:
    """A model's list of layer sizes (`model.<key>`) as a tuple of ints >= 1; ConfigError naming
    the key otherwise (an empty list where a layer is needed, a wrong count, a size below 1)."""
    sizes = tuple(values) if hasattr(values, "__iter__") and not isinstance(values, str) else (values,)
    if length is not None and len(sizes) != length:
        raise ConfigError(f"model.{key}={list(sizes)} has {len(sizes)} entries; allowed: exactly {length} sizes >= 1")
    if not sizes and not allow_empty:
        raise ConfigError(f"model.{key}=[] is empty; allowed: a list of one or more sizes >= 1")
    bad = [s for s in sizes if isinstance(s, bool) or not isinstance(s, int) or s < 1]
    if bad:
        raise ConfigError(f"model.{key}={list(sizes)} holds {bad[0]!r}; allowed: sizes that are integers >= 1")
    return sizes
