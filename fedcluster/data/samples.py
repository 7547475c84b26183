"""Client samples stored compactly: every client's samples back to back in the source's own dtype
(uint8 for images), decoded to model inputs only for the samples a step or an evaluation reads.

Issue 56: the samples used to be float32 and padded to the largest client, 4x the bytes of uint8
images and 3.3x more again at Dirichlet 0.1. `ClientSamples` keeps the engine's view of the data,
`x[client, position]` over a virtual [N, Nmax, *in_shape] (positions at or past a client's size read
as zeros, as the padding did), so the code that gathers batches is unchanged; only the storage is."""
from dataclasses import dataclass
from typing import List, Optional

import torch


@dataclass
class ImageDecode:
    """uint8 pixels -> the floats the models see: x / 255, then (x - mean) / std per channel when
    `dataset.normalize` is on. The same operations, in the same order, as the images had when they
    were stored decoded, so every input value is bit-identical."""
    mean: Optional[torch.Tensor] = None   # [C, 1, 1]
    std: Optional[torch.Tensor] = None

    def __call__(self, raw: torch.Tensor) -> torch.Tensor:
        images = raw.float().div_(255.0)   # in place on the new float tensor: one allocation per batch
        if self.mean is not None:
            images.sub_(self.mean).div_(self.std)
        return images

    def to(self, device) -> "ImageDecode":
        move = lambda t: None if t is None else t.to(device)
        return ImageDecode(move(self.mean), move(self.std))


class ClientSamples:
    """The samples of N clients: `storage` [total, *in_shape] holds client k's n[k] samples from
    `start[k]` on. Indexing follows a padded [N, width, *in_shape] tensor of decoded inputs in the
    compute `dtype`: x[k, positions], x[rows[:, None], positions], x[k, :n], x[rows] and x[mask]
    (a bool [N, width] mask), each returning a tensor."""

    def __init__(self, storage: torch.Tensor, n: torch.Tensor, decode=None, dtype: Optional[torch.dtype] = None):
        self.storage = storage
        self.n = n.to(storage.device)
        self.start = torch.cumsum(self.n, 0) - self.n
        self._sizes, self._starts = self.n.tolist(), self.start.tolist()   # host copies: one client's batch reads them
        self.width = max(int(n.max()), 1) if len(n) else 1
        self.decode = decode
        self.dtype = dtype if dtype is not None else (torch.float32 if decode is not None else storage.dtype)

    @classmethod
    def of_clients(cls, pieces: List[torch.Tensor], decode=None, dtype=None) -> "ClientSamples":
        """Each client's stored samples, in client order."""
        n = torch.tensor([len(p) for p in pieces], dtype=torch.long)
        return cls(torch.cat(pieces) if pieces else torch.zeros(0), n, decode, dtype)

    @property
    def device(self) -> torch.device:
        return self.storage.device

    @property
    def shape(self) -> torch.Size:
        return torch.Size((len(self.n), self.width, *self.storage.shape[1:]))

    @property
    def nbytes(self) -> int:
        return self.storage.numel() * self.storage.element_size()

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def to(self, device, dtype: Optional[torch.dtype] = None) -> "ClientSamples":
        """On `device`, decoded to `dtype` when read. Stored images keep their dtype; samples stored
        as the inputs themselves (no decode) are cast once, as before."""
        if self.decode is None:   # stored as the inputs themselves: cast once (text ids too, as before)
            return ClientSamples(self.storage.to(device, dtype), self.n, None, dtype)
        return ClientSamples(self.storage.to(device), self.n, self.decode.to(device), dtype or self.dtype)

    def stored(self, k: int) -> torch.Tensor:
        """Client k's samples as stored (for rebuilding splits: carve_validation)."""
        a = int(self.start[k])
        return self.storage[a:a + int(self.n[k])]

    def real(self, mask: torch.Tensor) -> "RealSamples":
        """The samples at `mask` ([N, width] bool, e.g. a split's real samples), in client order,
        decoded only as they are read: what scoring every model on every sample needs, without a
        float copy of all of them at once."""
        clients, positions = self._positions(mask)
        return RealSamples(self, self.start[clients] + positions)

    def _decoded(self, index: torch.Tensor) -> torch.Tensor:
        raw = self.storage[index]
        return (self.decode(raw) if self.decode is not None else raw).to(self.dtype)

    def _positions(self, key):
        """(clients, positions) index tensors broadcast to the result's leading shape."""
        if torch.is_tensor(key) and key.dtype == torch.bool:
            if key.ndim == 2:   # a [N, width] mask of samples
                return key.to(self.device).nonzero(as_tuple=True)
            key = key.to(self.device).nonzero().squeeze(1)   # a [N] mask of clients: their whole rows
        clients, positions = key if isinstance(key, tuple) else (key, slice(None))
        if isinstance(clients, slice):
            clients = torch.arange(len(self.n))[clients]
        clients = torch.as_tensor(clients, device=self.device)
        if isinstance(positions, slice):
            positions = torch.arange(self.width, device=self.device)[positions]
            clients = clients.unsqueeze(-1) if clients.ndim else clients
        positions = torch.as_tensor(positions, device=self.device)
        return torch.broadcast_tensors(clients, positions)

    def __getitem__(self, key) -> torch.Tensor:
        if isinstance(key, tuple) and len(key) > 2:   # x[k, positions, c, h, w]: then within each sample
            out = self[key[:2]]
            return out[(slice(None),) * (out.ndim - len(self.storage.shape) + 1) + key[2:]]
        if self.device.type == "cpu" and isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], int) \
                and torch.is_tensor(key[1]) and key[1].ndim == 1 and key[1].dtype != torch.bool:
            k, positions = key   # one client's batch (a step of the looped engine): when every position is real,
            if len(positions) == 0 or int(positions.max()) < self._sizes[k]:   # no padding to mask
                return self._decoded(positions + self._starts[k]).reshape(len(positions), *self.storage.shape[1:])
        clients, positions = self._positions(key)
        real = positions < self.n[clients]
        index = torch.where(real, self.start[clients] + positions, 0)
        if self.storage.shape[0] == 0:
            return torch.zeros(*index.shape, *self.storage.shape[1:], dtype=self.dtype, device=self.device)
        out = self._decoded(index.reshape(-1)).reshape(*index.shape, *self.storage.shape[1:])
        return out.masked_fill(~real.reshape(*real.shape, *[1] * (out.ndim - real.ndim)), 0)

    def __len__(self) -> int:
        return len(self.n)


class RealSamples:
    """Stored samples at `index` (flat positions), read like a [len(index), *in_shape] tensor of
    inputs: x[i] or x[a:b] decodes just those (forward.py's chunked scoring reads it in chunks)."""

    def __init__(self, samples: ClientSamples, index: torch.Tensor):
        self.samples, self.index = samples, index

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, key) -> torch.Tensor:
        if not isinstance(key, (int, slice)):
            raise TypeError(f"RealSamples reads x[i] or x[a:b], not x[{key!r}]")
        return self.samples._decoded(self.index[key])

    @property
    def device(self) -> torch.device:
        return self.samples.device

    @property
    def dtype(self) -> torch.dtype:
        return self.samples.dtype

    @property
    def shape(self) -> torch.Size:
        return torch.Size((len(self.index), *self.samples.storage.shape[1:]))
