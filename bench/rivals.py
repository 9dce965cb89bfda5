"""Where two of the user's fields read alike: which of the two the model's own readings expect.

At each case of the dev sets (``bench/personal.py``, ``bench/cli_profile.py --cases dev``,
``bench/entities.py``) where the slot classifier's best field of the user's is over the type cut
(its own cut: ``ChunkMatcher.cut_for``) and exactly one other field reads within the rival ratio (``matching.rival_ratio``: the rule that
keeps both out, ``ChunkMatcher.rival_near``), this prints the pair, the two readings of
``core/field_evidence.py`` for each value, and which of the pair each reading and the shipped
rule (both readings agree, ``field_evidence.pick``) choose.  Readings at the cursor, on the
profile alone, no generation: what ``ChunkMatcher.settled`` is asked there.

    python bench/rivals.py                 # dev sets (the frozen ones only with --split test)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.common import machine, table  # noqa: E402
from bench.personal import body_prompt, load_cases  # noqa: E402
from bench.slot_reading import user_engines  # noqa: E402
from chunkwise.core import ChunkStore, Engine  # noqa: E402
from chunkwise.core import field_evidence  # noqa: E402
from chunkwise.core.encoding import local_mean  # noqa: E402
from chunkwise.core.matching import rival_ratio  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def pair_at(engine: Engine, text: str) -> tuple[list[int], float, float] | None:
    """The user's two rival chunks at the end of *text* (best first) and their readings, or None."""
    rt, m = engine.runtime, engine.matcher
    rt.reset()
    states = engine.runtime_states(rt.tokenize(text, add_special=True))
    agreement, _others = m.type_readings(states.hidden[-1], local_mean(states.hidden), text)
    best: dict[str, tuple[int, float]] = {}
    for k, a in m.labelled(agreement, text).items():
        f = m.typed_field(k)
        if a > best.get(f, (None, 0.0))[1]:
            best[f] = (k, a)
    ranked = sorted(best.values(), key=lambda ka: -ka[1])
    if not ranked or ranked[0][1] < m.cut_for(ranked[0][0], text):      # (a snippet sentence's cut is lower)
        return None
    near = [ka for ka in ranked[1:] if ranked[0][1] < rival_ratio(m.threshold) * ka[1]]
    if len(near) != 1:
        return None
    return [ranked[0][0], near[0][0]], ranked[0][1], near[0][1]


def readings(engine: Engine, text: str, pair: list[int]) -> tuple[list[float], list[float]]:
    rt, m = engine.runtime, engine.matcher
    rt.reset()
    last = rt.sync(rt.tokenize(text, add_special=True), last=1, hidden=False).logits[-1].copy()
    values = [field_evidence.value_reading(rt, last, m.chunk_info(k)["text"]) for k in pair]
    names = [field_evidence.name_reading(rt, m.typed_field(k)) for k in pair]
    return values, names


def rows_for(name: str, items: list[dict], engine: Engine, field_of: dict[int, str]) -> list[list[str]]:
    rows = []
    for case in items:
        text = body_prompt(case["text"]) if "user" in case else case["text"]
        found = pair_at(engine, text)
        if found is None:
            continue
        pair, a1, a2 = found
        values, names = readings(engine, text, pair)
        right = case.get("field") or case.get("detail")
        choose = lambda i: "neither" if i is None else field_of[pair[i]]
        rows.append([f"{name} {case['id']}", case["kind"], str(right), f"{field_of[pair[0]]} {a1:.2f}",
                     f"{field_of[pair[1]]} {a2:.2f}", f"{values[0]:+.2f} / {values[1]:+.2f}",
                     f"{names[0]:+.2f} / {names[1]:+.2f}", choose(int(np.argmax(values))),
                     choose(int(np.argmax(names))), choose(field_evidence.pick(values, names)),
                     repr(text[-40:])])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    args = ap.parse_args()
    rows = []
    for items, engine, field_of, _profile in user_engines(load_cases(args.split)):
        rows += rows_for("personal", items, engine, field_of)
    from bench.entities import CASES, USER
    cases = json.loads(CASES[args.split].read_text(encoding="utf-8"))["cases"]
    for items, engine, field_of, _profile in user_engines([dict(c, user=USER) for c in cases]):
        rows += rows_for("entities", items, engine, field_of)
    from bench.cli_profile import CASES as PAPER, FIELDS, PROFILE
    profile = json.loads(PROFILE.read_text(encoding="utf-8"))
    engine = Engine(store=ChunkStore(":memory:"), n_threads=2)
    field_of = {engine.store.add_chunk(profile[f]["value"], "pii", profile[f]["contexts"][:4], label=f): f
                for f in FIELDS}
    engine.refresh()
    try:
        paper = json.loads(PAPER["dev" if args.split == "dev" else "frozen"].read_text(encoding="utf-8"))["cases"]
        rows += rows_for("paper", paper, engine, field_of)
    finally:
        engine.store.close()
        engine.runtime.close()
    print(f"Machine: {machine()}\n\n### {args.split}: places where two of the user's fields read alike\n")
    print(table(["case", "kind", "right field", "best", "rival", "value reading", "name reading",
                 "value picks", "name picks", "both agree (shipped)", "text"], rows))
    pos = [r for r in rows if r[1] == "positive"]
    for col, name in ((7, "value reading"), (8, "name reading"), (9, "both agree")):
        right = sum(r[col] == r[2] for r in pos)
        wrong = sum(r[col] not in (r[2], "neither") for r in pos)
        others = sum(r[col] != "neither" for r in rows if r[1] != "positive")
        print(f"{name}: right {right}/{len(pos)}, wrong field {wrong}, a value where none goes {others}")


if __name__ == "__main__":
    main()
