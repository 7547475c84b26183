"""Named, derived random streams.

Every random decision draws from a generator seeded by (run seed, purpose, round).
No global RNG state is carried from round to round, so a resumed run makes exactly
the same draws as an uninterrupted one, and both engines see the same batches.
"""
import hashlib

import torch


def derived_seed(seed: int, purpose: str, *keys: int) -> int:
    text = f"{seed}|{purpose}|" + "|".join(str(k) for k in keys)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") & ((1 << 63) - 1)


def generator(seed: int, purpose: str, *keys: int) -> torch.Generator:
    """A CPU generator for one purpose (e.g. 'batches', round 7)."""
    g = torch.Generator()
    g.manual_seed(derived_seed(seed, purpose, *keys))
    return g
