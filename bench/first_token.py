"""First suggested token with a populated store: numpy's BLAS threads and the runtime's logits memo.

Both personas' new emails (bench/data/personas, the split asked) are typed word by word as
bench/keystrokes.py types them (the editor's framing and request settings, the persona's library
plus *Learn from my writing* on their sent mail, Settings() defaults), once per variant:

  as before             numpy's BLAS with its own threads, no logits memo (the code before this bench)
  one BLAS thread       core/llama_runtime.py leave_cores_to_llama alone
  logits memo           LlamaRuntime._logits_at alone (a prompt the cache holds whole needs no decode)
  both (shipped)        what the product runs

The variants take turns email by email, each from an empty KV cache, so the machine's state is
shared alike.  Printed per variant: first-token latency (request to the first piece with text)
p50 / p90 / max, the one-token decodes' own time (llama_decode alone, p50 / p90), the requests
answered, and the keystroke savings, which must be the same in every row: neither change may alter a
suggestion.  Then how long the spelling table that token healing reads takes to make
(core/healing.py; ``Engine.warm`` makes it when the editor loads the model).

    python bench/first_token.py                  # dev and test emails, about 6 minutes here
    python bench/first_token.py --split dev
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_info, threadpool_limits  # noqa: E402

from bench.common import OUT, machine, save_plot, table, time_each_call  # noqa: E402
from bench.keystrokes import Tally, emails, learned_engine, type_email  # noqa: E402
from chunkwise.core import healing, llama_runtime  # noqa: E402
from chunkwise.core.llama_runtime import LlamaRuntime  # noqa: E402
from chunkwise.core.paths import resolve_model_path  # noqa: E402
from chunkwise.core.settings import Settings  # noqa: E402

SHIPPED_KEPT = llama_runtime.LOGITS_KEPT
VARIANTS = {                 # name: (BLAS threads, or None for OpenBLAS's own count; logits memo on)
    "as before": (None, False),
    "one BLAS thread": (1, False),
    "logits memo": (None, True),
    "both (shipped)": (1, True),
}


def blas_default() -> int:
    """OpenBLAS's own thread count in this process before Chunkwise limits it (one per core)."""
    import os
    return max(1, os.cpu_count() or 1)


def use(variant: str) -> None:
    threads, memo = VARIANTS[variant]
    threadpool_limits(threads or blas_default(), user_api="blas")
    llama_runtime.LOGITS_KEPT = SHIPPED_KEPT if memo else 0       # 0: every row is forgotten as it is kept


class DecodeClock:
    """The time of every one-token llama_decode, by variant (the runtime's one decode call, wrapped)."""

    def __init__(self, rt) -> None:
        self.variant = "learning"                   # the decodes of Learn from my writing, not counted
        self.seconds: dict[str, list[float]] = {v: [] for v in (*VARIANTS, self.variant)}
        time_each_call(rt, "_decode", self.record)

    def record(self, seconds: float, tokens) -> None:
        if len(tokens) == 1:
            self.seconds[self.variant].append(seconds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test", "all"), default="all")
    args = ap.parse_args()
    print(f"Machine: {machine()}\n")
    tallies = {v: Tally() for v in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        runtime = LlamaRuntime(resolve_model_path(None), n_threads=2)
        start = time.perf_counter()
        healing.vocabulary(runtime)              # made once, before every variant alike
        table_seconds = time.perf_counter() - start
        clock = DecodeClock(runtime)
        for persona in ("mara", "teo"):
            engine = learned_engine(Path(tmp), persona, runtime, True)
            for email in emails(persona, args.split):
                for variant in VARIANTS:
                    use(variant)
                    clock.variant = variant
                    runtime.reset()
                    tallies[variant].add(type_email(engine, email, Settings()))
            engine.store.close()
    use("both (shipped)")
    blas = [i.get("num_threads") for i in threadpool_info() if i.get("user_api") == "blas"]
    rows = []
    for variant, t in tallies.items():
        ms = np.array(t.latencies) * 1000
        one = np.array(clock.seconds[variant]) * 1000
        rows.append([variant, f"{np.percentile(ms, 50):.0f} / {np.percentile(ms, 90):.0f} / {ms.max():.0f}",
                     f"{np.percentile(one, 50):.0f} / {np.percentile(one, 90):.0f} ({len(one)})",
                     str(len(ms)), f"{100 * (1 - t.keys / t.chars):.1f}%"])
    print(f"### {args.split} emails, learned store + profile, Settings() defaults "
          f"(BLAS threads by default here: {blas_default()}; shipped: {blas})\n")
    print(table(["variant", "first token p50 / p90 / max (ms)", "one-token decodes p50 / p90 (ms, count)",
                 "requests answered", "keystroke savings"], rows))
    print(f"\nthe spelling table (core/healing.py, {runtime.n_vocab} tokens) made in {table_seconds:.2f} s "
          "on a model just loaded, before the first email (as Engine.warm makes it in the editor)")
    OUT.mkdir(exist_ok=True)
    plot(tallies, args.split)


def plot(tallies: dict[str, Tally], split: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for variant, t in tallies.items():
        ms = np.sort(np.array(t.latencies) * 1000)
        ax.plot(ms, np.arange(1, len(ms) + 1) / len(ms), label=variant)
    ax.axvline(100, color="grey", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("request to first suggested token (ms, log scale)")
    ax.set_ylabel("share of requests")
    ax.set_title(f"First token, learned store ({split} emails)")
    ax.legend(fontsize=8)
    print(f"\nplot: {save_plot(fig, f'first-token-{split}.png')}")


if __name__ == "__main__":
    main()
