"""Decoding speed, side by side in one run, same model, same threads:

  llama-cpp-python   Llama.create_completion, greedy (the baseline)
  chunkwise plain    Engine.generate with an empty store (must give the same text)
  chunkwise + PII    Engine.generate with the paper's PII profile stored, on email prompts
                     that ask for contact details: forward passes saved (FPS) and time
                     per token saved (TTS) as in the CD-LM paper, section 6.1

  the editor's path  (--editor-path) the store a user has after a day, the editor's own request:
                     each persona's day-one library plus Tools -> Learn from my writing on their
                     sent mail (bench/keystrokes.py learned_engine), Settings().suggestion_request
                     (24 tokens, stop at a blank line, natural end, kNN-LM on) at word boundaries of
                     their new emails, against the same model with no store and chunks and the
                     kNN-LM off, same request otherwise

Runs alternate between the two systems (A B A B ...) so that machine noise hits both.  On the
editor's path the sides take turns at each place (plain, Chunkwise, Chunkwise with the runtime's
reuse of hidden states off), and each first answers, untimed, the request a word earlier, as the
editor did at the previous pause, so each cache holds that draft and what was generated after it.

    python bench/decoding.py [--repeats 3] [--max-tokens 64]
    python bench/decoding.py --editor-path [--stride 6]
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.common import machine, save_plot, table  # noqa: E402
from chunkwise.core import ChunkStore, Engine, GenerationRequest  # noqa: E402
from chunkwise.core.paths import bundled_model_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PLAIN_PROMPTS = [
    "Dear Mr. Patel,\n\nThank you for your email about the",
    "Subject: Team lunch on Friday\n\nHi all,\n\n",
    "Hi Maria,\n\nI hope you are well. I am writing to ask whether",
    "Dear hiring manager,\n\nI am excited to apply for the position of",
    "Hello team,\n\nA quick update on the quarterly report:",
    "Hi Sam,\n\nSorry for the late reply. Regarding the budget,",
]
PII_PROMPTS = [
    "Hi Tom,\n\nThanks for the call today. If anything comes up, please give me a call at",
    "Dear Anna,\n\nThe contract is ready. Please mail the signed copy to our office at",
    "Hello,\n\nThanks for your interest in the project. The code is on GitHub at",
    "Hi Lee,\n\nGreat meeting you at the conference. Let's connect on LinkedIn:",
    "Dear customer,\n\nMore details about the new plans are on our website:",
    "Hi Jo,\n\nI will be travelling next week. For anything urgent, send your questions by email to",
]


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def timed_suggestion(engine: Engine, request: GenerationRequest, before: GenerationRequest | None) -> tuple:
    """(seconds to the first piece of text, None if it showed none; seconds in all; stats; text) of one
    suggestion, after the suggestion *before* (the one asked at the previous pause, a word earlier)
    ran untimed on an emptied cache: the cache then holds what the editor's does, that draft and
    what was generated after it, read as this engine reads it."""
    engine.runtime.reset()
    if before is not None:                       # none before an email's first word
        engine.generate(before, record_use=False)
    start, first, text = time.perf_counter(), None, ""
    generation = engine.stream(request)
    for piece in generation:
        if first is None and piece.text:
            first = time.perf_counter() - start
        text += piece.text
    return first, time.perf_counter() - start, generation.stats, text


def editor_path(stride: int) -> None:
    """Plain decoding against Chunkwise on the store and request users have (see the module docstring)."""
    import tempfile

    from bench.keystrokes import body_prompt, emails, learned_engine
    from chunkwise.core.settings import Settings

    plain_settings, our_settings = Settings(chunks_enabled=False, knn_enabled=False), Settings()
    print(f"Machine: {machine()}\nThe editor's path: persona library + learned store, Settings() request "
          f"({our_settings.max_tokens} tokens, stop at a blank line, natural end, kNN-LM on), every "
          f"{stride}th word boundary of the new emails (dev and test); plain: no store, chunks and kNN-LM off; "
          f"before each request, each side has answered the request a word earlier (untimed)\n")
    sides = {"plain": [], "chunkwise": [], "chunkwise, rows read again": []}   # (first s, total s, stats, text) each
    with tempfile.TemporaryDirectory() as tmp:
        plain, runtime = None, None
        for persona in ("mara", "teo"):
            ours = learned_engine(Path(tmp), persona, runtime, True)
            if runtime is None:
                # The third side: the local window's rows evaluated again at every request, as before
                # LlamaRuntime.sync's reuse_hidden (the same engine; only this is switched off).
                real_sync, reread = ours.runtime.sync, [False]
                ours.runtime.sync = lambda *a, **k: real_sync(*a, **dict(k, reuse_hidden=k.get("reuse_hidden", False)
                                                                          and not reread[0]))
            runtime = ours.runtime
            plain = plain or Engine(store=ChunkStore(":memory:"), n_threads=2, runtime=runtime)
            for email in emails(persona, "all"):
                cuts = [m.end() for m in re.finditer(r"\S+", email)][::stride]
                for cut in cuts:
                    prompt, _ = body_prompt(email[:cut] + " ")
                    cached = prompt[:prompt.rstrip().rfind(" ") + 1].rstrip(" ")    # before the last word
                    for name, engine, settings in (("plain", plain, plain_settings), ("chunkwise", ours, our_settings),
                                                   ("chunkwise, rows read again", ours, our_settings)):
                        reread[0] = name == "chunkwise, rows read again"
                        before = settings.suggestion_request(cached) if cached.strip() else None
                        sides[name].append(timed_suggestion(engine, settings.suggestion_request(prompt), before))
            ours.store.close()
    rows = []
    base = None
    for name, runs in sides.items():
        tokens = sum(r[2].tokens for r in runs)
        steps = sum(r[2].steps for r in runs)
        decode = sum(r[2].decode_seconds for r in runs)
        per_token = decode / max(tokens, 1)
        base = per_token if base is None else base
        shown = [r for r in runs if r[0] is not None]              # a suggestion with no text shows nothing
        first = np.array([r[0] for r in shown] or [0.0]) * 1000
        total = np.array([r[1] for r in runs]) * 1000
        prefill = np.array([r[2].prefill_seconds for r in runs]) * 1000
        stops = Counter(r[2].stop_reason for r in runs)
        rows.append([name, len(runs), len(runs) - len(shown), f"{tokens / len(runs):.1f}", sum(r[2].chunks for r in runs),
                     f"{100 * (1 - steps / max(tokens, 1)):.1f}%", f"{1000 * per_token:.2f}",
                     f"{100 * (1 - per_token / base):.1f}%", f"{np.median(prefill):.1f}",
                     f"{np.percentile(first, 50):.0f} / {np.percentile(first, 90):.0f}",
                     f"{np.percentile(total, 50):.0f} / {np.percentile(total, 90):.0f}",
                     ", ".join(f"{k} {v}" for k, v in stops.most_common())])
    same = sum(a[3] == b[3] for a, b in zip(sides["chunkwise"], sides["chunkwise, rows read again"]))
    print(f"chunkwise and 'rows read again' gave the same text at {same} of {len(sides['chunkwise'])} places\n")
    print(table(["side", "suggestions", "with no text", "tokens per suggestion", "chunks inserted", "FPS",
                 "decode ms per token (prefill excluded)", "TTS vs plain", "prefill ms, median",
                 "first text p50 / p90 (ms, those with text)", "whole suggestion p50 / p90 (ms)",
                 "why they ended"], rows))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--editor-path", action="store_true", help="only the editor's path (populated store, editor request)")
    ap.add_argument("--stride", type=int, default=6, help="--editor-path: a suggestion at every Nth word boundary")
    args = ap.parse_args()
    if args.editor_path:
        editor_path(args.stride)
        return
    from llama_cpp import Llama

    model = bundled_model_path()
    ref = Llama(model_path=str(model), n_ctx=2048, n_threads=2, verbose=False)
    plain = Engine(model, ChunkStore(":memory:"), n_threads=2)
    pii = Engine(model, ChunkStore(":memory:"), n_threads=2)
    profile = json.loads((ROOT / "tests/data/pii_profile_paper.json").read_text())
    for field, entry in profile.items():
        if not field.startswith("_"):
            pii.store.add_chunk(entry["value"], "pii", entry["contexts"][:4], label=field)
    pii.refresh()
    n = args.max_tokens

    def run_ref(p):
        r = ref.create_completion(p, max_tokens=n, temperature=0.0, top_k=1)
        return r["choices"][0]["text"], r["usage"]["completion_tokens"]

    print(f"Machine: {machine()}\nModel: {model.name}, greedy, max {n} tokens, {args.repeats} alternating repeats\n")
    # -- plain decoding vs llama-cpp-python ---------------------------------
    rows, ratios, same_all = [], [], True
    ref_rates, our_rates = [], []
    for prompt in PLAIN_PROMPTS:
        ref_t, our_t, ref_n, our_n = [], [], 0, 0
        for _ in range(args.repeats):
            ref.reset()
            plain.runtime.reset()
            (rtext, ref_n), t1 = timed(lambda: run_ref(prompt))
            comp, t2 = timed(lambda: plain.generate(GenerationRequest(prompt, max_tokens=n)))
            ref_t.append(t1)
            our_t.append(t2)
            our_n = comp.stats.tokens
            same = comp.text == rtext
            same_all &= same
        r_rate, o_rate = ref_n / statistics.median(ref_t), our_n / statistics.median(our_t)
        ref_rates.append(r_rate)
        our_rates.append(o_rate)
        ratios.append(o_rate / r_rate)
        rows.append([repr(prompt[:32]) + "...", ref_n, f"{r_rate:.1f}", f"{o_rate:.1f}", f"{o_rate / r_rate:.3f}",
                     "yes" if same else "NO"])
    print("Plain decoding, empty store (tokens/s include the prompt's prefill):")
    print(table(["prompt", "tokens", "llama-cpp-python tok/s", "chunkwise tok/s", "ratio", "same text"], rows))
    print(f"median ratio chunkwise / llama-cpp-python: {statistics.median(ratios):.3f}; "
          f"identical output on all prompts: {same_all}\n")

    # -- chunk insertion ------------------------------------------------------
    rows, fps_all, tts_all = [], [], []
    for prompt in PII_PROMPTS:
        base_t, cd_t = [], []
        for _ in range(args.repeats):
            plain.runtime.reset()
            pii.runtime.reset()
            base = plain.generate(GenerationRequest(prompt, max_tokens=n))
            cd = pii.generate(GenerationRequest(prompt, max_tokens=n), record_use=False)
            # Decode time only: the two sides stop at different lengths (plain decoding stops before
            # a detail it would invent), so prefill spread over their tokens would bias the ratio.
            base_t.append(base.stats.decode_seconds)
            cd_t.append(cd.stats.decode_seconds)
        s = cd.stats
        fps = 1 - s.steps / max(1, s.tokens)   # steps: the last one counted for every configuration
        tts = 1 - (statistics.median(cd_t) / s.tokens) / (statistics.median(base_t) / base.stats.tokens)
        fps_all.append(fps)
        tts_all.append(tts)
        used = ", ".join(sp.label for sp in cd.spans) or "-"
        rows.append([repr(prompt[-34:]), s.tokens, s.steps, s.chunk_tokens, used,
                     f"{100 * fps:.1f}%", f"{100 * tts:.1f}%"])
    print("Chunk insertion (PII profile stored, 4 prefixes per field; TTS on decode time, prefill excluded):")
    print(table(["prompt (end)", "tokens", "steps", "chunk tokens", "chunks", "FPS", "TTS"], rows))
    print(f"mean FPS {100 * statistics.mean(fps_all):.1f}%, mean TTS {100 * statistics.mean(tts_all):.1f}%\n")

    # -- the combinations, side by side ----------------------------------------
    from tests.test_drafting import QUOTE

    configs = {"chunks": dict(engine=pii, draft=False), "drafts": dict(engine=plain, draft=True),
               "chunks + drafts": dict(engine=pii, draft=True)}
    totals = {name: [0, 0, 0.0] for name in ["plain", *configs]}     # tokens, passes, seconds
    for engine in (plain, pii):     # the build's batch profile is measured once per process: not per request
        start = time.perf_counter()
        engine.runtime.batch_profile()
        print(f"(batch profile of this build measured once: {time.perf_counter() - start:.2f} s, "
              f"exact batches up to {engine.runtime.batch_profile().exact} tokens)")
    for prompt in PII_PROMPTS + [QUOTE]:
        for _ in range(max(1, args.repeats // 2)):
            for name, cfg in [("plain", dict(engine=plain, draft=False)), *configs.items()]:
                cfg["engine"].runtime.reset()
                done = cfg["engine"].generate(GenerationRequest(prompt, max_tokens=n, draft=cfg["draft"]),
                                              record_use=False)
                t = done.stats.decode_seconds          # decode only, as above
                totals[name][0] += done.stats.tokens
                totals[name][1] += done.stats.steps
                totals[name][2] += t
    base = totals["plain"][2] / totals["plain"][0]
    rows = [[name, tok, passes, f"{100 * (1 - passes / tok):.1f}%", f"{tok / secs:.1f}",
             f"{100 * (1 - (secs / tok) / base):.1f}%"] for name, (tok, passes, secs) in totals.items()]
    print("All PII prompts and a quoted reply together, per configuration (tok/s and TTS on decode time):")
    print(table(["configuration", "tokens", "steps", "FPS", "tok/s", "TTS vs plain"], rows) + "\n")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    x = range(len(PLAIN_PROMPTS))
    axes[0].bar([i - 0.2 for i in x], ref_rates, width=0.4, label="llama-cpp-python")
    axes[0].bar([i + 0.2 for i in x], our_rates, width=0.4, label="chunkwise (empty store)")
    axes[0].set_xlabel("prompt")
    axes[0].set_ylabel("tokens / s")
    axes[0].set_title("Plain greedy decoding")
    axes[0].legend(fontsize=7)
    axes[1].bar([i - 0.2 for i in x], [100 * f for f in fps_all], width=0.4, label="forward passes saved")
    axes[1].bar([i + 0.2 for i in x], [100 * t for t in tts_all], width=0.4, label="time per token saved")
    axes[1].set_xlabel("PII prompt")
    axes[1].set_ylabel("%")
    axes[1].set_title("Chunk insertion (PII store)")
    axes[1].legend(fontsize=7)
    print("plot:", save_plot(fig, "decoding.png"))


if __name__ == "__main__":
    main()
