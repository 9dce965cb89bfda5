"""A user's snippets where a new paragraph starts: the closing line at the end, nothing mid-email.

bench/personal.py asks whether a snippet comes where it is asked for; this asks where it comes
unasked.  Each user library of bench/personal.py (three users, each with two snippets: an
availability sentence and a closing line) is stored as the user types it, and each paragraph
start of the personas' new emails of a split (bench/data/personas/split.json) is sent through the
editor's own framing and request settings (``body_prompt``, 24 tokens, greedy, chunks on at the
default threshold).  Places:

  closing   the last body paragraph or the sign-off block: the closing-line snippet may go there
  mid-email after the greeting or a body paragraph with more to come: no snippet goes there

Printed per split: snippets inserted at mid-email places (false), closing lines at closing
places, and any other snippet at a closing place (false).  ``--sweep`` repeats the dev run at
other shares of the type cut a snippet needs (``matching.SENTENCE_CUT``) and the snippet dev
positives of bench/personal.py with each, to show what raising that bar costs.

    python bench/paragraphs.py [--split dev|test|both] [--sweep 0.4 0.7 1.0]
    python bench/paragraphs.py --readings          # what the classifier reads there (dev)
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine, table  # noqa: E402
from bench.personal import DATA, PERSONAS, body_prompt, build_store, load_cases, paragraph_starts  # noqa: E402
from chunkwise.core import ChunkStore, Engine  # noqa: E402
from chunkwise.core import matching  # noqa: E402
from chunkwise.core.llama_runtime import LlamaRuntime  # noqa: E402
from chunkwise.core.paths import bundled_model_path  # noqa: E402
from chunkwise.core.settings import Settings  # noqa: E402


def places(split: str) -> list[tuple[str, str]]:
    """(text up to a paragraph start, "greeting" | "body" | "closing") for the split's emails: right
    after the greeting line, after a body paragraph with more to come, or where a closing line may go."""
    out = []
    for name in json.loads((PERSONAS / "split.json").read_text(encoding="utf-8"))[split]:
        starts = paragraph_starts((PERSONAS / name).read_text(encoding="utf-8"))
        # the last paragraph is the sign-off block: a closing line goes before it or before the one above it
        out += [(text, "closing" if k >= len(starts) - 2 else "greeting" if k == 0 else "body")
                for k, text in enumerate(starts)]
    return out


def user_engines(rt: LlamaRuntime):
    """(user, engine, chunk id -> field) for each user of bench/personal.py, the library stored as typed."""
    profiles = json.loads((DATA / "profiles.json").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        for user, profile in profiles.items():
            db = Path(tmp) / f"{user}.db"
            field_of = build_store(db, profile)
            engine = Engine(runtime=rt, store=ChunkStore(db))
            engine.refresh()
            try:
                yield user, engine, field_of
            finally:
                engine.store.close()


def run(rt: LlamaRuntime, split: str, with_positives: bool) -> Counter:
    settings, tally = Settings(), Counter()
    positives = [c for c in load_cases(split) if c["kind"] == "positive" and c["field"].startswith("snippet")]
    for user, engine, field_of in user_engines(rt):

        def first_snippet(text: str) -> str | None:
            rt.reset()
            out = engine.generate(settings.suggestion_request(body_prompt(text)), record_use=False)
            fields = [field_of.get(s.chunk_id) or "" for s in out.spans]
            return next((f for f in fields if f.startswith("snippet")), None)

        for text, where in places(split):
            got = first_snippet(text)
            closing = where == "closing"
            tally["closing places" if closing else "mid-email places"] += 1
            tally[f"places after the {where}"] += 1
            if got is None:
                continue
            if not closing:
                tally["snippet mid-email"] += 1
                tally[f"snippet after the {where}"] += 1
            elif got == "snippet_signoff_line":
                tally["closing line at a closing place"] += 1
            else:
                tally["other snippet at a closing place"] += 1
        for case in positives if with_positives else []:
            if case["user"] == user:
                tally["snippet positives"] += 1
                tally["snippet positives right"] += first_snippet(case["text"]) == case["field"]
    return tally


def readings(rt: LlamaRuntime, split: str) -> list[list]:
    """What the slot gate reads for each user's closing-line snippet at each kind of place: the
    type agreement ``typed_proposal`` compares with the cut (min-max over the split's places)."""
    from chunkwise.core.encoding import local_mean, local_rows

    rows = []
    for user, engine, field_of in user_engines(rt):
        closing = next(c for c, f in field_of.items() if f == "snippet_signoff_line")
        seen: dict[str, list[float]] = {}
        for text, where in places(split):
            text = body_prompt(text)
            rt.reset()
            tokens = rt.tokenize(text, add_special=True)
            out = rt.sync(tokens, last=local_rows(len(tokens)), hidden=True, copy=True)
            agreement = engine.matcher.type_agreement(out.hidden[-1], local_mean(out.hidden), text)
            seen.setdefault(where, []).append(agreement.get(closing, 0.0))
        rows.append([user, f"{engine.matcher.type_cutoff:.2f}"]
                    + [f"{min(seen[w]):.2f}-{max(seen[w]):.2f}" for w in ("greeting", "body", "closing")])
    return rows


def row(label: str, t: Counter) -> list:
    mid, closing = t["mid-email places"], t["closing places"]
    cells = [label, f"{t['snippet mid-email']}/{mid} ({100 * t['snippet mid-email'] / max(1, mid):.0f}%)",
             f"{t['snippet after the greeting']}/{t['places after the greeting']}",
             f"{t['snippet after the body']}/{t['places after the body']}",
             f"{t['closing line at a closing place']}/{closing}", f"{t['other snippet at a closing place']}/{closing}"]
    if t["snippet positives"]:
        cells.append(f"{t['snippet positives right']}/{t['snippet positives']}")
    return cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test", "both"), default="both")
    ap.add_argument("--sweep", nargs="*", type=float, default=None,
                    help="shares of the type cut a snippet needs (matching.SENTENCE_CUT), dev split")
    ap.add_argument("--readings", action="store_true",
                    help="the closing-line snippet's type agreement at each kind of place, per user")
    args = ap.parse_args()
    print(f"Machine: {machine()}\n")
    rt = LlamaRuntime(str(bundled_model_path()), n_threads=2)
    if args.readings:
        split = "dev" if args.split == "both" else args.split
        print(f"### {split} split: the closing-line snippet's type agreement (min-max over the places)\n")
        print(table(["user", "type cut", "right after the greeting", "after a body paragraph",
                     "at a closing place"], readings(rt, split)))
        return
    headers = ["", "snippet inserted mid-email", "of which after the greeting", "of which after a body paragraph",
               "closing line at a closing place", "other snippet at a closing place"]
    if args.sweep:
        rows, default = [], matching.SENTENCE_CUT
        for cut in args.sweep:
            matching.SENTENCE_CUT = cut
            rows.append(row(f"SENTENCE_CUT {cut:g}" + (" (default)" if cut == default else ""), run(rt, "dev", True)))
        matching.SENTENCE_CUT = default
        print("### dev split, by the share of the type cut a snippet needs\n")
        print(table(headers + ["snippet dev positives right (bench/personal.py)"], rows))
        return
    for split in (("dev", "test") if args.split == "both" else (args.split,)):
        print(f"### {split} split\n")
        print(table(headers, [row("editor defaults", run(rt, split, False))]) + "\n")


if __name__ == "__main__":
    main()
