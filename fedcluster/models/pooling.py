"""2x2 max-pooling with stride 2, the same values and gradients as `nn.MaxPool2d(2)`, faster on CPU.

PyTorch's CPU max_pool2d kernel was the largest single cost of scoring LeNet (LeNet forward:
30.7 us per sample with nn.MaxPool2d, 9.4 with this, `python scripts/microbench.py`); the maximum
of the four strided sub-grids is about 10x faster forward. The backward pass gives each output's gradient to the first maximal input of its
window in row-major order, which is what max_pool2d's saved index does, so the two are
interchangeable bit for bit (tests/test_fast_paths.py). Under autograd, small maps (fewer than
`MIN_TRAIN_PIXELS` pixels per channel) keep the native kernel, whose backward measured faster
there."""
import torch
import torch.nn as nn
import torch.nn.functional as F

MIN_TRAIN_PIXELS = 256


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
    if x.device.type != "cpu" or (torch.is_grad_enabled() and x.requires_grad and h * w < MIN_TRAIN_PIXELS):
        return F.max_pool2d(x, 2)
    return _StridedMax2x2.apply(x[..., :h, :w])


class MaxPool2x2(nn.Module):
    """Drop-in for nn.MaxPool2d(2) (see the module docstring)."""

    def forward(self, x):
        return max_pool_2x2(x)
