"""Which model file, and what chunk insertion buys on each: issue 15, points 3 and 4.

Part ``quant``: the bundled SmolLM2-135M file (Q4_1) against copies requantised from it here
(core/models.py: Q8_0, Q4_0, IQ4_NL, Q4_K_M) and, if the optional extra is installed, Gemma 3
270M (Q4_K_M).  Per file: one token's decode time after 16 tokens of context, the cost of a
k-token batch in single-token units (the curve chunk insertion and drafts pay), perplexity and
bits per character on plain emails (bench/data/personas/{mara,teo}/sent-*: comparable
across tokenizers per character), and, for SmolLM2's files, how often the editor's greedy
suggestion equals the bundled file's on the personal-details dev prompts.  All timings best of
``--repeats``, files interleaved, same threads.

Part ``decode``: the editor's path on both models, side by side.  One populated store per model
(a user's library of ten fields and two snippets, bench/data/personal/profiles.json, plus a
store learned from a persona's sent mail with what Learn from my writing runs), the editor's
request settings (``Settings().suggestion_request``, longer suggestions: ``--max-tokens``), and
three kinds of prompts: personal details, snippets (dev positives of bench/personal.py) and the
persona's new emails at each paragraph start (where learned phrases may come).  The table says
which part of the store each insertion came from: a value, a snippet or a learned phrase.  With
``--learned-only`` the store is the learned one alone, on the paragraph starts: what a teacher's
chunks change, with no library snippet taking those places first.  Each prompt runs
with chunks on and off (the same engine and store, kNN-LM as the editor has it), alternating,
the KV cache reset before every run.  Reported: forward passes saved (FPS), time per token
saved on decode time (TTS), ROUGE-L of the chunk side's text against the plain side's, and the
perplexity of each side's text under the base model.

    python bench/models.py quant [--repeats 7]
    python bench/models.py decode [--repeats 3] [--max-tokens 48]
    python bench/models.py decode --teacher gemma     # SmolLM2 with a store mined by Gemma 3 270M (KCD-LM)
    python bench/models.py decode --learned-only [--teacher gemma]   # the learned store alone: a teacher's chunks
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.common import MODELS, machine, save_plot, table  # noqa: E402
from bench.distill import rouge_l  # noqa: E402
from bench.personal import (DATA, LEARNED_FROM, PERSONAS, body_prompt, build_store, learn, load_cases,  # noqa: E402
                            paragraph_starts)
from chunkwise.core import ChunkStore, Engine  # noqa: E402
from chunkwise.core.corpus import Document  # noqa: E402
from chunkwise.core.errors import ModelError  # noqa: E402
from chunkwise.core.matching import REPEATABLE_KINDS  # noqa: E402
from chunkwise.core.llama_runtime import LlamaRuntime  # noqa: E402
from chunkwise.core.models import QUANT_TYPES, gemma_path, requantised  # noqa: E402
from chunkwise.core.paths import bundled_model_path  # noqa: E402
from chunkwise.core.scoring import document_tokens, score  # noqa: E402
from chunkwise.core.settings import Settings  # noqa: E402

SIZES = (2, 4, 8, 12, 16)
USER = "ana"


def model_files(folder: Path) -> dict[str, Path]:
    """Name -> file: the bundled one, its requantised copies (made once in *folder*), Gemma if installed."""
    bundled = bundled_model_path()
    files = {"SmolLM2 Q4_1 (bundled)": bundled}
    for q in QUANT_TYPES:
        files[f"SmolLM2 {q}"] = requantised(bundled, q, folder)
    try:
        files["Gemma 3 270M Q4_K_M"] = gemma_path(folder)
    except ModelError as exc:
        print(f"(Gemma 3 270M left out: {exc})")
    return files


# ---------------------------------------------------------------- part quant

def cost_curve(rt: LlamaRuntime, repeats: int) -> dict[int, float]:
    """Seconds of a k-token decode after 16 tokens of context, best of *repeats*, hidden states off."""
    toks = rt.tokenize("Dear Anna,\n\nThank you for your message about the quarterly report and the "
                       "budget for next year. I have read it carefully and I agree with most of it.")
    ctx, rest = toks[:16], toks[16:16 + max(SIZES)]
    out = {}
    for k in (1, *SIZES):
        best = math.inf
        for _ in range(repeats):
            rt.reset()
            rt.eval(ctx, hidden=False)
            t = time.perf_counter()
            rt.eval(rest[:k], outputs="last", hidden=False)
            best = min(best, time.perf_counter() - t)
        out[k] = best
    rt.reset()
    return out


def plain_text_ppl(rt: LlamaRuntime, texts: list[str]) -> tuple[float, float]:
    """(perplexity per token, bits per character) of *texts* under *rt*."""
    nll, ntok, nchar = 0.0, 0, 0
    for text in texts:
        tokens, first = document_tokens(rt, Document("t", text))
        lp = score(rt, tokens, first, hidden=False).logprob[first + 1:]
        lp = lp[~np.isnan(lp)]
        nll -= float(lp.sum())
        ntok += len(lp)
        nchar += len(rt.detokenize(tokens[first + 1:]))
    return math.exp(nll / ntok), nll / math.log(2) / nchar


def greedy_suggestions(path: Path, prompts: list[str]) -> list[str]:
    engine = Engine(path, ChunkStore(":memory:"), n_threads=2)
    try:
        out = []
        for p in prompts:
            engine.runtime.reset()
            out.append(engine.generate(Settings().suggestion_request(body_prompt(p)), record_use=False).text)
        return out
    finally:
        engine.close()


def quant(args) -> None:
    print(f"Machine: {machine()}\n")
    files = model_files(Path(args.models))
    texts = [p.read_text(encoding="utf-8") for who in ("mara", "teo")         # the two personas it was measured on
             for p in sorted((PERSONAS / who).glob("sent-*.txt"))]
    prompts = [c["text"] for c in load_cases("dev")][:args.prompts]
    curves = {name: [] for name in files}
    runtimes = {name: LlamaRuntime(path, n_ctx=512, n_threads=2) for name, path in files.items()}
    for _ in range(args.rounds):                  # files interleaved, so machine noise hits all of them
        for name, rt in runtimes.items():
            curves[name].append(cost_curve(rt, args.repeats))
    rows, plot = [], {}
    reference = greedy_suggestions(files["SmolLM2 Q4_1 (bundled)"], prompts)
    for name, rt in runtimes.items():
        curve = {k: min(c[k] for c in curves[name]) for k in curves[name][0]}
        one = curve[1]
        ratios = [curve[k] / one for k in SIZES]
        ppl, bpc = plain_text_ppl(rt, texts)
        same = rouge = "-"
        if name.startswith("SmolLM2"):
            mine = reference if "bundled" in name else greedy_suggestions(files[name], prompts)
            same = f"{sum(a == b for a, b in zip(mine, reference))}/{len(prompts)}"
            rouge = f"{statistics.mean(rouge_l(a, b) for a, b in zip(mine, reference)):.2f}"
        plot[name] = ratios
        rows.append([name, f"{files[name].stat().st_size / 1e6:.0f} MB", f"{1000 * one:.2f}",
                     " / ".join(f"{r:.1f}" for r in ratios), f"{ppl:.2f}", f"{bpc:.3f}", same, rouge])
        rt.close()
    print(f"Decode cost after 16 tokens of context (best of {args.repeats} x {args.rounds} interleaved rounds, "
          f"2 threads, hidden states off); perplexity on {len(texts)} plain emails of two people; suggestions: "
          f"the editor's greedy request on {len(prompts)} dev prompts of bench/personal.py, against the bundled file:")
    print(table(["model file", "size", "one token (ms)", "k-token batch in single tokens (k = "
                 + " / ".join(map(str, SIZES)) + ")", "perplexity", "bits per char", "same suggestion",
                 "ROUGE-L vs bundled"], rows))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for name, ratios in plot.items():
        ax.plot(SIZES, ratios, "o-", label=name)
    ax.plot(SIZES, SIZES, ":", color="grey", label="k single passes")
    ax.set_xlabel("tokens in one decode (k)")
    ax.set_ylabel("cost in single-token decodes")
    ax.set_title("What a batch costs: the curve chunk insertion pays")
    ax.legend(fontsize=7)
    print("plot:", save_plot(fig, "models-cost.png"))


# ---------------------------------------------------------------- part decode

def prompts_by_kind() -> dict[str, list[str]]:
    cases = [c for c in load_cases("dev") if c["kind"] == "positive" and c["user"] == USER]
    out = {"personal details": [c["text"] for c in cases if not c["field"].startswith("snippet")],
           "snippets": [c["text"] for c in cases if c["field"].startswith("snippet")], "paragraph starts": []}
    for path in sorted((PERSONAS / LEARNED_FROM[USER]).glob("new-*.txt")):
        out["paragraph starts"] += paragraph_starts(path.read_text(encoding="utf-8"))
    return out


def continuation_ppl(rt: LlamaRuntime, prompt: str, text: str) -> tuple[float, int]:
    """Negative log-likelihood and token count of *text* after *prompt* under the base model."""
    tokens, first = document_tokens(rt, Document("s", text, prefix=prompt))
    lp = score(rt, tokens, first, hidden=False).logprob[first:]
    lp = lp[~np.isnan(lp)]
    return -float(lp.sum()), len(lp)


def decode_one(name: str, path: Path, args) -> dict:
    profiles = json.loads((DATA / "profiles.json").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "store.db"
        if not args.learned_only:
            build_store(db, profiles[USER])
        engine = Engine(path, ChunkStore(db), n_threads=2)
        t = time.perf_counter()
        learned = learn(engine, LEARNED_FROM[USER], args.teacher)     # the teacher: issue 15 point 5
        engine.refresh()
        setup = time.perf_counter() - t
        # Whole runs of --max-tokens: a natural end (the editor's default since settings schema 3) would
        # cut the two sides at different places, and this measures decoding speed over the same length.
        settings = Settings(max_tokens=args.max_tokens, natural_end=False)
        rows = {}
        for kind, prompts in prompts_by_kind().items():
            if args.learned_only and kind != "paragraph starts":
                continue
            acc = {"tokens": [0, 0], "steps": [0, 0], "secs": [0.0, 0.0], "nll": [0.0, 0.0], "ntok": [0, 0],
                   "rouge": [], "chunks": 0, "by": {"value": 0, "snippet": 0, "learned": 0}}
            for p in prompts:
                request = settings.suggestion_request(body_prompt(p))
                times, outs = ([], []), [None, None]
                for r in range(args.repeats):
                    for side in ((0, 1) if r % 2 == 0 else (1, 0)):       # plain, chunks; order alternates
                        engine.runtime.reset()                           # equal cache state on both sides
                        request.use_chunks = side == 1
                        out = engine.generate(request, record_use=False)
                        times[side].append(out.stats.decode_seconds)
                        outs[side] = out
                for side in (0, 1):
                    s = outs[side].stats
                    acc["tokens"][side] += s.tokens
                    acc["steps"][side] += s.steps
                    acc["secs"][side] += statistics.median(times[side])
                    nll, n = continuation_ppl(engine.runtime, body_prompt(p), outs[side].text)
                    acc["nll"][side] += nll
                    acc["ntok"][side] += n
                acc["chunks"] += outs[1].stats.chunks
                for span in outs[1].spans:                 # which part of the store was inserted
                    source = span.as_dict()["kind"]
                    acc["by"][("learned" if source in REPEATABLE_KINDS else "snippet" if source == "snippet"
                               else "value")] += 1
                acc["rouge"].append(rouge_l(outs[1].text, outs[0].text))
            rows[kind] = acc | {"prompts": len(prompts)}
        engine.close()
    return {"rows": rows, "learned": learned, "setup": setup}


def decode(args) -> None:
    print(f"Machine: {machine()}\n")
    files = model_files(Path(args.models))
    chosen = {k: v for k, v in files.items()
              if "bundled" in k or (k.startswith("Gemma") and args.teacher == "corpus" and not args.learned_only)}
    if args.learned_only:
        print("Store: the learned store alone (no library), SmolLM2 only, paragraph starts only")
    print(f"Learned store: mined with {'the corpus as teacher (what Learn from my writing runs)' if args.teacher == 'corpus' else 'Gemma 3 270M as teacher (KCD-LM)'}")
    results = {}
    for name, path in chosen.items():
        results[name] = decode_one(name, path, args)
        print(f"({name}: store learned ({results[name]['learned']} chunks mined) and made ready in "
              f"{results[name]['setup']:.0f} s)", flush=True)
    lines, plot = [], {}
    for name, res in results.items():
        for kind, a in res["rows"].items():
            fps = 1 - a["steps"][1] / max(1, a["tokens"][1])
            per = [a["secs"][i] / max(1, a["tokens"][i]) for i in (0, 1)]
            tts = 1 - per[1] / per[0]
            ppl = [math.exp(a["nll"][i] / max(1, a["ntok"][i])) for i in (0, 1)]
            plot[(name, kind)] = (fps, tts)
            by = a["by"]
            lines.append([name, kind, a["prompts"], a["chunks"], f"{by['value']} / {by['snippet']} / {by['learned']}",
                          f"{a['tokens'][1]} / {a['steps'][1]}",
                          f"{100 * fps:.1f}%", f"{100 * tts:.1f}%", f"{1000 * per[0]:.1f} / {1000 * per[1]:.1f}",
                          f"{statistics.mean(a['rouge']):.2f}", f"{ppl[0]:.2f} / {ppl[1]:.2f}"])
    print(f"The editor's request (greedy, stop at a blank line, threshold {Settings().threshold:g}, kNN-LM as "
          f"after Learn) with {args.max_tokens} tokens and no natural end; chunks on against off on the same engine and store, "
          f"{args.repeats} alternating repeats, the cache reset before each run; time on decode (prefill excluded):")
    print(table(["model", "prompts", "n", "chunks inserted", "of which values / snippets / learned phrases",
                 "tokens / forward passes (chunks on)", "FPS", "TTS",
                 "ms per token off / on", "ROUGE-L on vs off", "perplexity under base, off / on"], lines))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    keys = list(plot)
    x = np.arange(len(keys))
    ax.bar(x - 0.2, [100 * plot[k][0] for k in keys], width=0.4, label="forward passes saved")
    ax.bar(x + 0.2, [100 * plot[k][1] for k in keys], width=0.4, label="time per token saved")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(x, [f"{m.split()[0]}\n{k}" for m, k in keys], fontsize=7)
    ax.set_ylabel("%")
    ax.set_title("Chunk insertion on two models, the editor's populated store")
    ax.legend(fontsize=7)
    name = "models-decode" + ("" if args.teacher == "corpus" else "-gemma-teacher") + ("-learned" if args.learned_only else "")
    print("plot:", save_plot(fig, name + ".png"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="part", required=True)
    q = sub.add_parser("quant", help="cost curve, perplexity and suggestions per model file")
    q.add_argument("--repeats", type=int, default=7)
    q.add_argument("--rounds", type=int, default=3)
    q.add_argument("--prompts", type=int, default=40)
    d = sub.add_parser("decode", help="FPS/TTS/quality with a populated store on SmolLM2 and Gemma")
    d.add_argument("--repeats", type=int, default=3)
    d.add_argument("--max-tokens", type=int, default=48)
    d.add_argument("--teacher", choices=("corpus", "gemma"), default="corpus",
                   help="how the learned store is mined; gemma: SmolLM2 only, Gemma 3 270M as its teacher")
    d.add_argument("--learned-only", action="store_true",
                   help="no library: the learned store alone, on SmolLM2, at paragraph starts (what a teacher changes)")
    for p in (q, d):
        p.add_argument("--models", default=str(MODELS),
                       help="where the requantised and assembled files are made once (kept out of git)")
    args = ap.parse_args()
    (quant if args.part == "quant" else decode)(args)


if __name__ == "__main__":
    main()
