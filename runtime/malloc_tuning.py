"""glibc's allocator, told what suits a worker whose memory is one long-lived cache and short planner peaks.

Objects above 512 bytes (dicts of more than a few keys, lists, JSON buffers) come from glibc's malloc, which
gives each thread that allocates an arena of its own, up to 8 per core; the worker's informer, activity and I/O
threads each leave freed peaks spread over theirs. `limit_arenas` caps them (the MALLOC_ARENA_MAX setting);
`release_free` hands pages freed after a pass back to the OS (malloc_trim). Both do nothing without glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from functools import cache

M_ARENA_MAX = -8  # glibc malloc.h
ARENAS_ENV = "MALLOC_ARENA_MAX"


@cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def limit_arenas(arenas: int) -> bool:
    """Cap glibc's arenas at `arenas` unless MALLOC_ARENA_MAX is set (the operator's word wins). Call it before
    threads start allocating. True when the cap is in force."""
    if os.environ.get(ARENAS_ENV):
        return True
    libc = _libc()
    return bool(libc is not None and libc.mallopt(M_ARENA_MAX, arenas))


def release_free() -> bool:
    """Return the pages glibc holds free to the OS; True when some were."""
    libc = _libc()
    return bool(libc is not None and libc.malloc_trim(0))
