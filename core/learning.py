"""Learning from the user's writing: mining, CD-LM perplexity, and tuning from held-out text.

>>> from core.learning import mine, perplexity_of           # doctest: +SKIP
>>> result = mine(engine, read_corpus(["~/Mail/sent.mbox"]), gamma=0.9)
>>> perplexity_of(engine, held_out_text).cdlm
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .corpus import Document
from .distill import DEFAULT_GAMMA, MAX_CONTEXTS_PER_CHUNK, Miner, MiningReport, document_tokens, score
from .errors import ChunkwiseError
from .llama_runtime import LlamaRuntime
from .matching import ChunkMatcher
from .perplexity import PerplexityReport, base_log_prob, cdlm_log_prob, perplexity, text_proposals
from .store import ChunkStore

THRESHOLD_GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7)
GAMMA_GRID = (0.5, 0.7, 0.8, 0.9, 0.95)
Progress = Callable[[int, int], None]


@dataclass
class MineResult:
    report: MiningReport
    kind: str
    new_chunks: int
    new_contexts: int
    knn_rows: int = 0
    teacher: str | None = None


def load_teacher(path: str | os.PathLike, n_ctx: int = 1024, n_threads: int | None = None) -> LlamaRuntime:
    """A second GGUF for KCD-LM; any failure is one clear message."""
    try:
        return LlamaRuntime(path, n_ctx=n_ctx, n_threads=n_threads)
    except ChunkwiseError as exc:
        raise ChunkwiseError(f"The teacher model could not be loaded: {exc}") from None


def _corpus_teacher(engine):
    """The kNN-LM of the other documents as mining teacher, with the paper's fixed lambda: the
    decode-time confidence gate (KnnSettings.gate) cut the chunks mined from the persona mail
    by a fifth (bench/keystrokes.py, dev split)."""
    from dataclasses import replace

    return engine.matcher.stats, replace(engine.knn_settings, gate=None).check()


def mine(engine, docs: Sequence[Document], gamma: float = DEFAULT_GAMMA, teacher: LlamaRuntime | None = None,
         kind: str | None = None, knn: bool = False, progress: Progress | None = None,
         cancelled: Callable[[], bool] | None = None, corpus_teacher: bool = False) -> MineResult:
    """Mine *docs* into the engine's store: all of it in one transaction, or nothing.

    *corpus_teacher*: the kNN-LM of the other documents is the teacher
    (engine.knn_settings), so phrases the user repeats become chunks.
    """
    kind = kind or ("teacher" if (teacher is not None or corpus_teacher) else "self")
    ct = _corpus_teacher(engine) if corpus_teacher else None
    report = Miner(engine.runtime, gamma, teacher, ct).mine(docs, progress, cancelled, knn=knn)
    if report.documents == 0:
        raise ChunkwiseError("No document is long enough to mine (each needs a few sentences); nothing was stored.")
    label = teacher.name if (teacher is not None and report.teacher_probs) else None
    new_chunks, new_contexts = engine.store.add_mined(engine.model_id, kind, report.chunks,
                                                      MAX_CONTEXTS_PER_CHUNK, report.knn_rows, label)
    engine.refresh()
    engine.forget_knn()
    if report.knn_rows:
        _ = engine.knn              # its graph built and kept now, in the learning job, not on a suggestion
    return MineResult(report, kind, new_chunks, new_contexts, len(report.knn_rows),
                      teacher.name if teacher is not None else ("corpus kNN-LM" if corpus_teacher else None))


# ---------------------------------------------------------------- perplexity


@dataclass
class _Pass:
    """One scored text, reusable across thresholds."""

    tokens: list[int]
    first: int
    scored: object
    knn_logp: np.ndarray | None = None


def _score_text(engine, text: str, knn: bool) -> _Pass:
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
    return _Pass(tokens, first, scored, knn_logp)


def _continuation(engine):
    """How the decoder tokenizes a proposal after the text so far (Encoder.continuation)."""
    from .encoding import Encoder

    encoder = Encoder(engine.runtime)
    return lambda text, proposal: encoder.continuation(text, proposal.text, proposal.tokens)


def _report(engine, p: _Pass, matcher: ChunkMatcher | None) -> PerplexityReport:
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


def _matcher(engine) -> ChunkMatcher | None:
    return engine.matcher_ready()


def perplexity_of(engine, text: str, knn: bool = False) -> PerplexityReport:
    """Perplexity of *text* under the base model and under CD-LM with the engine's store (and kNN-LM)."""
    return _report(engine, _score_text(engine, text, knn), _matcher(engine))


# ---------------------------------------------------------------- tuning


@dataclass
class TuneResult:
    threshold: float
    gamma: float | None
    base: float
    best: float
    grid: list[dict] = field(default_factory=list)   # {gamma, threshold, cdlm, chunks}


def tune_threshold(engine, text: str, thresholds: Sequence[float] = THRESHOLD_GRID) -> TuneResult:
    """The threshold whose CD-LM perplexity on the user's held-out *text* is lowest (the paper tunes eta so)."""
    matcher = _matcher(engine)
    if matcher is None:
        raise ChunkwiseError("The chunk store is empty: there is no threshold to tune.")
    p = _score_text(engine, text, knn=False)
    saved, grid = matcher.threshold, []
    try:
        for t in thresholds:
            matcher.threshold = t
            grid.append({"gamma": None, "threshold": t, "cdlm": _report(engine, p, matcher).cdlm})
    finally:
        matcher.threshold = saved
    best = min(grid, key=lambda g: g["cdlm"])
    return TuneResult(best["threshold"], None, _report(engine, p, None).base, best["cdlm"], grid)


def tune_gamma(engine, corpus: Sequence[Document], text: str, gammas: Sequence[float] = GAMMA_GRID,
               thresholds: Sequence[float] = THRESHOLD_GRID, teacher: LlamaRuntime | None = None,
               progress: Progress | None = None, corpus_teacher: bool = False) -> TuneResult:
    """Gamma and threshold together: one pass over *corpus*, chunks cut at each gamma into a
    scratch store, CD-LM perplexity of held-out *text* for each threshold.  The user's store is
    not touched."""
    ct = _corpus_teacher(engine) if corpus_teacher else None
    miner = Miner(engine.runtime, max(gammas), teacher, ct)
    passes = miner.score_all(corpus, progress)
    if not passes:
        raise ChunkwiseError("No corpus document is long enough to mine.")
    p = _score_text(engine, text, knn=False)
    stats, rt, grid = engine.matcher.stats, engine.runtime, []
    for gamma in gammas:
        report = miner.extract(passes, gamma)
        scratch = ChunkStore(":memory:")
        model_id = scratch.model_id(rt.identity, rt.name, rt.n_embd)
        scratch.add_mined(model_id, "teacher" if (teacher or corpus_teacher) else "self", report.chunks)
        matcher = ChunkMatcher(stats)
        matcher.load(scratch, model_id, rt.identity, None)
        for t in thresholds:
            matcher.threshold = t
            grid.append({"gamma": gamma, "threshold": t, "chunks": len(report.chunks),
                         "cdlm": _report(engine, p, matcher if len(matcher) else None).cdlm})
        scratch.close()
    best = min(grid, key=lambda g: g["cdlm"])
    return TuneResult(best["threshold"], best["gamma"], _report(engine, p, None).base, best["cdlm"], grid)
