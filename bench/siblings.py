"""Two values of one field: does the suggestion bring the one the sentence speaks of?

A user keeps a work and a personal email, a desk phone and a mobile, a home and an office address
(bench/data/siblings/cases.json, one library, 18 phrasings written before the first run).  The slot
classifier reads both values of a field alike; ``ChunkMatcher.which_of`` chooses by the words that
set each apart (its lead-ins, label and value).  Each case runs through the editor's request (as
bench/personal.py: its framing, 24 tokens, greedy, stop at a blank line; then the detail alternative
Alt+] shows, GenerationRequest.readier) on the library plus a store learned from a persona's sent
mail, twice from the same store: with ``which_of`` and with the classifier's order alone (what
Chunkwise did before), which way first alternating.

    python bench/siblings.py            # each case both ways, then the table
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine, table  # noqa: E402
from bench.personal import learn, run_case  # noqa: E402
from chunkwise.core import ChunkStore, Engine  # noqa: E402
from chunkwise.core.matching import ChunkMatcher  # noqa: E402
from chunkwise.core.settings import Settings  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "bench" / "data" / "siblings" / "cases.json"


def classifier_order(self, chunk_ids, text):
    """ChunkMatcher.which_of as before it: the first of the classifier's order."""
    return chunk_ids[0]


# The library's six values by field: two of each.
FIELD = {"work email": "email", "personal email": "email", "desk phone": "phone", "mobile": "phone",
         "home address": "address", "office address": "address"}


def judge(want: str, got: str | None) -> str:
    """right, the other (the other value of the same field), another field, or none.

    >>> judge("work email", "personal email"), judge("mobile", "desk phone"), judge("work email", "home address")
    ('the other', 'the other', 'other field')
    """
    if got is None:
        return "none"
    if got == want:
        return "right"
    return "the other" if FIELD[got] == FIELD[want] else "other field"


def evaluate() -> dict[str, list[str]]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    settings = Settings()
    outcome: dict[str, list[str]] = {"which_of": [], "classifier order": []}
    near = dict.fromkeys(outcome, 0)      # the right one shown or one Alt+] away
    chosen = ChunkMatcher.which_of
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "leo.db"
        with ChunkStore(path) as store:
            label_of = {store.add_chunk(e["value"], "pii", e["contexts"], label=label): label
                        for label, e in data["profile"].items()}
        engine = Engine(store=ChunkStore(path), n_threads=2, threshold=settings.threshold)
        try:
            learn(engine, "mara")
            engine.refresh()
            for i, case in enumerate(data["cases"]):
                ways = ["which_of", "classifier order"][:: 1 if i % 2 == 0 else -1]
                for way in ways:
                    ChunkMatcher.which_of = chosen if way == "which_of" else classifier_order
                    result = run_case(engine, case, settings)          # and the detail alternative, as the editor
                    got = next((label_of[s["chunk_id"]] for s in result["spans"] if s["chunk_id"] in label_of), None)
                    alt = label_of.get(result["alternative"])
                    outcome[way].append(verdict := judge(case["value"], got))
                    near[way] += got == case["value"] or alt == case["value"]
                    print(f"{case['id']} {way:16} {verdict:11} want {case['value']:14} got {got}"
                          f"{f' (Alt+] {alt})' if alt else ''} | {case['text'][-50:]!r} => {result['text']!r}",
                          flush=True)
        finally:
            ChunkMatcher.which_of = chosen
            engine.store.close()
            engine.runtime.close()
    return outcome, near


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.parse_args()
    outcome, near = evaluate()
    print(f"Machine: {machine()}\n")
    n = len(next(iter(outcome.values())))
    rows = [[way, f"{v.count('right')}/{n} ({100 * v.count('right') / n:.0f}%)", v.count("the other"),
             v.count("other field"), v.count("none"), f"{near[way]}/{n} ({100 * near[way] / n:.0f}%)"]
            for way, v in outcome.items()]
    print(table(["which of two values", "the one the sentence speaks of", "the other one", "another field",
                 "neither", "the one spoken of, shown or one Alt+] away"], rows))


if __name__ == "__main__":
    main()
