"""The library's own numpy work under one BLAS thread against two: what leaving the cores to llama.cpp costs it.

``core/llama_runtime.leave_cores_to_llama`` limits numpy's BLAS to one thread for the whole process
when a model loads, because OpenBLAS's spinning threads slowed the suggestion path (bench/first_token.py).
The same process also reads the whole library (``Engine.refresh``: every context whitened and
indexed) and learns (``core/learning.mine``), where products are larger.  This times both on this
machine, the two settings taking turns in alternating order (1, 2, 2, 1, ...), after a first run of
each job that is left out (it builds the index, or warms the caches):

  refresh   the paper's PII profile plus --contexts synthetic learned contexts (bench/library_update.py's
            library), read again in full
  learn     Learn from my writing on one persona's 16 sent emails (gamma 0.5, corpus teacher, kNN
            rows; bench/personal.learn), into an empty store each time

    python bench/blas_threads.py               # 100k contexts, 4 refreshes and 4 learns a setting, about 5 minutes
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from threadpoolctl import threadpool_limits  # noqa: E402

from bench.common import Timer, machine, table  # noqa: E402
from bench.library_update import large_library  # noqa: E402
from bench.personal import learn  # noqa: E402
from chunkwise.core import ChunkStore, Engine  # noqa: E402

SETTINGS = (1, 2)          # BLAS threads: the shipped limit, and what numpy takes on two cores


def turns(r: int) -> tuple[int, ...]:
    """The settings' order in round *r*: alternating, so neither always goes first."""
    return SETTINGS if r % 2 == 0 else SETTINGS[::-1]


def timed(call) -> float:
    with Timer() as t:
        call()
    return t.seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--contexts", type=int, default=100_000)
    ap.add_argument("--refreshes", type=int, default=4)
    ap.add_argument("--learns", type=int, default=4)
    args = ap.parse_args()
    refresh = {n: [] for n in SETTINGS}
    learning = {n: [] for n in SETTINGS}
    with tempfile.TemporaryDirectory() as tmp:
        store, engine = large_library(Path(tmp) / "library.db", args.contexts)
        try:
            engine.refresh()                                   # builds the index: not what is compared
            for r in range(args.refreshes):
                for n in turns(r):
                    with threadpool_limits(n, user_api="blas"):
                        refresh[n].append(timed(engine.refresh))
            for r in range(-1, args.learns):                  # round -1: a first Learn, left out
                for n in turns(r):
                    fresh = Engine(store=ChunkStore(Path(tmp) / f"learn-{r}-{n}.db"), n_threads=2,
                                   runtime=engine.runtime)
                    try:
                        with threadpool_limits(n, user_api="blas"):
                            took = timed(lambda: learn(fresh, "mara"))
                        if r >= 0:
                            learning[n].append(took)
                    finally:
                        fresh.store.close()
        finally:
            store.close()
            engine.runtime.close()
    cell = lambda xs: f"{statistics.median(xs):.2f} ({', '.join(f'{x:.2f}' for x in xs)})"
    print(f"Machine: {machine()}\n")
    print(table(["BLAS threads", f"refresh at {args.contexts:,} contexts, median (runs), s",
                 "Learn of 16 sent emails, median (runs), s"],
                [[str(n), cell(refresh[n]), cell(learning[n])] for n in SETTINGS]))


if __name__ == "__main__":
    main()
