"""Give freed memory back to the OS between steps.

Training on CPU allocates tensors of a different shape every micro-batch (packed lengths vary), and glibc's
allocator keeps the freed pages in its arenas: resident memory then creeps up step after step (measured
here: 4.7 → 9.7 GB over six SFT steps of the 135M model) although nothing is leaked. malloc_trim returns
them; it is a no-op where glibc is absent.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.cache
def _libc():
    name = ctypes.util.find_library("c")
    try:
        lib = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return lib if lib is not None and hasattr(lib, "malloc_trim") else None


def release_memory() -> None:
    """Return freed heap pages to the OS (glibc malloc_trim); call after each optimizer step."""
    lib = _libc()
    if lib is not None:
        lib.malloc_trim(0)
