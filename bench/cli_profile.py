"""Personal details through ``chunkwise generate``, as issue 10 measured them: the paper's profile, 24 tokens.

Issue 10's held-out check stored the CD-LM paper's kind of profile (name, phone, email, address,
website, GitHub, four contexts each) and continued each phrasing for 24 tokens through
``chunkwise generate``: no editor framing, no stop at a blank line, no natural end.  This replays
that path with the CLI's own request (``core/cli.py`` ``generation_request``, the arguments
``generate TEXT --max-tokens 24``) on the paper's profile (``tests/data/pii_profile_paper.json``,
the first four contexts of each field, as ``tests/test_slots.py`` stores it) and an empty learned
store, and judges each case as ``bench/personal.py`` does.

Cases (``bench/data/paper/cases.json``): written by a helper who saw no project data, for a user
who writes both as himself and for his small business ("our", "we"); frozen before the first run
and never tuned on.  A second set (``bench/data/paper/dev_cases.json``, ``--cases dev``) was written
later the same way, by a helper who saw no project code or data, to tune on: 120 positives (20 a
field), 45 hard negatives, 30 neutral openings.

    python bench/cli_profile.py              # the frozen set; -v prints each case and its continuation
    python bench/cli_profile.py --cases dev  # the set to tune on
    python bench/cli_profile.py --cases dev --readings   # what the gates read at each case, no generation
    python bench/cli_profile.py --cases fresh  # a third set, written after everything above was tuned

Each set is also reported for the cases whose last line is near no text the product was trained or
tuned on, nor any other set's (:func:`near_seen`): a set's easy openings ("Best regards,") are often in
the slot classifier's own corpus, and the hidden sets that judge issue 10 need not share them.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import last_line_words, machine, near_line  # noqa: E402
from bench.personal import case_line, judge, report, suggest, summarise  # noqa: E402
from chunkwise.core import ChunkStore, Engine  # noqa: E402
from chunkwise.core.cli import build_parser, generation_request  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CASES = {"frozen": ROOT / "bench" / "data" / "paper" / "cases.json",
         "dev": ROOT / "bench" / "data" / "paper" / "dev_cases.json",
         # A third set (2026-11-27), by a helper that read no file of the project; frozen and run once.
         "fresh": ROOT / "bench" / "data" / "paper" / "fresh_cases.json"}
PROFILE = ROOT / "tests" / "data" / "pii_profile_paper.json"
FIELDS = ("name", "phone", "email", "address", "website", "github")


def evaluate(verbose: bool = False, which: str = "frozen") -> list[dict]:
    profile = json.loads(PROFILE.read_text(encoding="utf-8"))
    cases = json.loads(CASES[which].read_text(encoding="utf-8"))["cases"]
    engine = Engine(store=ChunkStore(":memory:"), n_threads=2)
    field_of = {engine.store.add_chunk(profile[f]["value"], "pii", profile[f]["contexts"][:4], label=f): f
                for f in FIELDS}
    engine.refresh()
    verdicts = []
    try:
        for case in cases:
            args = build_parser().parse_args(["generate", case["text"], "--max-tokens", "24"])
            result = suggest(engine, generation_request(args, case["text"]))
            v = judge(case, result, field_of)
            v.update(id=case["id"], out=result["text"])
            verdicts.append(v)
            if verbose:
                print(case_line(case, v, result["text"]), flush=True)
    finally:
        engine.store.close()
        engine.runtime.close()
    return verdicts


def seen_lines(leave_out: Path) -> list[tuple[tuple[str, ...], set[str], tuple[str, ...]]]:
    """The last lines of the strings the product was trained or tuned on, as :func:`bench.common.near_line`
    takes them: the slot classifier's corpus (core/data/slot_training*.json) and every JSON set of
    bench/data but *leave_out* (and bench/data/tried).  The persona mails (.txt) are left out: they are
    whole emails, not openings."""
    def strings(o):
        if isinstance(o, str):
            yield o
        elif isinstance(o, dict):
            for v in o.values():
                yield from strings(v)
        elif isinstance(o, list):
            for v in o:
                yield from strings(v)
    files = [*sorted((ROOT / "core" / "data").glob("slot_training*.json")),
             *(f for f in sorted((ROOT / "bench" / "data").rglob("*.json"))
               if "tried" not in f.relative_to(ROOT).parts and f != leave_out)]
    lines = set()
    for f in files:
        lines |= {last_line_words(t) for t in strings(json.loads(f.read_text(encoding="utf-8"))) if len(t) >= 6}
    return [(w, set(w), w) for w in lines if w]


def near_seen(text: str, seen) -> bool:
    """Whether *text*'s last line is near one of *seen* (:func:`seen_lines`; the rule: :func:`bench.common.near_line`)."""
    return near_line(text, seen) is not None


def readings(which: str) -> None:
    """For each case, what the gates read at the cursor (the draft read alone, as the CLI sends it):
    the slot classifier's four top classes and the writer probe's log-odds (core/whose.py)."""
    import numpy as np

    from chunkwise.core import whose
    from chunkwise.core.encoding import local_mean, local_rows
    from chunkwise.core.slots import features

    profile = json.loads(PROFILE.read_text(encoding="utf-8"))
    cases = json.loads(CASES[which].read_text(encoding="utf-8"))["cases"]
    engine = Engine(store=ChunkStore(":memory:"), n_threads=2)
    for f in FIELDS:
        engine.store.add_chunk(profile[f]["value"], "pii", profile[f]["contexts"][:4], label=f)
    engine.refresh()
    rt, m = engine.runtime, engine.matcher
    try:
        for case in cases:
            rt.reset()
            tokens = rt.tokenize(case["text"], add_special=True)
            out = rt.sync(tokens, last=local_rows(len(tokens)), hidden=True, copy=True)
            hidden, local = out.hidden[-1], local_mean(out.hidden)                    # (d,), (d,)
            probs = m.slots.predict(features(m.stats, hidden[None], local[None], [case["text"]]))[0]
            top = [(m.slots.classes[i], round(float(probs[i]), 2)) for i in np.argsort(-probs)[:4]]
            print(f"{case['id']} {case['kind'][:4]} {case.get('field')} top={top} "
                  f"probe={whose.writer_evidence(rt):.2f} | {case['text'][-60:]!r}", flush=True)
    finally:
        engine.store.close()
        engine.runtime.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--cases", choices=sorted(CASES), default="frozen",
                    help="frozen: the set never tuned on; dev: the set written to tune on")
    ap.add_argument("--readings", action="store_true",
                    help="print the classifier's top classes and the writer probe at each case instead")
    args = ap.parse_args()
    if args.readings:
        print(f"Machine: {machine()}")
        readings(args.cases)
        return
    verdicts = evaluate(args.verbose, args.cases)
    print(f"Machine: {machine()}")
    print(f"The paper's profile (four contexts a field), `chunkwise generate TEXT --max-tokens 24` for each case "
          f"of the {args.cases} set\n")
    print(report(f"paper profile, CLI, {args.cases}", summarise(verdicts)))
    # Every set, not only the fresh one: the hidden sets that judge issue 10 were written elsewhere, so the
    # cases least like any text the product has seen are the nearest thing here to them.
    seen = seen_lines(CASES[args.cases])
    cases = {c["id"]: c for c in json.loads(CASES[args.cases].read_text(encoding="utf-8"))["cases"]}
    unseen = [v for v in verdicts if not near_seen(cases[v["id"]]["text"], seen)]
    print(f"{len(verdicts) - len(unseen)} of {len(verdicts)} cases end in a line near one the product was "
          f"trained or tuned on (or of another set); the other {len(unseen)}:\n")
    print(report(f"paper profile, CLI, {args.cases}, near nothing seen", summarise(unseen)))


if __name__ == "__main__":
    main()
