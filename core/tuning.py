"""The similarity threshold as users weigh it: right insertions against wrong and misplaced ones.

>>> result = tune_insertions(engine, [my_sent_email_text])          # doctest: +SKIP
>>> result.threshold, result.extreme                                # doctest: +SKIP
(0.2, False)

Perplexity alone rewards inserting (the paper tunes eta so; ``tune_threshold`` below
still does, for the command line): from one email it chose 0.00, and a meeting time then
got the user's phone number.  Here each threshold of a grid is tried with the real decoder
(the editor's gates included) at

* positives: every place in the user's own text where they wrote one of their library's
  values (right = that chunk inserted there; wrong = another of their values), and
* negatives: the places in core/data/tune_negatives.json (someone else's detail, a time, a
  place, a help desk, ordinary prose) plus sentence ends of the user's text where no value
  follows (false = any of their values inserted),

and the score is ``right - WRONG_COST * (wrong + false)``: a wrong detail is worse than
none.  The best plateau's middle is chosen; a value at either end of the grid is flagged
``extreme`` so the editor asks before using it.

:func:`insertion_places` is the settings plot's view: which phrases of a draft would take
which chunk, and up to which threshold.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .corpus import Document
from .distill import Miner
from .errors import Cancelled, ChunkwiseError
from .learning import corpus_knn_teacher
from .llama_runtime import LlamaRuntime
from .matching import ChunkMatcher, threshold_reaching
from .perplexity import report_for, score_text, text_positions
from .settings import Settings
from .store import ChunkStore

GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9)
THRESHOLD_GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7)     # perplexity tuning
GAMMA_GRID = (0.5, 0.7, 0.8, 0.9, 0.95)
WRONG_COST = 2.0
EXTREME = (0.05, 0.7)          # at or beyond these, the editor asks before using the value
MAX_OWN_NEGATIVES = 20
NEGATIVES_FILE = Path(__file__).resolve().parent / "data" / "tune_negatives.json"
_SENTENCE_END = re.compile(r"[.!?](?=\s)")

Progress = Callable[[int, int], None]


@dataclass
class TuneOutcome:
    threshold: float
    positives: int
    negatives: int
    grid: list[dict] = field(default_factory=list)   # {threshold, right, wrong, false, score}
    extreme: bool = False

    @property
    def best(self) -> dict:
        return next(g for g in self.grid if g["threshold"] == self.threshold)


def built_in_negatives() -> list[str]:
    return json.loads(NEGATIVES_FILE.read_text(encoding="utf-8"))["prompts"]


def _places(values: dict[int, str], texts: Sequence[str], built_in: Sequence[str]
            ) -> tuple[list[tuple[str, int]], list[str]]:
    """(prompt, chunk id) where the user wrote a library value; prompts where none follows."""
    from .feedback import typed_values

    values = {cid: v.strip() for cid, v in values.items()}
    positives, negatives = [], []
    for text in texts:
        for chunk_id, value in values.items():
            for found_id, _phrase, start in typed_values({chunk_id: value}, text, positions=True):
                positives.append((text[:start].rstrip(" "), found_id))
        for m in _SENTENCE_END.finditer(text):
            after = text[m.end():].lstrip()
            if not any(after.startswith(v) for v in values.values()) and len(negatives) < MAX_OWN_NEGATIVES:
                negatives.append(text[:m.end()])
    return positives, negatives + list(built_in)


def _first_value(engine, prompt: str, own: set[int]) -> int | None:
    """The first of the user's values the editor inserts after *prompt*, or None."""
    # The editor's own request (Settings.suggestion_request; default settings: greedy, chunks on, the kNN-LM
    # once learned), cut to 6 tokens on purpose: a value it inserts comes within the first words, and
    # tuning asks |grid| x places of them.
    request = Settings(max_tokens=6).suggestion_request(prompt, lifted=True)     # (a finished word before each place)
    out = engine.generate(request, record_use=False)
    return next((s.chunk_id for s in out.spans if s.chunk_id in own), None)


def tune_insertions(engine, texts: Sequence[str], grid: Sequence[float] = GRID, progress: Progress | None = None,
                    cancelled: Callable[[], bool] | None = None,
                    negatives: Sequence[str] | None = None) -> TuneOutcome:
    """The threshold that inserts the user's values where they wrote them and nowhere else.

    *negatives*: the built-in places where none of the user's values belongs (default:
    core/data/tune_negatives.json)."""
    texts = [t for t in texts if t and t.strip()]
    if not texts:
        raise ChunkwiseError("The text to tune on is empty.")
    from .feedback import library_values

    values = library_values(engine.store)
    own = set(values)
    if not own:
        raise ChunkwiseError("Your library has no details or snippets yet: there is nothing to tune.")
    positives, negatives = _places(values, texts, built_in_negatives() if negatives is None else negatives)
    if not positives:
        raise ChunkwiseError("None of your library's values (phone, address, snippets…) appear in this text. "
                             "Choose emails where you wrote some of them yourself.")
    saved, rows = engine.threshold, []
    total, done = len(grid) * (len(positives) + len(negatives)), 0

    def first_value(prompt: str) -> int | None:
        """One place read at one threshold; progress and a chance to cancel after each."""
        nonlocal done
        got = _first_value(engine, prompt, own)
        done += 1
        if progress:
            progress(done, total)
        if cancelled and cancelled():
            raise Cancelled("Tuning was cancelled; the threshold is unchanged.")
        return got

    try:
        for t in grid:
            engine.threshold = t
            right = wrong = false = 0
            for prompt, chunk_id in positives:
                got = first_value(prompt)
                right += got == chunk_id
                wrong += got is not None and got != chunk_id
            for prompt in negatives:
                false += first_value(prompt) is not None
            rows.append({"threshold": t, "right": right, "wrong": wrong, "false": false,
                         "score": right - WRONG_COST * (wrong + false)})
    finally:
        engine.threshold = saved
    top = max(r["score"] for r in rows)
    plateau = [r["threshold"] for r in rows if r["score"] == top]
    best = plateau[len(plateau) // 2]
    return TuneOutcome(best, len(positives), len(negatives), rows,
                       extreme=best <= EXTREME[0] or best >= EXTREME[1])


# ---------------------------------------------------------------- the settings plot


@dataclass(frozen=True)
class Place:
    """A word boundary of a draft where a chunk would be offered up to threshold ``reach``."""

    end: int            # character offset in the text where the chunk would start
    phrase: str         # the words leading into it
    chunk_id: int
    label: str
    reach: float


def insertion_places(engine, text: str, limit: int = 3000, progress: Progress | None = None,
                     cancelled: Callable[[], bool] | None = None) -> list[Place]:
    """For each word boundary of *text*: the chunk matching would offer there and the highest
    threshold at which it still would (typed details: the slot classifier's agreement, and how far
    it leads the best reading of another of the user's fields unless the user's lead-in words settle
    it, matching.threshold_reaching and ChunkMatcher.rival_of; other
    chunks: the calibrated match score).  The editor's place gates are not run here.
    *cancelled* is asked at each word: true raises :class:`Cancelled`."""
    from .text import lead_in

    matcher = engine.matcher_ready()
    if matcher is None or not text.strip():
        return []
    text = text[-limit:]
    rt = engine.runtime
    tokens = rt.tokenize(text, add_special=True)
    out = engine.runtime_states(tokens)                              # logits (n, V), hidden (n, d)
    word_ends = [i for i in range(2, len(tokens))                    # only where a new word begins (or the end)
                 if i + 1 == len(tokens) or rt.detokenize(tokens[i + 1:i + 2])[:1].isspace()]
    places = []
    for p in text_positions(rt, tokens, out.hidden, np.argmax(out.logits, axis=1), word_ends):
        if cancelled and cancelled():
            raise Cancelled("The threshold profile was cancelled.")
        if progress:
            progress(p.at, len(tokens))
        so_far = p.text                  # from the first token: a BOS, where the model adds one, spells nothing
        best = None
        readings = matcher.labelled(matcher.type_agreement(p.hidden, p.local, so_far), so_far)
        for chunk_id, agreement in readings.items():
            if matcher.of_own_kind(chunk_id) and not matcher.named_alone(chunk_id, so_far):
                continue                  # decoding takes a value of a kind the classifier does not know only so
            reach = threshold_reaching(agreement, matcher.rival_of(chunk_id, readings, so_far))
            if best is None or reach > best[1]:
                best = (chunk_id, reach)
        if best is not None:             # of two values of that field, the one decoding would take
            best = (matcher.which_here(best[0], readings, so_far), best[1])
        for cand in matcher.candidates(p.hidden, p.local, so_far, last_token=p.last_token,
                                       model_choice=p.model_choice)[:1]:
            if matcher.is_typed(cand.chunk_id):
                continue
            reach = float(matcher.calibration.to_scale(cand.match))
            if best is None or reach > best[1]:
                best = (cand.chunk_id, reach)
        if best is not None and best[1] > 0:
            info = matcher.chunk_info(best[0])
            if info["text"] in so_far or text[len(so_far):].lstrip().startswith(info["text"]):
                continue                          # written there already: decoding would not offer it
            places.append(Place(len(so_far), lead_in(so_far)[-40:], best[0],
                                info["label"] or info["text"][:30], round(min(best[1], 1.0), 3)))
    return places


# ---------------------------------------------------------------- by perplexity (the paper's way; the command line's `tune`)


@dataclass
class TuneResult:
    threshold: float
    gamma: float | None
    base: float
    best: float
    grid: list[dict] = field(default_factory=list)   # {gamma, threshold, cdlm, chunks}


def tune_threshold(engine, text: str, thresholds: Sequence[float] = THRESHOLD_GRID) -> TuneResult:
    """The threshold whose CD-LM perplexity on the user's held-out *text* is lowest (the paper tunes eta so)."""
    matcher = engine.matcher_ready()
    if matcher is None:
        raise ChunkwiseError("The chunk store is empty: there is no threshold to tune.")
    p = score_text(engine, text, knn=False)
    grid = [{"gamma": None, "threshold": t, "cdlm": report_for(engine, p, matcher.at_threshold(t)).cdlm}
            for t in thresholds]
    best = min(grid, key=lambda g: g["cdlm"])
    return TuneResult(best["threshold"], None, report_for(engine, p, None).base, best["cdlm"], grid)


def tune_gamma(engine, corpus: Sequence[Document], text: str, gammas: Sequence[float] = GAMMA_GRID,
               thresholds: Sequence[float] = THRESHOLD_GRID, teacher: LlamaRuntime | None = None,
               progress: Progress | None = None, corpus_teacher: bool = False) -> TuneResult:
    """Gamma and threshold together: one pass over *corpus*, chunks cut at each gamma into a
    scratch store, CD-LM perplexity of held-out *text* for each threshold.  The user's store is
    not touched."""
    ct = corpus_knn_teacher(engine) if corpus_teacher else None
    miner = Miner(engine.runtime, max(gammas), teacher, ct)
    passes = miner.score_all(corpus, progress)
    if not passes:
        raise ChunkwiseError("No corpus document is long enough to mine.")
    p = score_text(engine, text, knn=False)
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
                         "cdlm": report_for(engine, p, matcher if len(matcher) else None).cdlm})
        scratch.close()
    best = min(grid, key=lambda g: g["cdlm"])
    return TuneResult(best["threshold"], best["gamma"], report_for(engine, p, None).base, best["cdlm"], grid)
