"""What encryption at rest costs when the library opens: 100k contexts and 100k kNN rows.

Two stores with the same synthetic content (bench/retrieval.py's ``fill_store``: context vectors
shaped like the default model's hidden states, five per chunk; kNN rows with a key vector, the
next token and eight teacher probabilities, as Tools → Learn writes them):

  plain      ChunkStore(encrypted=False): a plain SQLite file and a plain index (no encryption
             at all: the floor any scheme is measured against)
  encrypted  a file store as users have it: the whole file under SQLCipher, the HNSW index sealed
             with AES-GCM (core/index.py), PII values and token ids sealed once more inside

Timed, alternating plain and encrypted, best of --repeats: opening the store (the key already
derived: scrypt runs once per start, timed on its own), loading matching as the engine does
(``ChunkMatcher.load``: encodings, vectors, the persisted index), and reading the kNN datastore
(``ChunkStore.knn_data``).  Also printed: the decryption work alone that the other design, a sealed
AES-GCM blob per row for every vector and kNN row, would add on top of the plain store.

    python bench/store_load.py [--contexts 100000] [--knn 100000] [--repeats 3]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import OUT, machine, save_plot, table  # noqa: E402
from bench.retrieval import fill_store  # noqa: E402
from chunkwise.core import ChunkStore, Engine, crypto  # noqa: E402
from chunkwise.core.index import index_files  # noqa: E402
from chunkwise.core.matching import ChunkMatcher  # noqa: E402


def fill_knn(store: ChunkStore, model_id: int, stats, rows: int, seed: int = 2) -> None:
    rng = np.random.default_rng(seed)
    dim = stats.mean.shape[0]
    for start in range(0, rows, 20_000):
        n = min(20_000, rows - start)
        doc = hashlib.sha256(f"document {start}".encode()).hexdigest()
        keys = stats.mean + rng.standard_normal((n, dim), dtype=np.float32)
        ids = rng.integers(0, 49_152, (n, 8)).astype(np.int32)
        probs = rng.dirichlet(np.ones(8), n).astype(np.float16)
        store.add_knn(model_id, [(doc, keys[i], int(ids[i, 0]), ids[i], probs[i]) for i in range(n)], "self")


def size_mb(paths) -> float:
    return sum(p.stat().st_size for p in paths if p.exists()) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--contexts", type=int, default=100_000)
    ap.add_argument("--knn", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("CHUNKWISE_PASSPHRASE", "bench passphrase")
    engine = Engine(n_threads=2)
    stats, rt = engine.matcher.stats, engine.runtime
    t = time.perf_counter()
    crypto.derive("bench passphrase", secrets.token_bytes(16))
    scrypt = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        paths = {"plain": Path(tmp) / "plain.db", "encrypted": Path(tmp) / "encrypted.db"}
        for name, path in paths.items():
            with ChunkStore(path, encrypted=name == "encrypted") as store:
                model_id = store.model_id(rt.identity, rt.name, rt.n_embd)
                fill_store(store, model_id, stats, args.contexts)
                fill_knn(store, model_id, stats, args.knn)
                ChunkMatcher(stats).load(store, model_id, rt.identity, Path(f"{path}.hnsw"))   # build and save
        times = {name: {"open": [], "matching": [], "knn": []} for name in paths}
        for repeat in range(args.repeats):
            for name in (list(paths) if repeat % 2 == 0 else list(paths)[::-1]):
                path = paths[name]
                t0 = time.perf_counter()
                store = ChunkStore(path, encrypted=name == "encrypted")
                t1 = time.perf_counter()
                model_id = store.model_id(rt.identity, rt.name, rt.n_embd)
                status = ChunkMatcher(stats).load(store, model_id, rt.identity, Path(f"{path}.hnsw"))
                t2 = time.perf_counter()
                keys = store.knn_data(model_id)[0]
                t3 = time.perf_counter()
                store.close()
                assert status == "loaded" and len(keys) == args.knn, (status, len(keys))
                for step, dt in zip(("open", "matching", "knn"), (t1 - t0, t2 - t1, t3 - t2)):
                    times[name][step].append(dt)
        disk = {name: (size_mb([p, Path(f"{p}-wal")]), size_mb(index_files(Path(f"{p}.hnsw"))))
                for name, p in paths.items()}
    # The per-row design: one AES-GCM blob per stored vector (two per context) and per kNN row.
    key = crypto.StoreKey(secrets.token_bytes(32), "bench")
    dim = rt.n_embd
    blob = key.encrypt_blob(np.zeros(dim, np.float16).tobytes())
    knn_blob = key.encrypt_blob(np.zeros(dim * 2 + 4 + 8 * 6, np.uint8).tobytes())
    t = time.perf_counter()
    for _ in range(2 * args.contexts):
        key.decrypt_blob(blob)
    for _ in range(args.knn):
        key.decrypt_blob(knn_blob)
    per_row = time.perf_counter() - t

    best = {n: {s: min(v) for s, v in steps.items()} for n, steps in times.items()}
    rows = []
    for step, label in (("open", "open the store"), ("matching", "load matching (index persisted)"),
                        ("knn", "read the kNN datastore")):
        p, e = best["plain"][step], best["encrypted"][step]
        rows.append([label, f"{p:.3f}", f"{e:.3f}", f"{e / p:.2f}x"])
    p, e = sum(best["plain"].values()), sum(best["encrypted"].values())
    rows.append(["total", f"{p:.3f}", f"{e:.3f}", f"{e / p:.2f}x"])
    lines = [f"Machine: {machine()}",
             f"{args.contexts:,} contexts, {args.knn:,} kNN rows, model dim {dim}; best of {args.repeats}, "
             "plain and encrypted alternating", "",
             table(["step (seconds)", "plain file", "encrypted (SQLCipher + sealed index)", "ratio"], rows), "",
             f"On disk: plain {disk['plain'][0]:.0f} MB database + {disk['plain'][1]:.0f} MB index; encrypted "
             f"{disk['encrypted'][0]:.0f} MB + {disk['encrypted'][1]:.0f} MB",
             f"Key derivation (scrypt N = 2^17), once per start: {scrypt:.2f} s",
             f"Sealed blob per row instead (decryption alone, {2 * args.contexts + args.knn:,} AES-GCM calls): "
             f"{per_row:.2f} s on top of the plain store's load"]
    text = "\n".join(lines)
    print(text)
    OUT.mkdir(exist_ok=True)
    (OUT / "store_load.txt").write_text(text + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = ["open", "matching", "knn"]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(np.arange(3) - 0.2, [best["plain"][s] for s in steps], 0.4, label="plain file")
    ax.bar(np.arange(3) + 0.2, [best["encrypted"][s] for s in steps], 0.4, label="encrypted")
    ax.set_xticks(range(3), ["open", "load matching", "read kNN rows"])
    ax.set_ylabel("seconds")
    ax.set_title(f"Library load at {args.contexts // 1000}k contexts, {args.knn // 1000}k kNN rows")
    ax.legend()
    save_plot(fig, "store_load.png")

if __name__ == "__main__":
    main()
