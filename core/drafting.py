"""N-gram drafts for lossless speculative decoding (the n-gram autocomplete paper, Algorithm 1).

An n-gram model over the prompt (which holds the email being replied to), the
text generated so far and the user's chunk texts proposes how the text goes on;
the model checks all proposed tokens in one batched decode and keeps the
longest prefix that matches its own choices (see ``decoding.Decoder.verify``).
Output is what plain decoding gives: drafts only decide which positions are
computed together.

>>> d = NGramDrafter(); d.add_document([1, 2, 3, 4, 5]); d.start([9, 2])
>>> d.draft(k=2, extra=[3])
[4, 5]
"""
from __future__ import annotations

from typing import Iterable, Sequence

SEPARATOR = -1


class NGramDrafter:
    """Longest-suffix n-gram lookup over documents plus the running text."""

    def __init__(self, n_max: int = 4, n_min: int = 2):
        self.n_max, self.n_min = n_max, n_min
        self._docs: list[int] = []            # fixed documents (chunk texts), separated
        self._doc_index: dict[tuple, int] = {}
        self._run: list[int] = []             # the prompt and what has been generated
        self._run_index: dict[tuple, int] = {}

    # ------------------------------------------------------------ building

    def add_document(self, tokens: Sequence[int]) -> None:
        start = len(self._docs)
        self._docs.extend(tokens)
        self._docs.append(SEPARATOR)
        self._index(self._docs, self._doc_index, start)

    def fork(self) -> "NGramDrafter":
        """A drafter for one generation, sharing this one's documents (read-only)."""
        other = NGramDrafter(self.n_max, self.n_min)
        other._docs, other._doc_index = self._docs, self._doc_index
        return other

    def start(self, tokens: Sequence[int]) -> None:
        """Begin a generation: the running text is the prompt."""
        self._run = list(tokens)
        self._run_index = {}
        self._index(self._run, self._run_index, 0)

    def extend(self, tokens: Iterable[int]) -> None:
        start = len(self._run)
        self._run.extend(tokens)
        self._index(self._run, self._run_index, max(0, start - self.n_max + 1))

    def _index(self, seq: list[int], index: dict, start: int) -> None:
        """Map every n-gram (n_min..n_max) to the position after its latest occurrence."""
        for end in range(max(start, 1), len(seq) + 1):
            for n in range(self.n_min, self.n_max + 1):
                if end - n < 0:
                    break
                gram = tuple(seq[end - n:end])
                if SEPARATOR in gram:
                    break
                index[gram] = end

    # ------------------------------------------------------------ proposing

    def draft(self, k: int, extra: Sequence[int] = ()) -> list[int]:
        """Up to *k* tokens that followed the longest earlier match of the text's suffix.

        *extra*: tokens chosen but not yet added (the pending token).
        """
        if k <= 0:
            return []
        tail = (self._run + list(extra))[-self.n_max:]
        for n in range(min(self.n_max, len(tail)), self.n_min - 1, -1):
            gram = tuple(tail[-n:])
            # the running text first (recent, same document), then the chunk texts
            for seq, index in ((self._run, self._run_index), (self._docs, self._doc_index)):
                pos = index.get(gram)
                if pos is None:
                    continue
                out = []                       # (the text's own suffix has nothing after it yet)
                for tok in seq[pos:pos + k]:
                    if tok == SEPARATOR:
                        break
                    out.append(tok)
                if out:
                    return out
        return []


class DraftLength:
    """Adapts how many tokens to draft to recent acceptance.

    A rejected draft costs a wider batch for nothing (here a 5-token decode
    takes about 3x a 1-token one), so the length grows while drafts are taken
    and shrinks, down to not drafting for a while, when they are not.
    """

    def __init__(self, start: int = 4, lo: int = 1, hi: int = 12):
        self.k, self.lo, self.hi = start, lo, hi
        self.cooldown = 0

    def next(self) -> int:
        if self.cooldown > 0:
            self.cooldown -= 1
            return 0
        return self.k

    def update(self, proposed: int, accepted: int) -> None:
        if proposed == 0:
            return
        if accepted == proposed:
            self.k = min(self.hi, self.k + 2)
        elif accepted * 2 < proposed:
            self.k = max(self.lo, self.k // 2)
            if accepted == 0:
                self.cooldown = 2
