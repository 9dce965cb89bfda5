"""From a library edit to the next suggestion that sees it, at 100k stored contexts: in place
(``Engine.refresh(chunk_ids=...)``, what the editor runs since issue 15) against reading the whole
library again (``Engine.refresh()``, what it ran before).

The store is a user's as the editor has it: an encrypted file with the paper's PII profile
(encoded by the bundled model) and a learned store of 100k contexts (self-distilled chunks, four
contexts each, synthetic vectors shaped like the model's hidden states, as bench/retrieval.py
draws them; written through ``ChunkStore.add_mined`` as Tools → Learn writes them).  Each edit is
what the library dialog or the editor does: add a PII entry (two contexts), edit it (new value and
contexts), a phrase learned while typing, a dismissed suggestion, delete the entry.  Timed per edit:
the store write, then the refresh (encoding the edited contexts with the model, then matching);
both paths run on the same edit, in place first (it pays the encoding), median and worst of --repeats.  After
each in-place update the next suggestion is checked to see the edit (the chunk proposed after its
own context, or gone after a delete).

Also timed: the kNN-LM's graph over --knn rows (bench/store_load.py's synthetic rows), built (what
the first suggestion after learning paid before, and every start) against read back from where the
learning job keeps it (``Engine.knn``, core/knn.py ``datastore``).

Each edit comes while the user is writing a draft: after it, the next suggestion's first pass over
that draft is timed too (the edit's reading of contexts must not displace it from the model's cache).

    python bench/library_update.py [--contexts 100000] [--knn 100000] [--repeats 5]
    python bench/library_update.py --main-context --knn 1000 --repeats 3     # as before the side context
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import OUT, machine, save_plot, table  # noqa: E402
from bench.retrieval import CENTRE, SPREAD  # noqa: E402
from chunkwise.core import ChunkStore, Engine  # noqa: E402
from chunkwise.core.distill import MinedChunk, MinedContext  # noqa: E402
from chunkwise.core.encoding import local_mean  # noqa: E402
from chunkwise.core.store import DISMISSED, LEARNED  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PER_CHUNK = 4
# The contexts of the entry added, then edited, with its contexts read while typed (Engine.prepare_contexts).
AHEAD = {"add": ["My side business is", "I also run"], "edit": ["I also run", "My other employer is"]}
# The draft in the model's cache when the edit comes (a user mid-email): the next suggestion continues it.
DRAFT = ("Hi Tom,\n\nThanks for sending the revised quote so quickly. I went through it with the team this "
         "morning and we are happy with the scope, though we would like to move the second delivery to the end "
         "of March. For anything urgent, ring me on")


def fill_learned(store: ChunkStore, model_id: int, stats, n_contexts: int, seed: int = 0) -> None:
    """A learned store of *n_contexts* self-distilled contexts (synthetic vectors), as mining writes it."""
    rng = np.random.default_rng(seed)
    colour = np.linalg.inv(stats.whitener).astype(np.float32)         # C^(1/2)
    dim = colour.shape[0]
    for start in range(0, n_contexts // PER_CHUNK, 5_000):
        n = min(5_000, n_contexts // PER_CHUNK - start)
        centre = rng.standard_normal((n, dim), dtype=np.float32)
        chunks = []
        for i in range(n):
            z = CENTRE * centre[i] + SPREAD * rng.standard_normal((PER_CHUNK, dim), dtype=np.float32)
            raw = stats.mean + z @ colour
            local = stats.mean + (0.7 * z + 0.3 * rng.standard_normal(z.shape, dtype=np.float32)) @ colour
            k = start + i
            chunks.append(MinedChunk(f"learned phrase {k}", (100 + k % 900, 200 + k % 700, 300),
                                     [MinedContext(f"context {k}.{j}", 100 + (k + j) % 900, raw[j], local[j])
                                      for j in range(PER_CHUNK)]))
        store.add_mined(model_id, "self", chunks)


def paper_profile() -> dict:
    """The CD-LM paper's kind of PII profile the library benches store (tests/data/pii_profile_paper.json)."""
    import json

    return {k: v for k, v in json.loads((ROOT / "tests/data/pii_profile_paper.json").read_text()).items()
            if not k.startswith("_")}


def large_library(path: Path, contexts: int) -> tuple[ChunkStore, Engine]:
    """A user's library after months of learning, not yet loaded: the paper's PII profile (four contexts
    a field) and *contexts* learned contexts (:func:`fill_learned`), in the store at *path*."""
    store = ChunkStore(path)
    engine = Engine(store=store, n_threads=2)
    for field, entry in paper_profile().items():
        store.add_chunk(entry["value"], "pii", entry["contexts"][:4], label=field)
    fill_learned(store, engine.model_id, engine.matcher.stats, contexts)
    return store, engine


def propose_after(engine: Engine, text: str):
    """The chunk matching offers after *text* (the next suggestion's first step)."""
    rt = engine.runtime
    tokens = rt.tokenize(text, add_special=True)
    out = engine.runtime_states(tokens)                                # logits (n, V), hidden (n, d)
    return engine.matcher.propose(out.hidden[-1], local_mean(out.hidden), text, last_token=tokens[-1],
                                  model_choice=int(np.argmax(out.logits[-1])))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--contexts", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--knn", type=int, default=100_000)
    ap.add_argument("--main-context", action="store_true",
                    help="read the edited contexts in the main context, as before LlamaRuntime.aside "
                         "(writes library_update-main-context.txt)")
    args = ap.parse_args()
    if args.main_context:
        from chunkwise.core.llama_runtime import LlamaRuntime

        LlamaRuntime.aside = lambda self: self
    os.environ.setdefault("CHUNKWISE_PASSPHRASE", "bench passphrase")
    times: dict[str, dict[str, list[float]]] = {}
    seen: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        store, engine = large_library(Path(tmp) / "chunks.db", args.contexts)
        engine.refresh()                                             # encode the profile, build and save the index
        print(f"store filled and loaded in {time.perf_counter() - t:.0f} s: {engine.contexts:,} contexts",
              flush=True)

        def edits():
            """(name, store write, check after, what is read ahead of the save or None) for one round of
            the dialog's and editor's edits."""
            state = {}

            def add():
                state["id"] = store.add_chunk("Northwind Traders Ltd", "pii",
                                              ["I work at", "The company I work for is"], label="company")
                return [state["id"]]

            def edit():
                store.update_chunk(state["id"], text="Contoso Pharmaceuticals",
                                   contexts=["I work at", "My employer is"])
                return [state["id"]]

            def context(key, phrase, origin):           # a phrase learned, or a place dismissed
                def write():
                    store.add_context(state[key], phrase, origin)
                    return [state[key]]
                return write

            def delete(key):
                def write():
                    store.remove_chunks([state[key]])
                    return [state[key]]
                return write

            def add_read_ahead():
                state["other"] = store.add_chunk("Fabrikam Studio", "pii", AHEAD["add"], label="company")
                return [state["other"]]

            def edit_read_ahead():
                store.update_chunk(state["other"], text="Fabrikam Design", contexts=AHEAD["edit"])
                return [state["other"]]

            def offered(text, key="id"):
                return lambda: (p := propose_after(engine, text)) is not None and p.chunk_id == state[key]

            return [("add a PII entry", add, offered("Hi Tom,\n\nThanks for the call. I work at"), None),
                    ("edit it", edit, offered("Hi Tom,\n\nThanks for the call. My employer is"), None),
                    ("learn a phrase typed before it", context("id", "These days I am with", LEARNED),
                     offered("Hi Tom,\n\nThese days I am with"), None),
                    ("dismiss it somewhere", context("id", "I spent the weekend at", DISMISSED),
                     lambda: engine.matcher.avoided(state["id"], "Hi Tom,\n\nI spent the weekend at"), None),
                    ("delete it", delete("id"), lambda: not offered("Hi Tom,\n\nThanks for the call. My employer is")(),
                     None),
                    # The entry dialog has the model read the contexts while they are typed
                    # (Engine.prepare_contexts, before the user presses OK: untimed here); the save reads none.
                    ("add one, its contexts read as typed", add_read_ahead,
                     offered("Hi Tom,\n\nGood to hear from you. My side business is", "other"),
                     lambda: engine.prepare_contexts(AHEAD["add"])),
                    ("edit it, its contexts read as typed", edit_read_ahead,
                     offered("Hi Tom,\n\nGood to hear from you. My other employer is", "other"),
                     lambda: engine.prepare_contexts(AHEAD["edit"])),
                    # The editor reads the phrase before a library value once its first characters are
                    # typed (Engine.prepare_typed, after that pause's suggestion: untimed here).
                    ("learn a phrase, read as the value was typed",
                     context("other", "Nowadays I also work for", LEARNED),
                     offered("Hi Tom,\n\nNowadays I also work for", "other"),
                     lambda: engine.prepare_typed("Hi Tom,\n\nNowadays I also work for Fabrikam D")),
                    ("(delete that one)", delete("other"), lambda: True, None)]

        from chunkwise.core import engine as engine_module

        encoding: list[float] = []
        real_encoder = engine_module.Encoder

        class TimedEncoder(real_encoder):            # the model reading the edited contexts, timed apart
            def encode_many(self, batch):
                t = time.perf_counter()
                try:
                    return super().encode_many(batch)
                finally:
                    encoding.append(time.perf_counter() - t)

        engine_module.Encoder = TimedEncoder
        rt = engine.runtime
        draft = rt.tokenize(DRAFT)
        step = draft + rt.tokenize(" +49", add_special=False)
        for repeat in range(args.repeats):
            # Each round types its contexts afresh, as a new session would: otherwise rounds 2-3 find the
            # read-ahead states of round 1 and never read them (nor, with --main-context, displace the draft).
            engine._read_ahead.clear()
            for name, write, check, ahead in edits():
                rt.sync(draft)                                       # the draft the user is writing
                if ahead:
                    ahead()                                          # while the user types: untimed
                t0 = time.perf_counter()
                ids = write()
                t1 = time.perf_counter()
                # In place first, always: it encodes the edited contexts (as the old path also had to), and
                # the whole reload after it has nothing left to encode -- its time is the reload alone.
                for path in ("in place", "whole library"):
                    encoding.clear()
                    t2 = time.perf_counter()
                    engine.refresh(chunk_ids=ids if path == "in place" else None)
                    t3 = time.perf_counter()
                    times.setdefault(name, {}).setdefault(path, []).append(t3 - t2)
                    if path == "in place":
                        times[name].setdefault("encode", []).append(sum(encoding))
                        # The next suggestion's first pass over the draft: its new tokens only, unless
                        # the edit's reading displaced the draft from the cache.
                        n, t4 = rt.evaluated_tokens, time.perf_counter()
                        rt.sync(step)
                        times[name].setdefault("next pass", []).append(time.perf_counter() - t4)
                        times[name].setdefault("next tokens", []).append(rt.evaluated_tokens - n)
                        if check():
                            seen[name] = seen.get(name, 0) + 1
                times[name].setdefault("store write", []).append(t1 - t0)
                print(f"  {repeat + 1}/{args.repeats} {name}: in place {times[name]['in place'][-1] * 1e3:.1f} ms, "
                      f"whole {times[name]['whole library'][-1]:.2f} s", flush=True)
        from bench.store_load import fill_knn

        fill_knn(store, engine.model_id, engine.matcher.stats, args.knn)
        engine.forget_knn()
        knn_times: dict[str, list[float]] = {"built": [], "read back": []}
        for repeat in range(1):
            for how in ("built", "read back"):
                engine.forget_knn(kept_too=how == "built")
                t = time.perf_counter()
                assert len(engine.knn) == args.knn
                knn_times[how].append(time.perf_counter() - t)
        store.close()

    rows = []
    for name, by in times.items():
        if name.startswith("("):                 # clean-up between rounds, not an edit of its own
            continue
        inplace, whole, write, enc = by["in place"], by["whole library"], by["store write"], by["encode"]
        rows.append([name, f"{statistics.median(write) * 1e3:.1f}", f"{statistics.median(inplace) * 1e3:.1f}",
                     f"{max(inplace) * 1e3:.1f}", f"{statistics.median(enc) * 1e3:.1f}",
                     f"{statistics.median(np.subtract(inplace, enc)) * 1e3:.1f}", f"{statistics.median(whole):.2f}",
                     f"{statistics.median(whole) / statistics.median(inplace):.0f}x",
                     f"{seen.get(name, 0)}/{args.repeats}", f"{statistics.median(by['next pass']) * 1e3:.1f}",
                     f"{statistics.median(by['next tokens']):.0f}"])
    lines = [f"Machine: {machine()}",
             f"Encrypted store: the paper's PII profile + {args.contexts:,} learned contexts; "
             f"{args.repeats} rounds, in place first (it encodes the edited contexts; the reload after it "
             "has nothing left to encode, so its time is the reload alone)", "",
             table(["edit", "store write (ms, median)", "in place (ms, median)", "in place (ms, worst)",
                    "of which the model encoding (ms)", "of which matching (ms)",
                    "whole library (s, median)", "ratio", "next suggestion sees it",
                    "next suggestion's first pass (ms, median)", "draft tokens it reads"], rows), "",
             "In place = Engine.refresh(chunk_ids=...): encode the edited contexts with the model, update matching. "
             "Whole library = Engine.refresh(): what every edit ran before. Next suggestion sees it: after the in-place "
             "update, matching offers the entry after its own (new) context, the dismissed place is avoided, "
             "the deleted entry is offered nowhere it was. Next suggestion's first pass: with a "
             f"{len(draft)}-token draft in the model's cache before the edit, its next step (the draft and one more "
             "word) after the in-place update; the edited contexts are read "
             + ("in the main context, displacing the draft (--main-context: as before LlamaRuntime.aside)."
                if args.main_context else "on the side context (LlamaRuntime.aside), which leaves the draft cached."),
             "",
             f"kNN-LM datastore of {args.knn:,} rows, the first suggestion that uses it (one run each): graph built "
             f"{min(knn_times['built']):.1f} s, read back from where learning kept it "
             f"{min(knn_times['read back']):.2f} s (rows read from the store included in both)"]
    text = "\n".join(lines)
    print(text)
    OUT.mkdir(exist_ok=True)
    (OUT / ("library_update-main-context.txt" if args.main_context else "library_update.txt")).write_text(text + "\n")
    if args.main_context:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in times if not n.startswith("(")]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    x = np.arange(len(names))
    ax.bar(x - 0.2, [statistics.median(times[n]["in place"]) * 1e3 for n in names], 0.4, label="in place")
    ax.bar(x + 0.2, [statistics.median(times[n]["whole library"]) * 1e3 for n in names], 0.4, label="whole library")
    ax.axhline(50, color="grey", lw=0.8, ls="--")
    ax.set_yscale("log")
    ax.set_xticks(x, names, rotation=15, fontsize=8)
    ax.set_ylabel("ms from save to matching (log)")
    ax.set_title(f"Library edit at {args.contexts // 1000}k contexts")
    ax.legend()
    fig.tight_layout()
    save_plot(fig, "library_update")


if __name__ == "__main__":
    main()
