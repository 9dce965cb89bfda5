"""Which values of each benchmark profile are of a kind the slot classifier does not know.

A personal value is "of its own kind" when the classifier reads its stored contexts, on average, under
half surely as any one field each (core/matching_state.py KNOWN_READING): it is then a field of its own,
brought only by the user's words for it (ChunkMatcher.named_alone).  For every profile the benches
store (bench/data/personal, bench/data/fields, the personas' day-one libraries, the paper's profile
with four contexts a field): how many entries it has and which are of their own kind.  The sets
that hold none take none of those paths.

    python bench/own_kinds.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine, table  # noqa: E402
from bench.personal import build_store  # noqa: E402
from chunkwise.core import ChunkStore, Engine  # noqa: E402
from chunkwise.core.matching_state import KNOWN_READING  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def profiles():
    """(set/user, {"fields": {field: {value, contexts}}}) for every profile the benches store."""
    for data in ("personal", "fields"):
        for user, profile in json.loads((ROOT / "bench/data" / data / "profiles.json").read_text()).items():
            yield f"{data}/{user}", profile
    for user, fields in json.loads((ROOT / "bench/data/personas/profiles.json").read_text()).items():
        if not user.startswith("_"):
            yield f"personas/{user}", {"fields": fields}
    paper = json.loads((ROOT / "tests/data/pii_profile_paper.json").read_text())
    yield "paper", {"fields": {f: {"value": e["value"], "contexts": e["contexts"][:4]}
                               for f, e in paper.items() if not f.startswith("_")}}


def main() -> None:
    import tempfile

    print(f"Machine: {machine()}\n")
    rows, runtime = [], None
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, profile) in enumerate(profiles()):
            field_of = build_store(Path(tmp) / f"{i}.db", profile)
            engine = Engine(store=ChunkStore(Path(tmp) / f"{i}.db"), n_threads=2, runtime=runtime)
            runtime = engine.runtime
            engine.refresh()
            m = engine.matcher
            own = [field_of[k] for k in field_of if m.of_own_kind(k)]
            rows.append([name, len(field_of), len(own), ", ".join(own) or "-"])
            print(" | ".join(map(str, rows[-1])), flush=True)
            engine.store.close()
    print(f"\nvalues of their own kind (each context read under {KNOWN_READING} as any one field, on average)\n")
    print(table(["profile", "entries", "of their own kind", "which"], rows))


if __name__ == "__main__":
    main()
