"""How this llama.cpp build decodes batches: a micro-benchmark, measured once per runtime.

Two numbers: the largest batch a decode computes bit-identically to one token
at a time (point 2 of the bit-exactness contract in core/llama_runtime.py,
which says why a build may fall short), and what an n-token decode costs in
one-token decodes (drafting weighs a draft's length by it).  Callers ask
:meth:`LlamaRuntime.batch_profile`, which measures through the public methods
here once and keeps the result.

>>> BatchProfile(8, {1: 1.0, 2: 1.5, 4: 2.5, 8: 4.5}).cost_of(3)
2.0
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover - typing only (llama_runtime imports this module)
    from .llama_runtime import LlamaRuntime

PROBE_TEXT = ("Thank you for your message. I will look into the schedule and get back to you by Friday "
              "with the updated numbers for the quarterly report. In the meantime, please send me the "
              "signed contract and the invoice from March.")


@dataclass
class BatchProfile:
    """``exact``: largest batch decoded bit-identically to one token at a time; ``cost``: n -> time of
    an n-token decode in single-token decodes (measured at 1, 2, 4, 8)."""

    exact: int
    cost: dict

    def cost_of(self, n: int) -> float:
        """Cost of an n-token decode, interpolated linearly between the measured sizes."""
        sizes = sorted(self.cost)
        if n <= sizes[0]:
            return self.cost[sizes[0]] * n / sizes[0]
        for a, b in zip(sizes, sizes[1:]):
            if n <= b:
                return self.cost[a] + (self.cost[b] - self.cost[a]) * (n - a) / (b - a)
        a, b = sizes[-2], sizes[-1]
        return self.cost[b] + (self.cost[b] - self.cost[a]) / (b - a) * (n - b)


def measure(rt: "LlamaRuntime", max_n: int = 8) -> BatchProfile:
    """Probe *rt* (about half a second; its KV cache is cleared before and after).

    Probed as verification runs: with hidden-state output off (no store) and on (chunks or kNN
    active, which switches llama.cpp to outputs for every token), at two positions.
    """
    toks = rt.tokenize(PROBE_TEXT)
    exact = max_n
    for hidden in (False, True):
        for start in (12, 28):
            exact = min(exact, exact_batch(rt, toks[:start], toks[start:start + max_n], hidden))
    head, tail = toks[:12], toks[12:12 + max_n]
    rt.reset()
    rt.eval(head)
    costs = {}
    for n in (1, 2, 4, 8):
        if n > len(tail):
            break
        best = float("inf")
        for _ in range(3):
            rt.truncate(len(head))
            t0 = time.perf_counter()
            rt.eval(tail[:n], outputs="all", hidden=False)
            best = min(best, time.perf_counter() - t0)
        costs[n] = best
    rt.reset()
    return BatchProfile(exact, {n: c / costs[1] for n, c in costs.items()})


def exact_batch(rt: "LlamaRuntime", head: list[int], tail: list[int], hidden: bool) -> int:
    """The largest n such that decoding tail[:n] as one batch gives, row for row, the logits
    of decoding it one token at a time after *head* (bit for bit)."""
    rt.reset()
    rt.eval(head, hidden=hidden)
    seq = [rt.eval([t], hidden=hidden).logits[0].copy() for t in tail]
    exact = 1
    for n in range(2, len(tail) + 1):
        rt.truncate(len(head))
        rows = rt.eval(tail[:n], outputs="all", hidden=hidden).logits
        if not all(np.array_equal(rows[i], seq[i]) for i in range(n)):
            break
        exact = n
    return exact
