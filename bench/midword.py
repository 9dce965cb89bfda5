"""Suggestions at a pause inside a word: the typed letters left as the tokenizer cut them, or spelled again.

Where the user pauses in the middle of a word ("Thanks for the upd"), the prompt ends in the
tokens the tokenizer made of the typed letters (" up" + "d"), which is not how the model writes the
word.  core/healing.py takes those tokens back and lets the suggestion's first steps spell the letters
again among the tokens that agree with them (GenerationRequest.finish_word, which the editor sets
unless the user's last key was a space).

For both personas' new emails (bench/data/personas, the split asked for), at a pause after the
first two letters of every second word of five letters or more, the editor's request
(Settings().suggestion_request, the learned store of bench/keystrokes.py: day-one library plus
Tools -> Learn from my writing) is run both ways, on the same engine, each from the same cache state
(the text up to the word before, as the previous pause left it; which way runs first alternates).
Printed for each way: the share of pauses where the suggestion finishes the word rightly (its rest,
then a character that is not a letter), the mean characters of the suggestion that match what
the user went on to write, and the first piece's latency.

    python bench/midword.py --split dev
    python bench/midword.py --split test
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.common import OUT, machine, table  # noqa: E402
from bench.keystrokes import emails, learned_engine  # noqa: E402
from chunkwise.core.settings import Settings  # noqa: E402

WORD = re.compile(r"[^\W\d_]{5,}")
TYPED = 2                     # letters typed before the pause


def pauses(email: str) -> list[int]:
    """Positions two letters into every second word of five letters or more (after the first line)."""
    start = email.find("\n") + 1
    words = [m for m in WORD.finditer(email, start)]
    return [m.start() + TYPED for m in words[::2]]


def suggest(engine, prompt: str, finish_word: bool) -> tuple[str, float | None]:
    request = replace(Settings().suggestion_request(prompt), finish_word=finish_word)
    t0, first, text = time.perf_counter(), None, ""
    for piece in engine.stream(request):
        if first is None and piece.text:
            first = time.perf_counter() - t0
        text += piece.text
    return text, first


def common(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def run(split: str, tmp: Path, verbose: bool = False) -> dict:
    ways = {"as typed (before)": False, "finished as the model spells it": True}
    tally = {w: {"right": 0, "chars": [], "latency": []} for w in ways}
    n, runtime = 0, None
    for persona in ("mara", "teo"):
        engine = learned_engine(tmp, persona, runtime, True)
        runtime = engine.runtime
        engine.threshold = Settings().threshold
        for email in emails(persona, split):
            for k, pos in enumerate(pauses(email)):
                before, rest = email[:pos], email[pos:]
                word_rest = re.match(r"[^\W\d_]*", rest).group()
                order = list(ways.items()) if k % 2 == 0 else list(ways.items())[::-1]
                shown = {}
                for name, finish in order:
                    warm = before[: before.rstrip().rfind(" ") + 1].rstrip(" ") or before[:1]
                    engine.generate(replace(Settings().suggestion_request(warm), max_tokens=1), record_use=False)
                    text, first = suggest(engine, before, finish)
                    t = tally[name]
                    t["right"] += text.startswith(word_rest) and not text[len(word_rest):len(word_rest) + 1].isalpha()
                    t["chars"].append(common(text, rest))
                    if first is not None:
                        t["latency"].append(first * 1000)
                    shown[name] = text
                n += 1
                if verbose:
                    print(f"{before[-30:]!r:34} -> " + " | ".join(f"{shown[w][:24]!r}" for w in ways))
        engine.store.close()
    if runtime is not None:
        runtime.close()
    rows = []
    for name, t in tally.items():
        lat = np.array(t["latency"]) if t["latency"] else np.zeros(1)
        rows.append([name, f"{t['right']}/{n} ({100 * t['right'] / max(n, 1):.0f}%)",
                     f"{np.mean(t['chars']):.1f}", f"{np.percentile(lat, 50):.0f} / {np.percentile(lat, 90):.0f}"])
    return {"n": n, "table": table(["the typed letters", "word finished rightly", "matching characters, mean",
                                    "first piece p50 / p90 (ms)"], rows)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = run(args.split, Path(tmp), args.verbose)
    text = (f"# python bench/midword.py --split {args.split}\n{machine()}\n\n"
            f"### {args.split} split: {result['n']} pauses two letters into a word\n\n{result['table']}\n")
    print(text)
    (OUT / f"midword-{args.split}.txt").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
