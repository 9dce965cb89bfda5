"""Signature lines in suggestions: the library's, the user's own mail's, or made up by the model.

At every line start and sentence end of the personas' new emails (bench/data/personas: the dev or
the frozen test split of ``split.json``), the editor's own request (``Settings().suggestion_request``
on the body framing) is run to its end, for three stores:

  library            the persona's day-one library (profiles.json: name, role, company or website, ...)
  library, no name   the same without the name entry: a user who has not added their name yet
  learned            the library plus Tools -> Learn from my writing on their 16 sent emails

Each line of a suggestion in a signature block -- the lines after a sign-off line (a line of at most
three words ending in ",": "Kind regards,", "Cheers,"), up to the next blank line -- is sorted by
where it came from:

* chunk: it starts with a chunk, one of the user's library values or a phrase learned from their mail;
* the email's: the model wrote it, and it is the email's own line there (a name the kNN-LM of the
  user's mail gave back, say);
* not the email's: the model wrote it, and the email says something else: a name it made up
  ("Best,\\nAlex"), or a line of the user's own that does not belong in this email (the work
  signature under "Love,");

and a suggestion that stopped before a line only the user can write (Decoder.own_line_ahead:
``stats.withheld`` is a kind of value, not the shape of an invented number) is counted as *stopped*,
in a signature block or not (after "Thanks in advance for your help.\n" too).

    python bench/signatures.py --split dev -v
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine, table  # noqa: E402
from bench.keystrokes import PERSONAS, body_prompt, emails, learned_engine  # noqa: E402
from chunkwise.core import ChunkStore, Engine  # noqa: E402
from chunkwise.core.settings import Settings  # noqa: E402

PLACES = re.compile(r"[.!?,]\n|[.!?] |\n\n")     # where a person pauses: a line or a sentence ends
# "Kind regards,", "Cheers," (at most three words, checked below), not a greeting ("Hi Oskar,").
SIGN_OFF = re.compile(r"^(?!(?:Hi|Hello|Hey|Dear|Morning|Afternoon|Evening)\b)[A-Z][^\n,]{0,30},$")
SHAPES = {"phone", "email", "web", "address"}       # core/details.py shapes: invented numbers, not signature lines


def signature_lines(before: str, pieces, email: str) -> list[tuple[str, str]]:
    """(verdict, line) for each line of the suggestion (*pieces* after *before*) below a sign-off line."""
    text = before + "".join(p.text for p in pieces)
    source = [None] * len(before)
    for p in pieces:
        source += [p.source] * len(p.text)
    out, start, block, judged = [], 0, False, False
    for line in text.split("\n"):
        end = start + len(line)
        if not line.strip():
            block = block and not judged             # blank lines between the sign-off and the name, not after it
        elif block:
            judged = True
            if end > len(before):                    # a line (or the rest of one) the suggestion wrote
                own = source[max(start, len(before)):end]
                if own and own[0] == "chunk":
                    out.append(("chunk", line))
                elif email[start:end] == line and email[end:end + 1] in ("", "\n"):
                    out.append(("the email's", line))
                else:
                    out.append(("not the email's", line))
        elif SIGN_OFF.match(line.strip()) and len(line.split()) <= 3:
            block, judged = True, False
        start = end + 1
    return out


def no_name_engine(tmp: Path, persona: str, runtime) -> Engine:
    """The persona's day-one library without its name entry."""
    profiles = json.loads((PERSONAS / "profiles.json").read_text(encoding="utf-8"))
    engine = Engine(store=ChunkStore(tmp / f"{persona}-no-name.db"), n_threads=2, runtime=runtime)
    for field, entry in profiles[persona].items():
        if field != "name":
            engine.store.add_chunk(entry["value"], kind="pii", label=field.replace("_", " "), contexts=entry["contexts"])
    engine.refresh()
    return engine


def run(split: str, verbose: bool) -> list[list]:
    settings = Settings()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        runtime = None
        for config in ("library", "library, no name", "learned"):
            counts = {"places": 0, "chunk": 0, "the email's": 0, "not the email's": 0, "stopped": 0}
            for persona in ("mara", "teo"):
                engine = (no_name_engine(Path(tmp), persona, runtime) if config == "library, no name"
                          else learned_engine(Path(tmp), persona, runtime, learn=config == "learned"))
                runtime = engine.runtime
                for email in emails(persona, split):
                    for m in PLACES.finditer(email):
                        before = email[: m.end()]
                        prompt, lifted = body_prompt(before)
                        generation = engine.stream(settings.suggestion_request(prompt, lifted=lifted))
                        out = generation.completion()
                        counts["places"] += 1
                        found = signature_lines(prompt, generation.pieces, email)
                        for verdict, line in found:
                            counts[verdict] += 1
                        withheld = out.stats.withheld
                        if withheld and withheld not in SHAPES:
                            counts["stopped"] += 1
                        if verbose and (found or (withheld and withheld not in SHAPES)):
                            print(f"  {config} | {persona}: {before[-40:]!r} -> {out.text!r} {found} "
                                  f"{'(stopped before a ' + withheld + ')' if withheld else ''}", flush=True)
                engine.store.close()
            rows.append([config, counts["places"], counts["chunk"], counts["the email's"], counts["not the email's"],
                         counts["stopped"]])
        if runtime is not None:
            runtime.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    print(f"Machine: {machine()}\n")
    rows = run(args.split, args.verbose)
    print(f"\n### {args.split}: signature lines (below a sign-off) in the editor's suggestions\n")
    print(table(["store", "places asked", "a chunk (library or learned)", "the model's, the email's line",
                 "the model's, not the email's", "stopped before one"], rows))


if __name__ == "__main__":
    main()
