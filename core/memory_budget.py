"""Will a context's KV cache fit in memory?  Asked before llama.cpp allocates it.

llama.cpp allocates every cell of a context when it is made; one that does not
fit makes the system swap, or the process die.  :func:`check_context` refuses
it first with a message that says what to do.

>>> kv_cache_bytes(n_layer=30, n_embd=576, n_head=9, n_head_kv=3, n_ctx=2048)
47185920
"""
from __future__ import annotations

import os

from .errors import ModelError

HEADROOM = 0.8    # the cache may take at most this share of the memory available


def available_memory(meminfo: str = "/proc/meminfo") -> int | None:
    """Bytes the system can hand out without swapping: MemAvailable (page cache counts as
    available), not free pages; None where the system does not say."""
    try:
        with open(meminfo, encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def kv_cache_bytes(n_layer: int, n_embd: int, n_head: int, n_head_kv: int, n_ctx: int) -> int:
    """Memory the KV cache of *n_ctx* tokens takes (f16 keys and values, every layer)."""
    kv_dim = n_embd // max(1, n_head) * n_head_kv
    return 2 * 2 * n_layer * kv_dim * n_ctx


def check_context(n_ctx: int, need: int, model_name: str) -> None:
    """Raise ModelError when a cache of *need* bytes for *n_ctx* tokens cannot fit; say nothing
    where the system does not tell how much memory is available."""
    free = available_memory()
    if free is None:
        return
    if need > HEADROOM * free:
        raise ModelError(
            f"A context of {n_ctx:,} tokens needs about {need / 2**30:.1f} GiB for {model_name}'s "
            f"cache; {free / 2**30:.1f} GiB of memory is available. Choose a smaller context size."
        )
