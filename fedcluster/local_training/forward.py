"""Forward-only passes (scoring and evaluation): many models on one data set, or each model on
its own client's data.

All of them run under `torch.inference_mode` and in chunks whose largest activation fits a
memory budget (`chunk_size`): on a CPU the budget is cache-sized, because LeNet scored 2x
faster per sample in chunks of ~150-300 than of 4,096 (the activations of a big chunk leave the
cache between layers; benchmarks/benchmark.py); on a GPU it is large, to fill the device. The
chunk loop is outside the model loop, so one chunk of inputs serves every model while it is
in cache. Nothing here reads a value back to the host.

Client data is read as padded to the largest client (stored unpadded: data/samples.py); these
functions run the models on the real samples only (padding positions come back as zeros, or +inf for losses), so a skewed
partition with one large client costs no more than its real sample count."""
import functools
import math
import weakref
from typing import Callable, Optional

import torch
from torch.func import functional_call, vmap

from ..data.samples import ClientSamples, RealSamples
from ..models.rows import count_rows, row_of, take_rows
from ..models.stacked import Stack, on_device
from .losses import per_sample_loss
from .precision import autocast, full_precision
from .workers import cpu_workers, own_module, parallel_map, split_evenly

# Bytes of the largest activation of one chunk (per model): cache-sized on CPU (LeNet, 2 threads:
# 5.5 us per sample and model at 2 MiB, 6.5-7.2 at 4-8 MiB, 14.2 at 16 MiB; benchmarks/microbench.py),
# large on GPU.
CHUNK_BUDGET = {"cpu": 2 * 2 ** 20, "cuda": 512 * 2 ** 20}
DECODE_BLOCK_BYTES = 16 * 2 ** 20   # inputs decoded at once from compact storage by map_shared (all models read them)
# {model: {(input shape, dtype, device): bytes}}, held weakly: a model that is gone takes its sizes with it, so
# a new model that reuses its id() never reads them (keying by id() did: a test order gave one CNN another's).
_ACTIVATION_BYTES = weakref.WeakKeyDictionary()


def in_eval_mode(fn):
    """Run `fn(model, ...)` with the model in eval mode (batch norm uses each model's running
    statistics, dropout is off), then restore the model's mode."""
    @functools.wraps(fn)
    def wrapper(model, *args, **kwargs):
        was_training = model.training
        model.eval()
        try:
            return fn(model, *args, **kwargs)
        finally:
            model.train(was_training)
    return wrapper


def largest_activation_bytes(model, sample: torch.Tensor) -> int:
    """Bytes of the largest output of any layer of `model` for one sample (measured once per
    model and input shape with forward hooks)."""
    key = (tuple(sample.shape), sample.dtype, sample.device.type)
    known = _ACTIVATION_BYTES.setdefault(model, {})
    if key not in known:
        sizes = [sample.numel() * sample.element_size()]
        hooks = [m.register_forward_hook(lambda _m, _i, o: sizes.append(o.numel() * o.element_size())
                                         if torch.is_tensor(o) else None)
                 for m in model.modules() if not list(m.children())]
        try:
            with torch.inference_mode():
                model(torch.zeros(1, *sample.shape, dtype=sample.dtype, device=sample.device))
        finally:
            for h in hooks:
                h.remove()
        known[key] = max(sizes)
    return known[key]


def paired_chunk(model, x: torch.Tensor) -> int:
    """Models per chunk of the batched paired forward (x [N, Nmax, ...]: each model on one client's
    padded samples): as many whole clients' activations as fit the device's chunk budget, 8 times over
    (at least 1)."""
    budget = 8 * CHUNK_BUDGET["cuda" if x.device.type == "cuda" else "cpu"]
    return max(1, budget // max(largest_activation_bytes(model, x[0, 0]) * x.shape[1], 1))


def chunk_size(model, x: torch.Tensor) -> int:
    """Samples per chunk for inputs like x [N, ...] (at least 16)."""
    budget = CHUNK_BUDGET["cuda" if x.device.type == "cuda" else "cpu"]
    return max(16, budget // max(largest_activation_bytes(model, x[0]), 1))


def _normal(t: torch.Tensor) -> torch.Tensor:
    """An ordinary tensor from an inference-mode one, so that callers may use it in autograd
    (as a constant: CAM's offsets, FedEM's weights)."""
    return t.clone()


class _Chunks(torch.nn.Module):
    """Runs `net` over consecutive chunks of its input in one forward call, so that one
    `functional_call` (one parameter swap, ~0.2 ms) serves all the chunks of a model."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, slices, fn, features: bool = False):
        if features:
            return torch.cat([fn(full_precision(self.net(x[s], with_features=True)[1]), s) for s in slices])
        return torch.cat([fn(full_precision(self.net(x[s])), s) for s in slices])


@in_eval_mode
def map_shared(model, params: Stack, x: torch.Tensor, fn: Callable[[torch.Tensor, slice], torch.Tensor]):
    """[M, N, ...]: fn(outputs of model m on x[s], s) for every model m in `params` and chunk s of x.
    The chunks are split into one contiguous run per CPU thread (local_training/workers.py); each thread
    runs every model over its run of chunks. Inputs stored compactly (data/samples.py RealSamples) are
    decoded a block of chunks at a time (DECODE_BLOCK_BYTES of inputs), once for all the models."""
    M = next(iter(params.values())).shape[0]
    step = chunk_size(model, x)
    rows = [{f"net.{k}": v[m] for k, v in params.items()} for m in range(M)]
    slices = [slice(i, min(i + step, len(x))) for i in range(0, len(x), step)]
    sample_bytes = max(1, x[0].numel() * x[0].element_size()) if len(x) else 1
    per_block = max(1, DECODE_BLOCK_BYTES // (sample_bytes * step)) if isinstance(x, RealSamples) else len(slices)

    def run(part):
        chunks = _Chunks(own_module(model))
        outs = []
        with torch.inference_mode(), autocast():
            for b in range(0, len(part), per_block):
                block = part[b:b + per_block]
                a = block[0].start
                xb = x[a:block[-1].stop]                    # a view of a tensor; decoded once for stored samples
                local = [slice(s.start - a, s.stop - a) for s in block]
                at = (lambda out, s, a=a: fn(out, slice(s.start + a, s.stop + a))) if a else fn
                outs.append(torch.stack([functional_call(chunks, p, (xb, local, at)) for p in rows]))
        return torch.cat(outs, dim=1) if len(outs) > 1 else outs[0]

    with torch.inference_mode(), cpu_workers(x.device) as workers:
        out = torch.cat(workers.map(run, split_evenly(slices, workers.count)), dim=1)
    return _normal(out)


def outputs_on_shared(model, params: Stack, x: torch.Tensor) -> torch.Tensor:
    """Outputs of every model in `params` [M] on the same inputs x [N, ...]: [M, N, ...]."""
    return map_shared(model, params, x, lambda out, s: out)


def real_inputs(x, mask: torch.Tensor):
    """The inputs at `mask` of client data x: decoded chunk by chunk as they are read where x is
    stored compactly (data/samples.py), else x[mask]."""
    return x.real(mask) if isinstance(x, ClientSamples) else x[mask]


def outputs_on_clients(model, params: Stack, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Every model [K] on every client's real samples (x [N, Nmax, ...], mask [N, Nmax]):
    [K, N, Nmax, ...], zeros at padding."""
    flat = outputs_on_shared(model, params, real_inputs(x, mask))     # [K, total, ...]
    out = flat.new_zeros(flat.shape[0], *mask.shape, *flat.shape[2:])
    out[:, mask] = flat
    return out


@in_eval_mode
def outputs_paired(model, params: Stack, x: torch.Tensor, n: torch.Tensor, batched: bool,
                   rows: Optional[torch.Tensor] = None, features: bool = False) -> torch.Tensor:
    """Model m on its own client's inputs x[rows[m]] (rows: default 0..M-1): [M, Nmax, ...].
    Only the first n[rows[m]] positions of row m are meant to be read: the looped formulation
    leaves zeros at padding, the batched one the outputs of the padded inputs. `batched` runs all models at once under vmap over the padded data (the
    GPU's formulation), else a loop over each client's real samples, chunked and spread over
    the CPU threads. `features`: the models' features (the input of the last layer,
    `model(x, with_features=True)[1]`) instead of their outputs."""
    if rows is None:
        rows = torch.arange(count_rows(params))
    kwargs = {"with_features": True} if features else {}
    with torch.inference_mode(), autocast():
        if batched:   # in chunks of models, so the models' rows (Rows: read here) and outputs of one chunk are held
            step = paired_chunk(model, x)
            parts = []
            for a in range(0, len(rows), step):
                p = on_device(take_rows(params, slice(a, a + step)), x.device)   # rows kept on the host
                out = vmap(lambda p, xm: functional_call(model, p, (xm,), kwargs))(p, x[rows[a:a + step].to(x.device)])
                parts.append(out[1] if features else out)
            return _normal(full_precision(torch.cat(parts)))
        step = chunk_size(model, x[0])
        sizes = n[rows.to(n.device)].tolist()          # one read of the sizes, not one per client

        def client(m):
            client_row, n_m = int(rows[m]), sizes[m]
            p = {f"net.{k}": v.to(x.device) for k, v in row_of(params, m).items()}
            xs = x[client_row, :max(n_m, 1)]
            slices = [slice(i, min(i + step, len(xs))) for i in range(0, len(xs), step)]
            with torch.inference_mode(), autocast():
                out = functional_call(_Chunks(own_module(model)), p, (xs, slices, lambda o, s: o, features))
                full = out.new_zeros(x.shape[1], *out.shape[1:])
                full[:n_m] = out[:n_m]
            return full

        out_rows = parallel_map(client, range(len(sizes)), x.device)
        return _normal(full_precision(torch.stack(out_rows)))


def losses_on_clients(model, task: str, params: Stack, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor,
                      offsets: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Per-sample loss of each model [K] on every client's samples: [K, N, Nmax] (padding = +inf).
    `offsets` [N, Nmax, C] are added to every model's outputs (Fed-CAM's h(x; Theta_g), eq. 2).
    Only the losses are kept, never the [K, N, ...] outputs."""
    flat_y = y[mask]
    flat_offsets = offsets[mask] if offsets is not None else None

    def loss(out, s):
        if flat_offsets is not None:
            out = out + flat_offsets[s]
        return per_sample_loss(task, out, flat_y[s])

    flat = map_shared(model, params, real_inputs(x, mask), loss)       # [K, total]
    losses = torch.full((flat.shape[0], *mask.shape), math.inf, dtype=flat.dtype, device=flat.device)
    losses[:, mask] = flat
    return losses
