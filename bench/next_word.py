"""How the model's-next-word gate's bar (core/placement.py GOES_ON) trades misplaced values for right ones.

With the gate switched off, bench/prose.py (dev: the user's values in ordinary prose) and
bench/personal.py (dev: the user's own details on unseen phrasings) are run as usual; wherever
one of the user's values goes in, the model's most likely next token at that step and its
probability are recorded, and whether the gate's other conditions hold there (right after a
letter or digit, a word or word piece, not a stand-in, not the value's own start).  Each bar is
then replayed: a misplaced prose value the gate would have stopped is removed, a right personal
value it would have stopped is lost.  The replay ignores what a stopped step would have
proposed instead; the two benches, run with the chosen bar, are the measure.

    python bench/next_word.py          # about 4 minutes here
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench import personal, prose  # noqa: E402
from bench.common import machine, table  # noqa: E402
from chunkwise.core import decoding, placement  # noqa: E402
from chunkwise.core.sampling import token_probability  # noqa: E402

BARS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6)
_seen: list[tuple[bool, float, str]] = []     # (the gate's other conditions hold, top probability, its piece)


def _recording(self, logits, proposal) -> bool:
    """Decoder.words_go_on switched off: what it would have seen is recorded instead."""
    bar, placement.GOES_ON = placement.GOES_ON, 0.0
    try:
        eligible = _original(self, logits, proposal)       # every condition but the bar
    finally:
        placement.GOES_ON = bar
    top = int(np.argmax(logits))
    _seen.append((eligible, token_probability(logits, top), self.rt.piece(top).decode("utf-8", "replace")))
    return False


_original = decoding.Decoder.words_go_on


def prose_places() -> list[tuple[str, tuple | None, str]]:
    """(outcome, what the gate saw at the inserted value, the words before) at each prose place with a value."""
    rows = []
    _seen.clear()
    for _persona, email, pos, label, value in prose.asked("dev"):
        if label is not None:
            rows.append(("right" if prose.right_here(email, pos, value) else "misplaced",
                         _seen[-1] if _seen else None, email[max(0, pos - 40):pos]))
        _seen.clear()                                  # the next place's step starts afresh
    return rows


def personal_cases() -> list[tuple[str, tuple | None, str]]:
    """(outcome, what the gate saw, the case's words) for each personal dev case with a value inserted."""
    seen_by_id: dict[str, tuple | None] = {}
    run_case = personal.run_case

    def recording_run(engine, case, settings):
        _seen.clear()
        result = run_case(engine, case, settings, alternative=False)     # what the suggestion's own gate saw
        seen_by_id[case["id"]] = _seen[-1] if _seen else None
        return result

    personal.run_case = recording_run
    try:
        _summary, verdicts = personal.evaluate("dev")
    finally:
        personal.run_case = run_case
    rows = []
    for v in verdicts:
        if v["inserted"] is not None:
            outcome = ("right" if v.get("right") else "wrong") if v["kind"] == "positive" else "misplaced"
            rows.append((outcome, seen_by_id.get(v["id"]), v["text"][-40:]))
    return rows


def stopped(seen: tuple | None, bar: float) -> bool:
    return seen is not None and seen[0] and seen[1] >= bar


def main() -> None:
    print(f"Machine: {machine()}\n", flush=True)
    decoding.Decoder.words_go_on = _recording          # over the gate the Decoder takes from Placement
    try:
        places, cases = prose_places(), personal_cases()
    finally:
        del decoding.Decoder.words_go_on                   # Placement's own again
    n_mis = sum(o == "misplaced" for o, _s, _t in places)
    rows = []
    for bar in BARS:
        rows.append([f"{bar:.2f}" + (" (GOES_ON)" if bar == placement.GOES_ON else ""),
                     f"{sum(o == 'misplaced' and stopped(s, bar) for o, s, _t in places)} of {n_mis}",
                     sum(o == "right" and stopped(s, bar) for o, s, _t in places),
                     sum(o == "right" and stopped(s, bar) for o, s, _t in cases),
                     sum(o != "right" and stopped(s, bar) for o, s, _t in cases)])
    print("### dev: the model's-next-word gate replayed at each bar (the gate off while measuring)\n")
    print(table(["bar", "prose: misplaced values stopped", "prose: right values stopped",
                 "personal: right values lost", "personal: wrong or misplaced values stopped"], rows))
    print("\npersonal dev right values the gate would see (probability, next token), lowest bar first:")
    for o, s, t in sorted((r for r in cases if r[0] == "right" and r[1] and r[1][0]), key=lambda r: -r[1][1])[:8]:
        print(f"  {s[1]:.2f} {s[2]!r} after {t!r}")


if __name__ == "__main__":
    main()
