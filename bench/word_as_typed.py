"""Why decoding.WORD_AS_TYPED: how much likelier the model finds a typed word as it stands than lengthened.

At a pause right after a whole word and at a pause two letters into an unfinished one (the personas'
dev emails, alternate words, after the first line), token healing (core/healing.py) takes the typed
letters back; here the model (no store) is read once before them.  For each place: the log-probability
of the tokenizer's own first token of the letters minus that of the likeliest token that begins with
all of them.  Printed: for each bias added to the first (the word as typed), how many whole words would
be lengthened and how many unfinished ones would keep the tokenizer's cut at this first step (the
unfinished ones whose own token is only a first part of the letters are spelled on after it, so not
all of those are wrong).

    python bench/word_as_typed.py
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.common import OUT, machine, table  # noqa: E402
from bench.keystrokes import emails  # noqa: E402
from chunkwise.core import ChunkStore, Engine  # noqa: E402
from chunkwise.core.healing import unfinished_word, vocabulary  # noqa: E402

WORD = re.compile(r"[^\W\d_]{2,}")


def gap(rt, prompt: str) -> float | None:
    tokens = rt.tokenize(prompt, add_special=True)
    n = unfinished_word(tokens, prompt, rt.piece)
    if not n:
        return None
    typed = b"".join(rt.piece(t) for t in tokens[-n:])
    own = tokens[-n]
    longer = [i for i in vocabulary(rt).beginning_with(typed).tolist() if i != own]
    if not longer:
        return None
    logits = np.array(rt.sync(tokens[:-n], last=1, hidden=False).logits[-1], np.float64)
    return float(logits[own] - logits[longer].max())        # the same as the log-probability difference


def main() -> None:
    engine = Engine(store=ChunkStore(":memory:"), n_threads=2)
    rt = engine.runtime
    whole, unfinished = [], []
    for persona in ("mara", "teo"):
        for email in emails(persona, "dev"):
            for k, m in enumerate(WORD.finditer(email, email.find("\n") + 1)):
                if k % 2 == 0 and (g := gap(rt, email[:m.end()])) is not None:
                    whole.append(g)
                if k % 2 == 1 and len(m.group()) >= 5 and (g := gap(rt, email[:m.start() + 2])) is not None:
                    unfinished.append(g)
    w, u = np.array(whole), np.array(unfinished)
    rows = [[f"{b:.1f}", f"{int((w < -b).sum())} of {len(w)}", f"{int((u > -b).sum())} of {len(u)}"]
            for b in (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)]
    text = (f"# python bench/word_as_typed.py\n{machine()}\n\n" +
            table(["log-odds for the word as typed", "whole words lengthened", "unfinished words kept as cut"], rows))
    print(text)
    (OUT / "word_as_typed.txt").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
