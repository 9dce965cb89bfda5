"""Chunk proposal latency and memory at 10k and 100k stored contexts (1M with --million).

The stored context vectors are synthetic but shaped like the model's own: drawn
with the mean and covariance of the default model's hidden states over ordinary
email text (ModelStats), five contexts per chunk around a chunk centre (sibling
contexts of a real chunk are similar too).  Queries: real hidden states of the
model on email prompts (most match nothing, as in real typing) and "near" queries,
new draws around stored chunk centres (they should find their chunk).  Timed: one
full ``ChunkMatcher.propose`` (whitening, HNSW k=16, re-ranking, words), as the
decode loop calls it once per step.  HNSW recall: for near queries, how often the
approximate search returns the exact nearest context (brute force).

    python bench/retrieval.py [--million]
"""
from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine, save_plot, table  # noqa: E402
from chunkwise.core import ChunkStore, Engine  # noqa: E402
from chunkwise.core.encoding import local_mean  # noqa: E402
from chunkwise.core.index import index_files  # noqa: E402
from chunkwise.core.matching import ChunkMatcher  # noqa: E402
from chunkwise.core.store import Encoding  # noqa: E402

PROMPTS = [
    "Hi Tom,\n\nThanks for the call today. If anything comes up, please give me a call at",
    "Dear Anna,\n\nThe contract is ready. Please mail the signed copy to our office at",
    "Hello team,\n\nA quick update on the quarterly report: the numbers look good and",
    "Hi Sam,\n\nSorry for the late reply. Regarding the budget, I think we should",
]


def _trim() -> None:
    """Give freed heap back to the OS so RSS differences measure what stays."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


CENTRE, SPREAD = 0.8, 0.6   # context = centre of its chunk + its own noise (sibling cosine ~0.64)


def fill_store(store: ChunkStore, model_id: int, stats, n_contexts: int, per_chunk: int = 5, seed: int = 0):
    """n_contexts synthetic encodings, 50k rows at a time; returns chunk centres.

    Through the store's own methods, as a refresh writes them (chunks added, then the pending
    contexts encoded): tokens sealed to their row in a keyed store, as users' are, so loading
    decrypts every token blob as it does for them."""
    rng = np.random.default_rng(seed)
    colour = np.linalg.inv(stats.whitener).astype(np.float32)         # C^(1/2)
    tokens = (1, 2, 3)
    made = 0
    centres = []
    while made < n_contexts:
        batch = min(50_000, n_contexts - made)
        n_chunks = batch // per_chunk
        first, ctx_first = (n + 1 for n in store.count())             # the row ids these will get
        store.add_many([{"text": f"synthetic chunk {first + i}", "kind": "snippet", "label": f"s{first + i}",
                         "contexts": [f"context {ctx_first + j}" for j in range(i * per_chunk, (i + 1) * per_chunk)]}
                        for i in range(n_chunks)])
        pending = store.pending_encodings(model_id)                   # this batch's contexts, in row order
        assert len(pending) == n_chunks * per_chunk, "fill_store needs a store with every context encoded"
        centre = rng.standard_normal((n_chunks, colour.shape[0]), dtype=np.float32)
        centres.append(centre)
        z = CENTRE * np.repeat(centre, per_chunk, axis=0) + SPREAD * rng.standard_normal(
            (batch, colour.shape[0]), dtype=np.float32)
        raw = stats.mean + z @ colour
        local = stats.mean + (0.7 * z + 0.3 * rng.standard_normal(z.shape, dtype=np.float32)) @ colour
        store.save_encodings(model_id, [Encoding(p.context_id, 1, tokens, raw[j], local[j], p.source_hash)
                                        for j, p in enumerate(pending)])
        made += batch
    return np.vstack(centres), colour


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--million", action="store_true", help="also 1,000,000 contexts (about 3 GB, slow to build)")
    ap.add_argument("--queries", type=int, default=2000)
    args = ap.parse_args()
    sizes = [10_000, 100_000] + ([1_000_000] if args.million else [])
    engine = Engine(n_threads=2)
    stats = engine.matcher.stats
    rt = engine.runtime
    queries = []
    for p in PROMPTS:
        toks = rt.tokenize(p)
        rt.reset()
        out = rt.eval(toks, outputs="all")
        for i in range(3, len(toks)):
            queries.append((out.hidden[i], local_mean(out.hidden, i), rt.detokenize(toks[1:i + 1])))
    print(f"Machine: {machine()}\nModel: {rt.name} (dim {rt.n_embd}); {len(queries)} distinct real query states, "
          f"{args.queries} timed proposals per size\n")
    rows, lat = [], {}
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            store = ChunkStore(Path(tmp) / "chunks.db")
            if store.key is None:
                raise SystemExit("bench/retrieval.py measures a keyed store: set CHUNKWISE_PASSPHRASE")
            model_id = store.model_id(rt.identity, rt.name, rt.n_embd)
            centres, colour = fill_store(store, model_id, stats, n)
            gc.collect()
            _trim()
            before = rss_mb()
            matcher = ChunkMatcher(stats)
            t = time.perf_counter()
            matcher.load(store, model_id, rt.identity, Path(tmp) / "index.hnsw")
            build = time.perf_counter() - t
            mem = rss_mb() - before
            t = time.perf_counter()
            ChunkMatcher(stats).load(store, model_id, rt.identity, Path(tmp) / "index.hnsw")
            reload = time.perf_counter() - t
            rng = np.random.default_rng(1)
            near_idx = rng.integers(0, len(centres), 200)
            z = CENTRE * centres[near_idx] + SPREAD * rng.standard_normal((200, colour.shape[0]), dtype=np.float32)
            near = stats.mean + z @ colour
            times = []
            for i in range(args.queries):
                if i % 2:
                    h, loc, text = queries[i % len(queries)]
                else:
                    h = loc = near[(i // 2) % len(near)]
                    text = "Hello, "
                t = time.perf_counter_ns()
                matcher.propose(h, loc, text)
                times.append((time.perf_counter_ns() - t) / 1e6)
            times = np.array(times)
            # HNSW recall on near queries against brute force over all stored keys
            labels = np.array(sorted(matcher.index.hashes))
            keys = stats.transform(store.encoding_vectors(labels.tolist(), "vector"))
            qn = stats.transform(near)
            chunk_of = store.context_owner()
            ctx_of = {r.label: r.context_id for r in store.valid_encodings(model_id)}
            exact = [chunk_of[ctx_of[int(l)]] for l in labels[np.argmax(qn @ keys.T, axis=1)]]
            found = [{chunk_of[ctx_of[int(l)]] for l in matcher.index.query(q, k=16)[0]} for q in qn]
            recall = float(np.mean([e in f for e, f in zip(exact, found)]))
            del keys
            lat[n] = times
            files = ((Path(tmp) / "chunks.db").stat().st_size / 2**20,
                     sum(f.stat().st_size for f in index_files(Path(tmp) / "index.hnsw")) / 2**20)
            rows.append([f"{n:,}", f"{np.percentile(times, 50):.3f}", f"{np.percentile(times, 90):.3f}",
                         f"{np.percentile(times, 99):.3f}", f"{build:.1f}", f"{reload:.1f}", f"{mem:.0f}",
                         f"{files[0]:.0f}", f"{files[1]:.0f}", f"{recall:.3f}"])
            store.close()
            del matcher
    sys.stdout.flush()
    print(table(["contexts", "p50 ms", "p90 ms", "p99 ms", "first build s", "reload s", "RAM MB",
                 "database MB", "index MB", "exact best chunk among HNSW 16 (near)"], rows))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.boxplot([lat[n] for n in sizes], tick_labels=[f"{n:,}" for n in sizes], showfliers=False, whis=(1, 99))
    ax.axhline(1.0, color="red", linestyle="--", label="1 ms budget")
    ax.set_xlabel("stored contexts")
    ax.set_ylabel("proposal latency, ms (whiskers p1-p99)")
    ax.legend(fontsize=8)
    print("plot:", save_plot(fig, "retrieval.png"))


if __name__ == "__main__":
    main()
