"""How much of each persona's new mail lies in runs of words they sent before (no model is run).

Keystroke savings after *Learn from my writing* come from two places: what the model predicts
of any text, and what the learned store (chunks, the kNN-LM) replays of the writer's own. What a
store replays whole comes from words the writer has already sent. This counts, for each
persona's new emails (bench/data/personas, the split bench/keystrokes.py types), the share of
characters (each word with its following space, as the typing simulation counts keys) that lie
inside a run of *n* words that also occurs, word for word, in one of the persona's 16 sent
emails (words compared lower-cased, the punctuation around them set aside; a run never spans two
emails). It measures the data, not the product.

    python bench/repeats.py            # n = 3 and 5, each persona and split

It is no bound: the model and the learned store also predict a word or two outside such runs.
Compare with bench/out/keystrokes-*.txt.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402
from bench.keystrokes import PERSONAS, emails  # noqa: E402


def key(word: str) -> str:
    """A word as runs compare it: lower-cased, the punctuation around it set aside ("Friday," -> "friday")."""
    return word.strip(".,;:!?\"'()[]").lower()


def runs(text: str, n: int) -> set[tuple[str, ...]]:
    """The runs of *n* words in *text* (:func:`key` of each)."""
    w = [key(x) for x in text.split()]
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def seen_share(new_text: str, grams: set[tuple[str, ...]], n: int) -> tuple[int, int]:
    """(characters of *new_text* inside a run of *n* words among *grams*, all characters).

    >>> seen_share("See you on Friday, then", runs("I will see you on Friday at noon", 3), 3)
    (19, 24)
    """
    new = new_text.split()
    keys = [key(x) for x in new]
    covered = [False] * len(new)
    for i in range(len(new) - n + 1):
        if tuple(keys[i:i + n]) in grams:
            covered[i:i + n] = [True] * n
    size = [len(w) + 1 for w in new]            # a word and the space (or line break) after it
    return sum(s for s, c in zip(size, covered) if c), sum(size)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, nargs="+", default=[3, 5], help="run lengths in words")
    args = ap.parse_args()
    rows = []
    # bench/keystrokes.py reports Mara and Teo together (their characters pooled), Rhea alone.
    for group in (("mara",), ("teo",), ("mara", "teo"), ("rhea",)):
        for split in ("dev", "test"):
            counts = {n: [0, 0] for n in args.n}
            count = 0
            for persona in group:
                sent = [p.read_text(encoding="utf-8") for p in sorted((PERSONAS / persona).glob("sent-*.txt"))]
                grams = {n: set().union(*(runs(text, n) for text in sent)) for n in args.n}
                for email in emails(persona, split):          # what bench/keystrokes.py types
                    count += 1
                    for n in args.n:
                        s, t = seen_share(email, grams[n], n)
                        counts[n][0] += s
                        counts[n][1] += t
            rows.append([" and ".join(p.title() for p in group), split, count,
                         *(f"{seen / total:.0%}" for seen, total in counts.values())])
    print("share of the new emails' characters inside a run of n words the persona's sent mail holds\n")
    print(table(["persona", "split", "emails", *(f"n = {n}" for n in args.n)], rows))


if __name__ == "__main__":
    main()
