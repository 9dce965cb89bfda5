"""Sequence probability under CD-LM (paper section 5, appendix A) and perplexity.

CD-LM writes each position either with the model (z = 0) or by accepting
the proposed chunk (z = 1, probability q).  Marginalising over all z paths
is a backward dynamic program over positions n = N .. 2::

    M(n)    = q_n alpha_n + (1 - q_n) beta_n          M(N + 1) = 1
    beta_n  = p(x_n | x_<n) M(n + 1)
    alpha_n = 1{x_n .. x_{n+tau-1} = c_n} M(n + tau)   (cut at N when the chunk runs past it)
    p(x_1..N) = p(x_1) M(2)

computed in log space so long texts do not underflow.  :func:`perplexity_of` applies it to
a text under the engine's store (and kNN-LM): the command line's ``ppl``.

>>> p = np.log([1.0, .3, .3, .3, .3, .3])         # BOS, then A B C D E at 0.3 each
>>> tokens = [0, 1, 2, 3, 4, 5]
>>> proposals = {2: ((2, 3), .5), 3: ((3, 4), .5)}   # after A: "B C"; after B: "C D"
>>> round(math.exp(cdlm_log_prob(p, tokens, proposals, first=1)), 7)
0.0208575

(The paper's appendix B lists 0.0276075 for this example; its third path
leaves out the (1 - q) = 0.5 for B written by the model while "B C" was on
offer.  tests/test_perplexity.py checks the program against brute-force
path enumeration and shows that every distribution sums to one.)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, NamedTuple, Sequence

import numpy as np

from .corpus import Document
from .errors import ChunkwiseError
from .scoring import document_tokens, score

NEG_INF = -math.inf


def _log(x: float) -> float:
    return math.log(x) if x > 0 else NEG_INF


def cdlm_log_prob(logp: Sequence[float], tokens: Sequence[int],
                  proposals: Mapping[int, tuple[Sequence[int], float]], first: int) -> float:
    """log p(tokens[first:]) under CD-LM, given the prefix tokens[:first].

    *logp* (N + 1,): log p_theta(tokens[n] | tokens[:n]); *proposals*: position
    n -> (chunk tokens c_n, acceptance probability q_n), proposed from
    tokens[:n]; positions without one have q = 0.  The first scored token
    is always the model's (z_1 is undefined: appendix A, footnote 7).
    """
    last = len(tokens) - 1
    if first > last:
        return 0.0
    m = [0.0] * (last + 2)                   # m[n] = log M(n); m[last + 1] = log 1
    for n in range(last, first, -1):
        log_beta = logp[n] + m[n + 1]
        chunk, q = proposals.get(n, ((), 0.0))
        if q <= 0.0 or not chunk:
            m[n] = log_beta
            continue
        span = min(len(chunk), last - n + 1)
        matches = list(tokens[n:n + span]) == list(chunk[:span])
        log_alpha = m[n + span] if matches else NEG_INF
        m[n] = np.logaddexp(_log(q) + log_alpha, _log(1.0 - q) + log_beta)
    return float(logp[first] + m[first + 1])


def base_log_prob(logp: Sequence[float], first: int) -> float:
    return float(np.sum(np.asarray(logp[first:], dtype=np.float64)))


def perplexity(log_prob: float, n_tokens: int) -> float:
    return math.exp(-log_prob / max(1, n_tokens))


@dataclass
class PerplexityReport:
    """Perplexities of one text; ``None`` where that mode was not asked."""

    tokens: int
    base: float
    cdlm: float
    knn: float | None = None
    cdlm_knn: float | None = None
    proposals: int = 0          # positions where a chunk was on offer
    matching: int = 0           # ... and the chunk is what the text says

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}


# ---------------------------------------------------------------- with a real model and store


class TextPosition(NamedTuple):
    """What the matcher is asked at one position of a text the model has read: the state after
    token ``at``, where a chunk starting at ``tokens[at + 1]`` would be proposed."""

    at: int
    text: str                  # the text up to and including token ``at`` (prefix_text first)
    hidden: np.ndarray         # (d,) the state after token ``at``
    local: np.ndarray          # (d,) local_mean of the states ending there
    last_token: int
    model_choice: int | None   # the model's likeliest next token there (None: not kept)


def text_positions(rt, tokens: Sequence[int], hidden: np.ndarray, choices: Sequence[int] | None,
                   at: Iterable[int], first: int = 0, prefix_text: str = "") -> Iterator[TextPosition]:
    """The matcher's inputs at positions *at* (ascending) of a text read in one pass: the one walk
    of "run the model over a text and ask the matcher at each position".

    *tokens* (n,); *hidden* (n, d), row i the state after token i; *choices* (n,), the
    model's likeliest token after token i.  The text and the local vectors start at token
    *first* (special tokens render as nothing); the text is what the bytes so far spell,
    an unfinished character left out.

    >>> [p.text for p in text_positions(rt, rt.tokenize("Hi Sam, thanks"), states, None, at=[0, 2])]  # doctest: +SKIP
    ['Hi', 'Hi Sam,']
    """
    from .encoding import local_mean     # here: the probability arithmetic above needs no model code

    written, read = b"", first
    for i in at:
        written += b"".join(rt.piece(t) for t in tokens[read:i + 1])
        read = i + 1
        yield TextPosition(i, prefix_text + written.decode("utf-8", errors="ignore"), hidden[i],
                           local_mean(hidden, i, first=first), tokens[i],
                           None if choices is None else int(choices[i]))


def text_proposals(matcher, rt, scored, prefix_text: str = "", continuation=None) -> dict[int, tuple[tuple[int, ...], float]]:
    """The chunk CD-LM would offer at each position of a scored text, from the prefix alone.

    *scored*: :class:`chunkwise.core.scoring.Scored` with hidden states (and top-1
    ids, the model's own choice at each position, for the agreement gate).  Proposals
    depend only on the text before each position (the paper's condition for
    the dynamic program), so already-used chunks are not excluded here --
    the matcher's own rule of not repeating text already written applies.
    *continuation*: optional ``(text_so_far, proposal) -> tokens``, how the
    decoder would tokenize the chunk after that text.
    """
    out: dict[int, tuple[tuple[int, ...], float]] = {}
    if matcher is None or len(matcher) == 0:
        return out
    # topk_ids[n] predicts token n: the choice after token n - 1
    choices = scored.topk_ids[1:, 0] if scored.topk_ids is not None else None
    for p in text_positions(rt, scored.tokens, scored.hidden, choices, range(scored.first, len(scored.tokens) - 1),
                            first=scored.first, prefix_text=prefix_text):
        n = p.at + 1                                  # the position a proposal would fill
        proposal = matcher.propose(p.hidden, p.local, p.text, greedy=False,
                                   last_token=p.last_token, model_choice=p.model_choice)
        if proposal is None or proposal.q <= 0:
            continue
        chunk = tuple(proposal.tokens)
        want = tuple(scored.tokens[n:n + len(chunk)])
        if continuation is not None and chunk[:len(want)] != want:
            alt = tuple(continuation(p.text, proposal))
            if alt[:len(want)] == want:
                chunk = alt
        out[n] = (chunk, proposal.q)
    return out


# ---------------------------------------------------------------- a text under the engine


@dataclass
class ScoredText:
    """One scored text, reusable across thresholds."""

    tokens: list[int]
    first: int
    scored: object
    knn_logp: np.ndarray | None = None


def score_text(engine, text: str, knn: bool) -> ScoredText:
    if not text.strip():
        raise ChunkwiseError("The text to score is empty.")
    rt = engine.runtime
    tokens, first = document_tokens(rt, Document("text", text))
    first = max(first, 1)        # without BOS the very first token has nothing to be scored from
    if len(tokens) - first < 2:
        raise ChunkwiseError("The text to score needs at least two tokens.")
    knn_logp = np.full(len(tokens), np.nan) if knn else None
    model = engine.knn if knn else None

    def mix_rows(positions, log_probs, hidden):
        for pos, lp, h in zip(positions, log_probs, hidden):
            knn_logp[pos] = math.log(max(model.distribution(np.exp(lp), h)[tokens[pos]], 1e-300))

    scored = score(rt, tokens, first, hidden=True, topk=1, on_rows=mix_rows if knn else None)
    return ScoredText(tokens, first, scored, knn_logp)


def _continuation(engine):
    """How the decoder tokenizes a proposal after the text so far (Encoder.continuation)."""
    from .encoding import Encoder

    encoder = Encoder(engine.runtime)
    return lambda text, proposal: encoder.continuation(text, proposal.text, proposal.tokens)


def report_for(engine, p: ScoredText, matcher) -> PerplexityReport:
    sc, first = p.scored, p.first
    n = len(p.tokens) - first
    proposals = text_proposals(matcher, engine.runtime, sc, continuation=_continuation(engine)) if matcher else {}
    matching = sum(1 for pos, (chunk, _q) in proposals.items()
                   if list(p.tokens[pos:pos + len(chunk)]) == list(chunk[:len(p.tokens) - pos]))
    out = PerplexityReport(tokens=n, base=perplexity(base_log_prob(sc.logprob, first), n),
                           cdlm=perplexity(cdlm_log_prob(sc.logprob, p.tokens, proposals, first), n),
                           proposals=len(proposals), matching=matching)
    if p.knn_logp is not None:
        out.knn = perplexity(base_log_prob(p.knn_logp, first), n)
        out.cdlm_knn = perplexity(cdlm_log_prob(p.knn_logp, p.tokens, proposals, first), n)
    return out


def perplexity_of(engine, text: str, knn: bool = False) -> PerplexityReport:
    """Perplexity of *text* under the base model and under CD-LM with the engine's store (and kNN-LM)."""
    return report_for(engine, score_text(engine, text, knn), engine.matcher_ready())
