"""2x2 max-pooling with stride 2, the same values and gradients as `nn.MaxPool2d(2)`, faster on CPU.

PyTorch's CPU max_pool2d kernel was the largest single cost of scoring LeNet (LeNet forward:
30.7 us per sample with nn.MaxPool2d, 9.4 with this, `python benchmarks/microbench.py`); the maximum
of the four strided sub-grids is about 10x faster forward. The backward pass gives each output's gradient to the first maximal input of its
window in row-major order, which is what max_pool2d's saved index does, so the two are
interchangeable bit for bit (tests/unit/test_fast_paths.py).

Under autograd the native kernel is used below `MIN_TRAIN_ELEMENTS` input elements: its forward
and backward together were faster there (1 thread, microseconds per forward + backward, native /
strided, 2026-11-26): LeNet's first pool at batch 10 (10x6x24x24) 431 / 746, its second
(10x16x8x8) 205 / 636, at batch 100 3107 / 3208; the strided one wins on large maps: 32x32x28x28
(the letters CNN at batch 32) 7656 / 4526. Inference always takes the strided one (10x6x24x24:
259 / 134; 100x6x24x24: 2465 / 305)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

MIN_TRAIN_ELEMENTS = 2 ** 18


class _StridedMax2x2(torch.autograd.Function):
    generate_vmap_rule = True   # usable inside the batched engine's vmap(grad(...))

    @staticmethod
    def forward(x):
        a, b = x[..., 0::2, 0::2], x[..., 0::2, 1::2]
        c, d = x[..., 1::2, 0::2], x[..., 1::2, 1::2]
        return torch.maximum(torch.maximum(a, b), torch.maximum(c, d))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], output)

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        grad_in = torch.zeros_like(x)
        taken = torch.zeros_like(out, dtype=torch.bool)
        for i in (0, 1):
            for j in (0, 1):
                hit = (x[..., i::2, j::2] == out) & ~taken
                grad_in[..., i::2, j::2] = grad * hit
                taken |= hit
        return grad_in


def max_pool_2x2(x: torch.Tensor) -> torch.Tensor:
    """max_pool2d(x, 2) for even or odd sides (an odd last row/column is dropped, as there)."""
    h, w = x.shape[-2] // 2 * 2, x.shape[-1] // 2 * 2
    if x.device.type != "cpu" or (torch.is_grad_enabled() and x.requires_grad and x.numel() < MIN_TRAIN_ELEMENTS):
        return F.max_pool2d(x, 2)
    return _StridedMax2x2.apply(x[..., :h, :w])


class MaxPool2x2(nn.Module):
    """Drop-in for nn.MaxPool2d(2) (see the module docstring)."""

    def forward(self, x):
        return max_pool_2x2(x)
