"""How much of each persona's new mail was ever written before: the part of keystroke savings memory can give.

Keystroke savings after *Learn from my writing* come from two places: what the model predicts
of any text, and what the learned store (chunks, the kNN-LM) replays of the writer's own. The
second can only give back words the writer has already sent. This counts, for each persona's
new emails (bench/data/personas, the split bench/keystrokes.py types), the share of characters
(each word with its following space, as the typing simulation counts keys) that lie inside a run
of *n* words that also occurs, word for word, in the persona's 16 sent emails. No model is run:
it measures the data, not the product.

    python bench/repeats.py            # n = 3 and 5, each persona and split

A persona whose new mail shares little with the sent mail cannot save much more than the model
alone gives plus that share, whatever the store learns; compare with bench/out/keystrokes-*.txt.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402

PERSONAS = Path(__file__).resolve().parent / "data" / "personas"


def split_files(persona: str, split: str) -> list[Path]:
    """The new emails of *persona* that bench/keystrokes.py types on *split* (bench/data/personas/split.json)."""
    data = json.loads((PERSONAS / "split.json").read_text(encoding="utf-8"))
    names = data["rhea"][split] if persona == "rhea" else [f for f in data[split] if f.startswith(persona + "/")]
    return [PERSONAS / name for name in names]


def seen_share(new_text: str, sent_words: list[str], n: int) -> tuple[int, int]:
    """(characters of *new_text* inside a run of *n* words that occurs in *sent_words*, all characters).

    >>> seen_share("see you on Friday then", "I will see you on Friday at noon".split(), 3)
    (18, 23)
    """
    grams = {tuple(sent_words[i:i + n]) for i in range(len(sent_words) - n + 1)}
    new = new_text.split()
    covered = [False] * len(new)
    for i in range(len(new) - n + 1):
        if tuple(new[i:i + n]) in grams:
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
            emails = 0
            for persona in group:
                sent = [w for p in sorted((PERSONAS / persona).glob("sent-*.txt"))
                        for w in p.read_text(encoding="utf-8").split()]
                for path in split_files(persona, split):
                    emails += 1
                    for n in args.n:
                        s, t = seen_share(path.read_text(encoding="utf-8"), sent, n)
                        counts[n][0] += s
                        counts[n][1] += t
            rows.append([" and ".join(p.title() for p in group), split, emails,
                         *(f"{seen / total:.0%}" for seen, total in counts.values())])
    print("share of the new emails' characters inside a run of n words the persona's sent mail holds\n")
    print(table(["persona", "split", "emails", *(f"n = {n}" for n in args.n)], rows))


if __name__ == "__main__":
    main()
