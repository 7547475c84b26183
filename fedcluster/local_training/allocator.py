"""Keep freed CPU memory in the process for reuse (glibc malloc tunables).

By default glibc serves every allocation above 128 KiB-32 MiB (a threshold it adapts) with a
fresh mmap and returns it to the system on free, so each training step's activations and
gradients of a few MiB can arrive as new pages and page-fault on first touch. On this project's
(virtualised) CPU a LeNet training step at batch 100 took 75.7 us per sample with glibc's
defaults and 49.8 with these tunables (`python benchmarks/microbench.py`). Raising the mmap
threshold to its maximum (32 MiB) and never trimming the heap keeps those pages mapped and reused. Memory a run has freed is then not given back to the
system until it ends; its peak is unchanged. A no-op off glibc (macOS, Windows, musl)."""
import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_MAX = 32 * 2 ** 20          # glibc's ceiling on 64-bit systems
_done = {"tuned": None}


def keep_freed_memory() -> bool:
    """Apply the tunables once per process; True where glibc took them."""
    if _done["tuned"] is None:
        _done["tuned"] = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                ok = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX) == 1
                ok &= libc.mallopt(M_TRIM_THRESHOLD, 2 ** 31 - 1) == 1
                _done["tuned"] = bool(ok)
            except (OSError, AttributeError):
                pass
    return _done["tuned"]
