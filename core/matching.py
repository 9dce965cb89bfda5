"""Chunk proposal: which stored chunk, if any, fits the text at this step.

The paper (section 4.2, Eq. 3) takes the hidden state that predicted the
newest token as query, confines candidates to that token's entry trie, and
maps the best cosine to an acceptance probability.  With a 135M model that
alone picks the right chunk on about half of the phrasings users really
type (docs/matching.md has the numbers), so matching here works in three
measured steps:

1. **Slot gate** -- is this a place where some stored chunk goes?  The query
   is the state *after* the newest token (it predicts the next one), whitened
   with the model's statistics of ordinary text; an HNSW index over the
   stored contexts' whitened vectors returns the nearest 32, and their best
   cosine ``s`` is the similarity the acceptance function sees.  No entry
   token filter: "call me at", "call me on" and "my number:" all lead into
   the same chunk.
2. **Chunk choice** -- which chunk?  Among the candidates, the one whose
   contexts agree best with the last few tokens (local vectors) plus the
   words of the current sentence (IDF-weighted overlap with the chunk's
   contexts and label: "email", "GitHub", "office").
3. **Acceptance** -- ``q = 0`` below eta, ``(s - eta) / (1 - eta)`` above
   (appendix D.4); greedy acceptance takes the chunk when ``q >= 0.5``.  Eta
   comes from a threshold on a calibrated 0..1 scale (:class:`Calibration`),
   so the same setting means the same across models and stores.

>>> Calibration(background=0.4, positive=0.7).raw_cutoff(0.5)
0.55
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from .encoding import BACKGROUND_FILE, ModelStats
from .index import VectorIndex
from .store import ChunkStore

CANDIDATES = 32          # nearest contexts fetched per step
LEXICAL_WEIGHT = 0.6     # weight of word overlap in the chunk choice
DEFAULT_THRESHOLD = 0.35  # on the calibrated scale; see docs/matching.md
_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?\n]\s")


def words(text: str) -> list[str]:
    """Lower-cased words with a crude plural strip ("emails" -> "email")."""
    out = []
    for w in _WORD_RE.findall(text.lower()):
        out.append(w[:-1] if len(w) > 3 and w.endswith("s") else w)
    return out


def current_sentence(text: str, limit: int = 300) -> str:
    tail = text[-limit:]
    ends = list(_SENTENCE_END.finditer(tail))
    return tail[ends[-1].end():] if ends else tail


@dataclass(frozen=True)
class Proposal:
    """A chunk proposed at one step, with its acceptance probability ``q``."""

    chunk_id: int
    kind: str
    label: str | None
    text: str
    tokens: tuple[int, ...]
    similarity: float   # slot gate: best cosine of whitened context vectors
    score: float        # similarity on the calibrated 0..1 scale
    q: float            # acceptance probability (appendix D.4)


@dataclass
class Calibration:
    """Maps raw similarities to a 0..1 scale that means the same across models.

    ``background``: how similar ordinary text positions get to the stored
    contexts (99.5th percentile of their best match).  ``positive``: how
    similar a chunk's own contexts are to each other (median of each
    context's best match among its siblings).  0 on the scale is the first,
    1 the second.
    """

    background: float
    positive: float

    def raw_cutoff(self, threshold: float) -> float:
        return round(self.background + threshold * (self.positive - self.background), 6)

    def to_scale(self, similarity: float) -> float:
        span = max(self.positive - self.background, 1e-6)
        return (similarity - self.background) / span

    def eta(self, threshold: float) -> float:
        """The paper's eta such that greedy acceptance (q >= 0.5) starts at the cutoff."""
        return 2.0 * self.raw_cutoff(threshold) - 1.0


def acceptance(similarity: float, eta: float) -> float:
    """Appendix D.4: q = 0 below eta, (s - eta) / (1 - eta) above."""
    if similarity < eta:
        return 0.0
    return min(1.0, (similarity - eta) / max(1.0 - eta, 1e-6))


class _Lexicon:
    """IDF weights from the background text; word sets per chunk."""

    def __init__(self) -> None:
        text = BACKGROUND_FILE.read_text(encoding="utf-8") if BACKGROUND_FILE.exists() else ""
        docs = [set(words(p)) for p in text.split("\n\n") if p.strip()]
        df = Counter(w for d in docs for w in d)
        self._n = len(docs)
        self._df = df

    def idf(self, word: str) -> float:
        return math.log((self._n + 1) / (self._df.get(word, 0) + 0.5))

    def overlap(self, query: set[str], chunk_words: set[str]) -> float:
        total = sum(self.idf(w) for w in query)
        if total <= 0:
            return 0.0
        return sum(self.idf(w) for w in query & chunk_words) / total


class ChunkMatcher:
    """In-memory matching state for one model: index, local vectors, words."""

    def __init__(self, stats: ModelStats, threshold: float = DEFAULT_THRESHOLD):
        self.stats = stats
        self.dim = stats.mean.shape[0]
        self.threshold = threshold
        self.index = VectorIndex(self.dim)
        self.lexicon = _Lexicon()
        self.calibration = Calibration(background=0.4, positive=0.7)
        self._row_of: dict[int, int] = {}          # label -> row in the arrays below
        self._chunk_of = np.empty(0, dtype=np.int64)
        self._local = np.empty((0, self.dim), dtype=np.float16)
        self._chunks: dict[int, dict] = {}          # chunk id -> kind, label, text, words, tokens

    def __len__(self) -> int:
        return len(self.index)

    # ------------------------------------------------------------ loading

    def load(self, store: ChunkStore, model_id: int, model_identity: str, index_path=None,
             progress: Callable[[int, int], None] | None = None) -> str:
        """Build the in-memory state from the store; returns the index status."""
        rows = store.valid_encodings(model_id)
        labels = [r.label for r in rows]
        wanted = {r.label: r.source_hash for r in rows}

        def fetch(part: Sequence[int]) -> np.ndarray:
            return self.stats.transform(store.encoding_vectors(part, "vector"))

        self.index, status = VectorIndex.load_or_build(index_path, model_identity, self.dim, wanted, fetch,
                                                       progress)
        if index_path is not None and status != "loaded":
            self.index.save(index_path, model_identity)
        self._row_of = {lab: i for i, lab in enumerate(labels)}
        self._chunk_of = np.asarray([r.chunk_id for r in rows], dtype=np.int64)
        local = store.encoding_vectors(labels, "vector_local") if labels else np.empty((0, self.dim))
        self._local = self.stats.transform(local).astype(np.float16) if labels else np.empty((0, self.dim), np.float16)
        self._tokens = {r.label: r.chunk_tokens for r in rows}
        self._chunks = {}
        for chunk in store.list_chunks(ids=sorted(set(self._chunk_of.tolist()))) if labels else []:
            bag = set(words(" ".join(c.text for c in chunk.contexts) + " " + (chunk.label or "")))
            self._chunks[chunk.id] = {"kind": chunk.kind, "label": chunk.label, "text": chunk.text, "words": bag}
        self.calibration = self._calibrate()
        return status

    def _calibrate(self) -> Calibration:
        n = len(self.index)
        if n == 0:
            return Calibration(background=0.4, positive=0.7)
        bg = self.stats.background[:1000]
        best = np.array([self.index.query(v, k=1)[1][0] for v in bg])
        background = float(np.quantile(best, 0.995))
        sims = []
        rng = np.random.default_rng(0)
        labels = np.fromiter(self._row_of.keys(), dtype=np.int64)
        for lab in rng.permutation(labels)[:500]:
            row = self._row_of[int(lab)]
            chunk = self._chunk_of[row]
            if (self._chunk_of == chunk).sum() < 2:
                continue
            vec = self.index._index.get_items([int(lab)])[0]
            found, s = self.index.query(np.asarray(vec, dtype=np.float32), k=min(16, n))
            same = [float(x) for l, x in zip(found.tolist(), s.tolist())
                    if l != lab and self._chunk_of[self._row_of[l]] == chunk]
            if same:
                sims.append(max(same))
        positive = float(np.median(sims)) if sims else background + 0.25
        positive = max(positive, background + 0.05)
        return Calibration(background=background, positive=positive)

    # ------------------------------------------------------------ proposing

    @property
    def eta(self) -> float:
        return self.calibration.eta(self.threshold)

    def propose(self, hidden: np.ndarray, hidden_local: np.ndarray, text: str,
                exclude: Iterable[int] = ()) -> Proposal | None:
        """The best chunk for the state after the newest token, or None.

        *hidden*: (d,) state after the newest token; *hidden_local*: (d,)
        mean of the last few states; *text*: the text so far (for words and
        to skip chunks already written there).
        """
        if len(self.index) == 0:
            return None
        query = self.stats.transform(np.stack([hidden, hidden_local]))   # (2, d)
        labels, sims = self.index.query(query[0], k=CANDIDATES)
        if sims.size == 0:
            return None
        gate = float(sims[0])
        q = acceptance(gate, self.eta)
        if q <= 0.0:
            return None
        rows = np.fromiter((self._row_of[int(l)] for l in labels), dtype=np.int64, count=len(labels))
        local = self._local[rows].astype(np.float32) @ query[1]               # (k,)
        sentence = set(words(current_sentence(text)))
        skip = set(exclude)
        recent = text[-2000:]
        best, best_score = None, -np.inf
        for i, row in enumerate(rows.tolist()):
            chunk_id = int(self._chunk_of[row])
            if chunk_id in skip:
                continue
            info = self._chunks[chunk_id]
            if info["text"] in recent:
                skip.add(chunk_id)
                continue
            score = float(local[i]) + LEXICAL_WEIGHT * self.lexicon.overlap(sentence, info["words"])
            if score > best_score:
                best, best_score = (i, chunk_id, int(labels[i])), score
        if best is None:
            return None
        i, chunk_id, label = best
        info = self._chunks[chunk_id]
        return Proposal(chunk_id=chunk_id, kind=info["kind"], label=info["label"], text=info["text"],
                        tokens=self._tokens[label], similarity=gate,
                        score=self.calibration.to_scale(gate), q=q)
