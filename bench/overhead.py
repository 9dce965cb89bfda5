"""What having chunks on costs per token where no chunk is inserted, and where the time goes.

The editor's path: a populated store (the persona's PII profile and what *Learn from my writing*
mined from its sent mail, as bench/keystrokes.py builds it), the editor's own request settings
(``Settings.suggestion_request``: 24 tokens, greedy, the body's stop), prompts of ordinary email
text (the neutral openings of bench/data/personal/cases.json, and each sentence start of the
persona's new emails).  Every configuration runs every prompt with the KV cache reset first
(equal cache state), in an order rotated per prompt and repeat; per-token time is decode time
(prefill excluded) over tokens.

Configurations, two groups:

* kNN-LM off (the issue's measure): *chunks off* (no hidden states asked), *states only* (chunks on,
  but the proposal replaced by "nothing": what asking llama.cpp for hidden states costs), *chunks on*;
* the editor's defaults (kNN-LM on, so hidden states are asked either way): *defaults, chunks off*
  and *defaults*.

Only prompts whose text came out the same in every configuration (nothing inserted) count toward
the overhead; the rest are reported as a count.  The breakdown per token: the forward pass
(``LlamaRuntime.eval`` after prefill; the whose-detail probe's decode inside a proposal counts
here too, and in the proposal), the proposal (``Decoder.propose``, the kNN mixing inside it
not counted), the kNN-LM mixing (``KnnLM.mix_logits``), and everything else in the step (Python).

    python bench/overhead.py [--repeats 5] [--prompts 40]
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import OUT, machine, save_plot, table  # noqa: E402
from bench.keystrokes import PERSONAS, learned_engine  # noqa: E402
from chunkwise.core.decoding import Decoder  # noqa: E402
from chunkwise.core.knn import KnnLM  # noqa: E402
from chunkwise.core.llama_runtime import LlamaRuntime  # noqa: E402
from chunkwise.core.settings import Settings  # noqa: E402

CASES = Path(__file__).resolve().parent / "data" / "personal" / "cases.json"

CONFIGS = {       # name: (Settings changes, proposal switched off)
    "chunks off": ({"chunks_enabled": False, "knn_enabled": False}, False),
    "states only": ({"knn_enabled": False}, True),
    "chunks on": ({"knn_enabled": False}, False),
    "defaults, chunks off": ({"chunks_enabled": False}, False),
    "defaults": ({}, False),
}
PAIRS = [("chunks on", "chunks off"), ("states only", "chunks off"), ("chunks on", "states only"),
         ("defaults", "defaults, chunks off")]


class Clock:
    """Time spent in the wrapped calls during decoding (prefill excluded), by part."""

    def __init__(self):
        self.parts: dict[str, float] = defaultdict(float)
        self.decoding = False
        self._nested = 0.0

    def wrap(self, cls, name: str, part: str, nested: bool = False) -> None:
        """Time *cls.name* as *part*; *nested*: it also runs inside the proposal, whose time excludes it."""
        original = getattr(cls, name)
        clock = self

        def timed(*args, **kwargs):
            if not clock.decoding:
                return original(*args, **kwargs)
            t = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent = time.perf_counter() - t
                clock.parts[part] += spent
                if nested:
                    clock._nested += spent          # taken out of the caller's part below
        setattr(cls, name, timed)


def prompts(limit: int) -> list[str]:
    cases = [c["text"] for c in json.loads(CASES.read_text(encoding="utf-8")) if c["kind"] == "neutral"]
    mails = []
    for path in sorted((PERSONAS / "mara").glob("new-*.txt")):
        text = path.read_text(encoding="utf-8")
        mails += [text[:m.end()] for m in re.finditer(r"[.!?]\s+", text)]
    out = []
    for pair in zip(cases, mails):        # interleaved, so a short run still sees both kinds
        out += pair
    return out[:limit]


def run_one(engine, prompt: str, settings: Settings, clock: Clock) -> tuple[str, dict]:
    engine.runtime.reset()                   # equal cache state: no configuration reuses another's prompt
    request = settings.suggestion_request(prompt.rstrip(" "))
    generation = engine.stream(request)
    clock.parts.clear()
    clock._nested = 0.0
    text = ""
    for piece in generation:
        text += piece.text
    stats = generation.stats
    return text, {"tokens": stats.tokens, "decode": stats.decode_seconds, "chunks": stats.chunks,
                  **dict(clock.parts)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--prompts", type=int, default=40)
    args = ap.parse_args()

    clock = Clock()
    clock.wrap(LlamaRuntime, "eval", "forward")
    clock.wrap(KnnLM, "mix_logits", "knn", nested=True)
    original_propose = Decoder.propose
    switched_off = {"on": False}

    def propose(self, state):
        if switched_off["on"]:
            return None
        t, nested = time.perf_counter(), clock._nested
        try:
            return original_propose(self, state)
        finally:
            if clock.decoding:
                clock.parts["propose"] += time.perf_counter() - t - (clock._nested - nested)
    Decoder.propose = propose
    original_prefill = Decoder.prefill

    def prefill(self, tokens):
        clock.decoding = False
        try:
            return original_prefill(self, tokens)
        finally:
            clock.decoding = True
    Decoder.prefill = prefill

    tmp = Path(tempfile.mkdtemp(prefix="chunkwise-overhead-"))
    engine = learned_engine(tmp, "mara", None, learn=True)
    texts = prompts(args.prompts)
    runs: dict[str, list[list[dict]]] = {name: [[] for _ in texts] for name in CONFIGS}
    outputs: dict[str, list[set]] = {name: [set() for _ in texts] for name in CONFIGS}
    names = list(CONFIGS)
    run_one(engine, texts[0], Settings(), clock)      # warm-up: the kNN graph, the matcher, page cache
    t0 = time.perf_counter()
    for repeat in range(args.repeats):
        for i, prompt in enumerate(texts):
            k = (i + repeat) % len(names)
            for name in names[k:] + names[:k]:
                changes, off = CONFIGS[name]
                switched_off["on"] = off
                settings = replace(Settings(), **changes)
                engine.threshold = settings.threshold
                text, row = run_one(engine, prompt, settings, clock)
                runs[name][i].append(row)
                outputs[name][i].add(text)
        print(f"repeat {repeat + 1}/{args.repeats} done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    switched_off["on"] = False

    def unchanged(group: list[str]) -> list[int]:
        """Prompts where the group's configurations all wrote the same text and inserted nothing
        (the kNN-LM changes the text, so each group is compared within itself)."""
        return [i for i in range(len(texts))
                if len(set.union(*(outputs[n][i] for n in group))) == 1
                and all(r["chunks"] == 0 for n in group for r in runs[n][i])]

    groups = [[n for n in names if not n.startswith("defaults")], [n for n in names if n.startswith("defaults")]]
    same_in = {n: unchanged(g) for g in groups for n in g}

    def per_token(name: str, part: str | None = None) -> float:
        """Median over repeats of (sum over prompts of the part) / (sum of tokens), in ms."""
        values = []
        for rep in range(args.repeats):
            rows = [runs[name][i][rep] for i in same_in[name]]
            tokens = sum(r["tokens"] for r in rows)
            if part is None:
                spent = sum(r["decode"] for r in rows)
            elif part == "python":
                spent = sum(r["decode"] - r.get("forward", 0) - r.get("propose", 0) - r.get("knn", 0) for r in rows)
            else:
                spent = sum(r.get(part, 0.0) for r in rows)
            values.append(spent / max(tokens, 1) * 1e3)
        return statistics.median(values)

    def paired(a: str, b: str) -> tuple[float, float, float]:
        """Overhead of a over b per repeat (same prompts, same repeat): median, min, max in %."""
        ratios, same = [], same_in[a]
        for rep in range(args.repeats):
            ta = sum(runs[a][i][rep]["decode"] for i in same) / max(sum(runs[a][i][rep]["tokens"] for i in same), 1)
            tb = sum(runs[b][i][rep]["decode"] for i in same) / max(sum(runs[b][i][rep]["tokens"] for i in same), 1)
            ratios.append((ta / tb - 1) * 100)
        return statistics.median(ratios), min(ratios), max(ratios)

    tokens = {n: sum(runs[n][i][0]["tokens"] for i in same_in[n]) for n in ("chunks off", "defaults")}
    rows = [[name, f"{per_token(name):.2f}", f"{per_token(name, 'forward'):.2f}", f"{per_token(name, 'propose'):.3f}",
             f"{per_token(name, 'knn'):.3f}", f"{per_token(name, 'python'):.3f}"] for name in names]
    overhead = [[f"{a} vs {b}", *(f"{v:+.1f}%" for v in paired(a, b))] for a, b in PAIRS]
    lines = [f"Machine: {machine()}",
             f"Store: persona mara's PII profile + learned store (Learn from my writing: gamma 0.5, corpus teacher, "
             f"kNN rows), {engine.contexts} contexts; editor request settings (Settings.suggestion_request, "
             f"threshold {Settings().threshold}); {len(texts)} prompts of ordinary email text, {args.repeats} "
             f"repeats, order rotated, KV cache reset before every run",
             f"Prompts where every configuration of a group wrote the same text and nothing was inserted: kNN-LM off "
             f"{len(same_in['chunks off'])} ({tokens['chunks off']} tokens per configuration and repeat), editor defaults "
             f"{len(same_in['defaults'])} ({tokens['defaults']} tokens); the rest left out (a chunk inserted, or the "
             "text differed)",
             "", "Per token (ms, median over repeats; decode only, prefill excluded):",
             table(["configuration", "total", "forward pass", "proposal", "kNN-LM mixing", "rest (Python)"], rows),
             "", "Overhead per token, paired by repeat (median, min, max over repeats):",
             table(["comparison", "median", "min", "max"], overhead)]
    text = "\n".join(lines)
    print(text)
    OUT.mkdir(exist_ok=True)
    (OUT / "overhead.txt").write_text(text + "\n")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.2))
    bottom = [0.0] * len(names)
    for part, colour in (("forward", "#4c72b0"), ("propose", "#dd8452"), ("knn", "#55a868"), ("python", "#8172b3")):
        values = [per_token(n, part) for n in names]
        ax.barh(names, values, left=bottom, color=colour, label=part if part != "python" else "rest (Python)")
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.invert_yaxis()
    ax.set_xlabel("ms per token (decode, nothing inserted)")
    ax.set_title("Where a token's time goes, chunks off and on")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    save_plot(fig, "overhead")


if __name__ == "__main__":
    main()
