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

from typing import Callable, Iterable, Sequence

SEPARATOR = -1


class NGramDrafter:
    """Longest-suffix n-gram lookup over documents plus the running text."""

    def __init__(self, n_max: int = 6, n_min: int = 2):
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

    def order(self, extra: Sequence[int] = ()) -> int:
        """The length of the longest suffix match a draft would come from (0: no draft).

        Longer matches are right more often (copied or quoted text), so the
        draft policy keeps its acceptance estimate per order.
        """
        tail = (self._run + list(extra))[-self.n_max:]
        for n in range(min(self.n_max, len(tail)), self.n_min - 1, -1):
            gram = tuple(tail[-n:])
            for seq, index in ((self._run, self._run_index), (self._docs, self._doc_index)):
                pos = index.get(gram)
                if pos is not None and pos < len(seq) and seq[pos] != SEPARATOR:
                    return n
        return 0

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
    """How many tokens to draft: the length with the most expected tokens per unit of decode time.

    With per-token acceptance ``alpha`` (estimated from recent drafts of the
    same kind: n-gram order, or a chunk), a draft of k tokens yields
    1 + alpha + ... + alpha^k tokens for the price of one (k + 1)-token
    decode, ``cost(k + 1)`` single decodes.  Plain decoding yields one token
    per single decode; a draft is made only when it beats that by a margin,
    so misses cannot make decoding slower than plain beyond the occasional
    probe (a 1-token draft every ``probe_every`` idle steps, to notice when
    the text turns repetitive).  ``cap`` bounds the length (the build's exact
    batch size minus one keeps drafting lossless).

    >>> policy = DraftLength(cost=lambda n: 0.55 * n + 0.45, cap=8)
    >>> policy.alpha[6] = 0.95; policy.next(6) > 1
    True
    >>> policy.alpha[2] = 0.3; policy.next(2)
    0
    """

    MARGIN = 1.05
    # Before any evidence: a 6-token match is usually copied text, a 2-3-token one a common phrase.
    PRIORS = {6: 0.9, 5: 0.8, 4: 0.65, 3: 0.5, 2: 0.4, "chunk": 0.8}

    def __init__(self, cost: Callable[[int], float] | None = None, cap: int = 12, memory: float = 0.85,
                 probe_every: int = 32):
        self.cost = cost or (lambda n: 0.55 * n + 0.45)
        self.cap, self.memory, self.probe_every = max(0, cap), memory, probe_every
        self.alpha: dict = dict(self.PRIORS)
        self._idle = 0

    def best(self, kind=6) -> tuple[int, float]:
        """(k, expected tokens per single-decode time) of the best draft length; k = 0: no draft."""
        alpha = self.alpha.get(kind, 0.4)
        best_k, best_rate = 0, self.MARGIN
        total = term = 1.0
        for k in range(1, self.cap + 1):
            term *= alpha
            total += term
            rate = total / self.cost(k + 1)
            if rate > best_rate:
                best_k, best_rate = k, rate
        return best_k, best_rate

    def next(self, kind=6) -> int:
        k, _ = self.best(kind)
        if k == 0 and self.cap > 0:
            self._idle += 1
            if self._idle >= self.probe_every:
                self._idle = 0
                return 1
        return k

    def update(self, proposed: int, accepted: int, kind=6) -> None:
        """Learn from one checked draft: tokens are tried in order until the first miss."""
        if proposed == 0:
            return
        tried = accepted + (1 if accepted < proposed else 0)
        weight = self.memory ** tried
        self.alpha[kind] = weight * self.alpha.get(kind, 0.4) + (1 - weight) * (accepted / tried)
