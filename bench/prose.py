"""The user's own values in ordinary prose: every word boundary of a person's emails, asked as the editor asks.

Issue 10 asks that the user's value go into ordinary prose "in no neutral opening" and in at
most 5% of places where it is not theirs.  The personal-details benchmark has 30-something
hand-written openings per split; a person's own emails have thousands of places where a
suggestion is asked and nothing of the library comes next.  For each persona of
bench/data/personas (day-one library: name, role, company or website, phone, email) each email
is cut after every word, as bench/keystrokes.py types it, and the editor's request
(``Settings().suggestion_request`` on the body framing) is run until the suggestion has shown
its first words.  A place is counted as

* **right** when one of the user's values (a PII chunk or snippet) is inserted and the email's
  next word is the value's first ("Teo" where the library holds "Teo Okafor"),
* **misplaced** when one is inserted and the email says something else there
  ("...sends new subscribers a" -> the user's email address),
* neither when no value is inserted.

Dev: the 16 sent emails of each persona and the three dev new emails (``split.json``); test:
the three test new emails of each, frozen.  The library is the day-one profile only (the sent
emails are what Learn would learn from, so a learned store would have seen them).

    python bench/prose.py --split dev -v        # every value inserted, right or misplaced, with the words before it
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine, table  # noqa: E402
from bench.keystrokes import PERSONAS, UNIT, body_prompt, emails, persona_profile  # noqa: E402
from chunkwise.core import ChunkStore, Engine  # noqa: E402
from chunkwise.core.settings import Settings  # noqa: E402

VALUE_KINDS = ("pii", "snippet")


def texts(persona: str, split: str) -> list[str]:
    """The emails of *split*: dev = sent mail and the dev new emails; test = the test new emails."""
    if split == "test":
        return emails(persona, "test")
    sent = [p.read_text(encoding="utf-8").strip() for p in sorted((PERSONAS / persona).glob("sent-*.txt"))]
    return sent + emails(persona, "dev")


def first_value(engine: Engine, before: str, settings: Settings) -> tuple[str, str | None, str]:
    """The suggestion at *before* up to its first words: (text, label of the user's value inserted in it
    or None, that value's text).  Generation stops once two pieces with words have come."""
    prompt, lifted = body_prompt(before)
    shown, worded, value = "", 0, (None, "")
    for piece in engine.stream(settings.suggestion_request(prompt, lifted=lifted), cancelled=lambda: worded >= 2):
        text = piece.text[1:] if lifted and not shown and piece.text.startswith(" ") else piece.text
        if piece.source == "chunk" and piece.kind in VALUE_KINDS and value[0] is None:
            value = (piece.label or piece.kind, text)
        shown += text
        worded += bool(text.strip())
    return shown, value[0], value[1]


def first_word(text: str) -> str:
    """The first word, lower-cased, without the punctuation around it ("hello@teookafor.dev." -> "hello@teookafor.dev")."""
    parts = text.split()
    return parts[0].strip(".,;:!?()\"'").lower() if parts else ""


def places(email: str) -> list[int]:
    """Where the typing simulation asks: after each word, once some text is there."""
    ends, pos = [], 0
    for m in UNIT.finditer(email):
        pos = m.end()
        if pos < len(email):
            ends.append(pos)
    return ends


def asked(split: str) -> Iterator[tuple[str, str, int, str | None, str]]:
    """(persona, email, place, label of the value inserted there or None, that value) at every place of
    *split*, each persona with their day-one library, the editor's request."""
    import tempfile

    runtime, settings = None, Settings()
    with tempfile.TemporaryDirectory() as tmp:
        for persona in ("mara", "teo"):
            engine = Engine(store=ChunkStore(Path(tmp) / f"{persona}.db"), n_threads=2, runtime=runtime)
            runtime = engine.runtime
            persona_profile(engine.store, persona)
            engine.refresh()
            engine.threshold = settings.threshold
            for email in texts(persona, split):
                for pos in places(email):
                    _shown, label, value = first_value(engine, email[:pos], settings)
                    yield persona, email, pos, label, value
            engine.store.close()
    if runtime is not None:
        runtime.close()


def right_here(email: str, pos: int, value: str) -> bool:
    """The value's first word is the email's next ("Teo" for "Teo Okafor")."""
    return first_word(email[pos:]) == first_word(value)


def run(split: str, verbose: bool) -> tuple[Counter, Counter, list[list]]:
    counts = {p: Counter() for p in ("mara", "teo")}
    misplaced_by = Counter()
    for persona, email, pos, label, value in asked(split):
        counts[persona]["places"] += 1
        if label is None:
            continue
        right = right_here(email, pos, value)
        counts[persona]["right" if right else "misplaced"] += 1
        if not right:
            misplaced_by[label] += 1
        if verbose:
            print(f"  {'right ' if right else ''}{persona}: {email[max(0, pos - 50):pos]!r} -> {value!r} ({label})",
                  flush=True)
    share = lambda c: f"{c['misplaced']} ({100 * c['misplaced'] / max(c['places'], 1):.1f}%)"
    totals = counts["mara"] + counts["teo"]
    rows = [[p, c["places"], c["right"], share(c)] for p, c in counts.items()]
    rows.append(["all", totals["places"], totals["right"], share(totals)])
    return totals, misplaced_by, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    print(f"Machine: {machine()}\n", flush=True)
    _totals, by, rows = run(args.split, args.verbose)
    print(f"\n### {args.split}: the day-one library, the editor's request after every word\n")
    print(table(["persona", "places asked", "the user's value, right", "the user's value, misplaced"], rows))
    print("\nmisplaced by value: " + (", ".join(f"{k} {n}" for k, n in by.most_common()) or "none"))


if __name__ == "__main__":
    main()
