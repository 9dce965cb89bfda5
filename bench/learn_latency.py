"""Learning one sent email into a large library: how long the learning job holds the lane, now against before.

The editor learns each email the user sends, once they have opted in (Tools → Learn from my writing
does the same for a folder): ``core/learning.mine`` with the editor's options (gamma 0.5, the
corpus as teacher, kNN rows).  The lane that serves suggestions is the learning job's while it
runs.  The library is a user's after months of learning: an encrypted store with the paper's PII
profile, --contexts learned contexts (bench/library_update.py's synthetic mined chunks) and a kNN
datastore of --knn rows (bench/store_load.py's synthetic rows), its graph built and in memory, as
after a session of suggestions with "Also predict from my writing" on.

Each round learns one real sent email of the personas (bench/data/personas, a different one each
round) the way ``mine`` does now, phases timed:

  mining       the model over the email, chunks cut, kNN rows made (core/distill.Miner)
  store write  chunks, contexts and kNN rows in one transaction (ChunkStore.add_mined)
  matching     matching follows the chunks mined, in place (Engine.refresh(chunk_ids=...))
  kNN graph    the datastore in memory grows by the email's rows and is kept (Engine.catch_up_knn)
  phrases      the words before the user's library values in the email (core/feedback.learn_from_mail)

then, on the same store, what ``mine`` ran after the store write before: the whole library read
again (Engine.refresh()) and the kNN graph built over every row (the kept one was for fewer rows).
Both on the same machine, the same store, one after the other.

Then a Learn of a few hundred emails at once (--batch-rows synthetic kNN rows): the graph grows in
slices, and the longest stretch without a chance to answer a suggestion is timed.

    python bench/learn_latency.py                      # 100k contexts, 100k kNN rows, 3 emails
    python bench/learn_latency.py --contexts 20000 --knn 20000 --rounds 2
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import OUT, machine, table  # noqa: E402
from bench.library_update import large_library  # noqa: E402
from bench.store_load import fill_knn  # noqa: E402
from chunkwise.core import Engine  # noqa: E402
from chunkwise.core import learning  # noqa: E402
from chunkwise.core.corpus import Document, own_words  # noqa: E402
from chunkwise.core.distill import Miner  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("mining", "store write", "matching", "kNN graph", "phrases")


def sent_emails() -> list[str]:
    personas = ROOT / "bench" / "data" / "personas"
    return [p.read_text(encoding="utf-8") for who in ("mara", "teo") for p in sorted((personas / who).glob("sent-*.txt"))]


def timed_phases(engine: Engine) -> dict[str, float]:
    """Wrap what mine calls so each phase's time lands in the returned dict (reset per round)."""
    spent: dict[str, float] = {}

    def wrap(owner, name, phase):
        real = getattr(owner, name)

        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return real(*a, **k)
            finally:
                spent[phase] = spent.get(phase, 0.0) + time.perf_counter() - t
        setattr(owner, name, timed)

    wrap(Miner, "mine", "mining")
    wrap(engine.store, "add_mined", "store write")
    wrap(engine, "refresh", "matching")
    wrap(engine, "catch_up_knn", "kNN graph")
    wrap(learning, "learn_from_mail", "phrases")
    return spent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--contexts", type=int, default=100_000)
    ap.add_argument("--knn", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-rows", type=int, default=20_000, help="kNN rows a larger Learn adds at once")
    args = ap.parse_args()
    os.environ.setdefault("CHUNKWISE_PASSPHRASE", "bench passphrase")
    now: dict[str, list[float]] = {p: [] for p in (*PHASES, "total")}
    before: dict[str, list[float]] = {"matching": [], "kNN graph": []}
    emails = sent_emails()
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        store, engine = large_library(Path(tmp) / "chunks.db", args.contexts)
        fill_knn(store, engine.model_id, engine.matcher.stats, args.knn)
        engine.refresh()
        rows = len(engine.knn)                                  # built once and kept, as learning left it
        print(f"library filled in {time.perf_counter() - t:.0f} s: {engine.contexts:,} contexts, {rows:,} kNN rows",
              flush=True)
        spent = timed_phases(engine)
        for r in range(args.rounds):
            email = emails[(7 * r) % len(emails)]
            spent.clear()
            t = time.perf_counter()
            result = learning.mine(engine, [Document(f"sent email {r}", own_words(email))], gamma=0.5, knn=True,
                                   corpus_teacher=True)
            now["total"].append(time.perf_counter() - t)
            for p in PHASES:
                now[p].append(spent.get(p, 0.0))
            # Before: after the same store write, the whole library read again and the graph built anew.
            t = time.perf_counter()
            engine.refresh()
            before["matching"].append(time.perf_counter() - t)
            engine.forget_knn(kept_too=True)
            t = time.perf_counter()
            assert len(engine.knn) == store.knn_count(engine.model_id)
            before["kNN graph"].append(time.perf_counter() - t)
            print(f"  round {r + 1}: {result.report.documents} email, {result.new_chunks} new chunks, "
                  f"{result.knn_rows} kNN rows; now {now['total'][-1]:.2f} s "
                  f"(matching {now['matching'][-1]:.2f}, graph {now['kNN graph'][-1]:.2f}); before: matching "
                  f"{before['matching'][-1]:.2f} s, graph {before['kNN graph'][-1]:.2f} s", flush=True)
        contexts, rows = engine.contexts, store.knn_count(engine.model_id)
        # A Learn of a few hundred emails at once: --batch-rows kNN rows added in one job.  The graph grows
        # in slices (knn.GROW_SLICE); between two the job may answer a suggestion (app/worker.py).
        fill_knn(store, engine.model_id, engine.matcher.stats, args.batch_rows, seed=5)
        gaps, last = [], [time.perf_counter()]

        def between(done, total):
            now_t = time.perf_counter()
            gaps.append(now_t - last[0])
            last[0] = now_t

        t = time.perf_counter()
        engine.catch_up_knn(progress=between)
        batch_total = time.perf_counter() - t
        gaps.append(time.perf_counter() - last[0])             # the last slice's end to the job's (the graph kept)
        store.close()

    med = lambda xs: statistics.median(xs)
    shared = med(now["mining"]) + med(now["store write"]) + med(now["phrases"])
    now_total = med(now["total"])
    before_total = shared + med(before["matching"]) + med(before["kNN graph"])
    rows_out = [[p, f"{med(now[p]):.2f}", f"{med(before[p]):.2f}" if p in before else f"{med(now[p]):.2f}"]
                for p in PHASES]
    rows_out.append(["**lane held, in all**", f"**{now_total:.2f}**", f"**{before_total:.2f}**"])
    lines = [f"Machine: {machine()}",
             f"Encrypted store: the paper's PII profile + {args.contexts:,} learned contexts, {args.knn:,} kNN rows "
             f"(at the end: {contexts:,} contexts, {rows:,} rows); one sent email learned per round, "
             f"{args.rounds} rounds, medians in seconds", "",
             table(["phase", "now (s)", "before (s)"], rows_out), "",
             f"Before = the same mining and store write, then Engine.refresh() (the whole library read again) and "
             f"the kNN graph built over every row; now = matching in place and the graph grown by the email's rows. "
             f"Ratio: {before_total / now_total:.0f}x.", "",
             f"A Learn adding {args.batch_rows:,} kNN rows at once (synthetic rows): the graph grows in {len(gaps) - 1} "
             f"slices, {batch_total:.2f} s in all; the longest stretch without a chance to answer a suggestion "
             f"{max(gaps):.2f} s (the graph written at the end included), where one block held them "
             f"{batch_total:.2f} s."]
    text = "\n".join(lines)
    print(text)
    OUT.mkdir(exist_ok=True)
    (OUT / "learn_latency.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
