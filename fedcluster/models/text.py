"""TextCNN (Kim 2014) for token-id inputs: CLoVE's AG News model ("a TextCNN with an embedding
layer", App. B; sizes are not given there: ours are Kim's kernel widths 3/4/5 with 64 channels
each and 64-dimensional embeddings, no dropout so the batched engine can train it)."""
from typing import Annotated, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..rules import AtLeast, OneOf
from .init import INITS, check_sizes, initialize


class TextCNN(nn.Module):
    def __init__(self, in_shape, num_outputs: int, vocab_size: Annotated[int, AtLeast(1)] = 20000,
                 embed_dim: Annotated[int, AtLeast(1)] = 64,
                 kernel_sizes: Annotated[Sequence[int], AtLeast(1)] = (3, 4, 5),
                 channels: Annotated[int, AtLeast(1)] = 64, init: Annotated[str, OneOf(INITS)] = "xavier"):
        super().__init__()
        (vocab_size,) = check_sizes("vocab_size", vocab_size)
        (embed_dim,) = check_sizes("embed_dim", embed_dim)
        kernel_sizes = check_sizes("kernel_sizes", kernel_sizes)
        (channels,) = check_sizes("channels", channels)
        self.embed = nn.Embedding(vocab_size + 2, embed_dim)    # ids 0 (padding) and 1 (unknown) first
        self.convs = nn.ModuleList(nn.Conv1d(embed_dim, channels, k) for k in kernel_sizes)
        self.fc = nn.Linear(channels * len(kernel_sizes), num_outputs)
        initialize(self, init)

    def forward(self, x: torch.Tensor, with_features: bool = False):
        """x: [B, max_len] token ids (stored as floats by the data pipeline, exact below 2^24);
        with_features: (logits, the pooled convolution features the last layer reads)."""
        e = self.embed(x.long()).transpose(1, 2)                  # [B, embed_dim, max_len]
        feats = torch.cat([F.relu(conv(e)).amax(-1) for conv in self.convs], dim=1)
        out = self.fc(feats)
        return (out, feats) if with_features else out
