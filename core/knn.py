"""kNN-LM over the user's writing, with stored teacher probabilities (PP-KD).

Datastore: one entry per token position of the mined corpus.  Key: the
working model's whitened state after the context (what predicts the next
token); value: the next token, and, when a teacher with the same vocabulary
scored the corpus, the teacher's top-k probabilities there (a compact
stand-in for its logits).

At a step, with the k nearest entries N and squared distances d (paper
Eq. 1-4)::

    P_hard(w)  ~ sum over N with value w of exp(-d / T)
    P_logit(w) ~ sum over N of u(w) exp(-d / T)         u: stored teacher probabilities
    P_kNN      = mu P_hard + (1 - mu) P_logit
    P          = lambda' P_kNN + (1 - lambda') P_LM,   lambda' = lambda * g(min d)

Without teacher probabilities P_logit is P_hard (mu = 1, plain kNN-LM).

g is a retrieval-confidence gate (beyond the paper, in the spirit of adaptive
kNN-LM interpolation): g = 1 / (1 + exp((min d - gate) / width)).  Measured on
the dev emails of bench/data/personas (bench/keystrokes.py): where the nearest
stored context is within 0.4 (squared distance of whitened unit states), the
kNN's top token is right 88% of the time against the model's 48%; beyond 0.8 it
is right 6-17% against the model's 25-31%, and a fixed lambda replays old emails
("...the fire alarm system at Elmstead Court will be tested on") where they do
not fit.  ``gate=None`` gives the paper's fixed lambda.

>>> s = KnnSettings(lam=0.5, mu=1.0, temperature=1.0, k=2, gate=None)
>>> p_lm = np.array([0.5, 0.5, 0.0])
>>> mix(p_lm, np.array([0.0, 0.0]), np.array([2, 2]), None, None, s).tolist()
[0.25, 0.25, 0.5]
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import hnswlib
import numpy as np

from .encoding import ModelStats
from .errors import ChunkwiseError

INDEX_FORMAT = 2         # the kept graph's file (save_index); 2: its signature sealed inside, not as the seal's label
_SEALED_AS = f"knn-index:{INDEX_FORMAT}"   # what a sealed graph file is for (its associated data)
EF_SEARCH = 64
# Near a stored context: the default gate's midpoint.  Below 0.4 the kNN-LM's next token was right 87-89% of
# the time on the dev emails against the model's 46-51%, from 0.4 to 0.6 58% against 35%, farther out less
# often than the model's (bench/keystrokes.py --knn-distance).  There the user's own writing speaks for what
# comes next (Decoder.writing_backs).
NEAR = 0.5
# Rows learned since the graph was last kept before it is written again (Engine.close writes the rest): at 100k
# rows the graph's part of learning one email took 1.28 s with a write each time (bench/out/learn_latency-keep-
# every-email.txt), 0.26 s without (bench/learn_latency.py); a start grows the kept graph by at most one slice.
KEEP_AFTER_ROWS = 2_000
# Rows added to the graph at a time (KnnLM.grow), after which a learning job may answer a suggestion: adding
# 20,000 rows at 100k took 25.14 s, which one block held suggestions for; in slices, 2.68 s at most between two
# chances to answer (bench/learn_latency.py).
GROW_SLICE = 2_000


@dataclass
class KnnSettings:
    """lambda: weight of the kNN distribution; mu: hard labels vs teacher probabilities; T; k."""

    lam: float = 0.7           # at the nearest contexts (gate); dev split of bench/keystrokes.py
    mu: float = 0.4
    temperature: float = 0.1
    k: int = 16
    gate: float | None = NEAR  # retrieval-confidence gate on the nearest squared distance (None: fixed lambda)
    gate_width: float = 0.08

    def check(self) -> "KnnSettings":
        if not 0.0 <= self.lam <= 1.0:
            raise ChunkwiseError(f"kNN lambda must be between 0 and 1, not {self.lam}.")
        if not 0.0 <= self.mu <= 1.0:
            raise ChunkwiseError(f"kNN mu must be between 0 and 1, not {self.mu}.")
        if not self.temperature > 0:
            raise ChunkwiseError(f"kNN temperature must be above 0, not {self.temperature}.")
        if not 1 <= self.k <= 1024:
            raise ChunkwiseError(f"kNN k must be between 1 and 1024, not {self.k}.")
        if self.gate is not None and not (0.0 < self.gate <= 4.0 and self.gate_width > 0):
            raise ChunkwiseError(f"kNN gate must be between 0 and 4 with a positive width, not {self.gate}.")
        return self

    def weight(self, nearest: float) -> float:
        """lambda' for a step whose nearest stored context is at squared distance *nearest*."""
        if self.gate is None:
            return self.lam
        return self.lam / (1.0 + float(np.exp(np.clip((nearest - self.gate) / self.gate_width, -50, 50))))


def build_index(vectors: np.ndarray, ef: int = EF_SEARCH) -> hnswlib.Index:
    """An HNSW index (squared L2) over unit rows (n, d), labelled 0..n-1.

    One thread: hnswlib's graph then depends on the rows alone, so the same datastore gives the
    same neighbours (and suggestions) wherever it is built the same way.  Learning builds it and
    grows it (:func:`datastore`) and keeps it (:func:`save_index`), so the cost is not paid on a
    suggestion."""
    index = hnswlib.Index(space="l2", dim=vectors.shape[1])
    index.init_index(max_elements=len(vectors), ef_construction=100, M=16, random_seed=0)
    index.add_items(vectors, np.arange(len(vectors)), num_threads=1)
    index.set_ef(ef)
    return index


def grow_index(index: hnswlib.Index, vectors: np.ndarray) -> None:
    """Unit rows (m, d) added to a built graph after its rows, labelled on from its count: what
    learning added since the graph was built.  hnswlib inserts them into the graph as it inserted
    the first ones, one thread, so growing costs what those rows cost in a build, not a build:
    84 s at 100k rows here (bench/library_update.py), 0.26 s to grow it by one email's rows
    (bench/learn_latency.py).  Grown in memory, rows in order, it should be the graph one build
    gives (hnswlib draws the levels in the same sequence); a graph read back from disk draws them
    afresh, so grown from there it may differ as two builds in different orders do, with
    neighbours as near (tests/test_knn_index.py)."""
    start, m = index.get_current_count(), len(vectors)
    if m == 0:
        return
    if index.get_max_elements() < start + m:
        index.resize_index(start + m)
    index.add_items(vectors, np.arange(start, start + m), num_threads=1)


def save_index(index: hnswlib.Index, path: str | os.PathLike, signature: str, key=None) -> None:
    """Keep the datastore's graph at *path*, owner-only, replaced all or nothing; sealed with the
    store's *key* (core/crypto.StoreKey) when it has one -- its vectors are states of the user's
    writing.  *signature* names the datastore it indexes (see :func:`load_index`); it is sealed
    inside, so the file can be opened to learn which datastore it holds (:func:`read_kept`)."""
    from .index import graph_bytes
    from .paths import atomic_write

    head = json.dumps({"format": INDEX_FORMAT, "signature": signature}).encode("utf-8")
    payload = len(head).to_bytes(4, "big") + head + graph_bytes(index)
    atomic_write(path, payload if key is None else key.seal_file(payload, _SEALED_AS))


def read_kept(path: str | os.PathLike, key=None) -> tuple[str, hnswlib.Index] | None:
    """(signature, graph) that :func:`save_index` kept at *path*; None when there is none, it is of
    another format or key, or damaged."""
    from .errors import StoreError
    from .index import graph_from

    try:
        raw = Path(path).read_bytes()
        if key is not None:
            raw = key.open_file(raw, _SEALED_AS)
        size = int.from_bytes(raw[:4], "big")
        head = json.loads(raw[4:4 + size].decode("utf-8"))
        if head.get("format") != INDEX_FORMAT or not isinstance(head.get("signature"), str):
            return None
        return head["signature"], graph_from(raw[4 + size:])
    except (OSError, ValueError, KeyError, RuntimeError, TypeError, UnicodeDecodeError, StoreError):
        return None


def load_index(path: str | os.PathLike, signature: str, key=None) -> hnswlib.Index | None:
    """The graph :func:`save_index` kept for the datastore named *signature*; None when there is
    none, or it is for another datastore, model or key, or damaged (the caller builds it again)."""
    kept = read_kept(path, key)
    return kept[1] if kept is not None and kept[0] == signature else None


def datastore(store, model_id: int, source: str, stats: ModelStats, settings: KnnSettings, path: Path | None,
              key=None, held: "KnnLM | None" = None,
              progress: Callable[[int, int], None] | None = None) -> "KnnLM":
    """The kNN-LM over *store*'s rows for *model_id*, reading and building the least it can: *held*
    (the datastore in memory) grown by the rows learning added since; else the graph kept at *path*
    for all the rows, or for those up to an earlier row (it grows by the rest); else one built.  Kept
    at *path* again whenever its graph changed (held: every KEEP_AFTER_ROWS rows).  *source* names
    the model and how its states are whitened; a graph kept for another is built anew.  *progress*
    (rows done, rows) comes between slices of the rows added to a graph (KnnLM.grow).

    Rows are only ever added or all cleared, so a graph kept for an earlier extent (rows, newest
    row id, digest: ChunkStore.knn_extent) that the store still holds up to that id covers its first
    rows."""
    extent = store.knn_extent(model_id)                   # (rows, newest row id, digest)
    if extent[0] == 0:
        raise ChunkwiseError("There is no kNN datastore for this model yet: run "
                             "'chunkwise mine --knn --corpus ...' first.")

    def covers(earlier) -> bool:          # the store's rows up to that id are still the ones it holds
        return store.knn_extent(model_id, upto=earlier[1]) == tuple(earlier)

    if held is not None and held.source == source and held.extent == extent:
        return held                       # nothing learned since (the extent names the rows it holds)
    if held is not None and held.source == source and held.extent is not None and covers(held.extent):
        _grow(held, store.knn_data(model_id, after=held.extent[1]), extent, progress)
        # Writing the graph again (a second at 100k rows) waits until enough rows are new; a start
        # in between grows the graph kept before by them, as learning did (Engine.close keeps it).
        if extent[0] - (held.kept[0] if held.kept else 0) >= KEEP_AFTER_ROWS:
            keep_datastore(held, path, key)
        return held
    kept = read_kept(path, key) if path is not None else None
    if kept is not None:
        kept_source, kept_extent = parse_signature(kept[0])
        if (kept_source == source and kept_extent is not None and covers(kept_extent)
                and kept[1].get_current_count() == kept_extent[0]):
            # The graph holds its rows' keys: read the rest of those rows without them, then grow.
            _none, values, ids, probs, teacher = store.knn_data(model_id, upto=kept_extent[1], keys=False)
            knn = KnnLM(stats, None, values, ids, probs, settings, index=kept[1])
            knn.source, knn.teacher, knn.extent, knn.kept = source, teacher, kept_extent, kept_extent
            if kept_extent != extent:
                _grow(knn, store.knn_data(model_id, after=kept_extent[1]), extent, progress)
                keep_datastore(knn, path, key)
            return knn
    keys, values, ids, probs, teacher = store.knn_data(model_id)
    # Built from its first slice, then grown (one thread, rows in order: as one build), in steps a
    # caller can answer suggestions between.
    part = lambda a, where: None if a is None else a[where]
    first, rest = slice(0, GROW_SLICE), slice(GROW_SLICE, None)
    knn = KnnLM(stats, keys[first], values[first], part(ids, first), part(probs, first), settings)
    knn.source, knn.teacher = source, teacher
    _grow(knn, (keys[rest], values[rest], part(ids, rest), part(probs, rest), teacher), extent, progress)
    keep_datastore(knn, path, key)
    return knn


def _grow(knn: "KnnLM", rows: tuple, extent: tuple, progress) -> None:
    """*knn* grown by *rows* (ChunkStore.knn_data's tuple), then holding *extent*.  Stopped part-way (the
    window closing stops the learning job at a progress call), it holds neither extent: None, so it is
    read afresh the next time, and not kept."""
    try:
        knn.grow(*rows, progress=progress)
    except BaseException:
        knn.extent = None
        raise
    knn.extent = extent


def signature(source: str, extent: tuple) -> str:
    """What names a kept graph: the model and whitening its keys come from, and the rows it holds."""
    return "|".join(map(str, (source, *extent)))


def parse_signature(text: str) -> tuple[str, tuple[int, int, str] | None]:
    """(source, extent) of :func:`signature`'s text; extent None where it is not one.

    >>> parse_signature(signature("m:1|stats:2", (10, 12, "ab")))
    ('m:1|stats:2', (10, 12, 'ab'))
    """
    source, *named = text.rsplit("|", 3)
    try:
        return source, (int(named[0]), int(named[1]), named[2])
    except (IndexError, ValueError):
        return source, None


def keep_datastore(knn: "KnnLM", path: Path | None, key=None) -> None:
    """Keep *knn*'s graph at *path*, named by its source and extent, unless it is kept already or holds
    no extent whole; a full or read-only disk keeps nothing (the next start builds or grows it
    again), and loses nothing."""
    if (path is None or knn.extent is None or knn.kept == knn.extent
            or knn.index.get_current_count() != knn.extent[0]):
        return
    try:
        save_index(knn.index, path, signature(knn.source, knn.extent), key)
        knn.kept = knn.extent
    except OSError:
        pass


def neighbour_weights(dist: np.ndarray, temperature: float) -> np.ndarray:
    """exp(-d / T) for the neighbours' squared distances (k,), normalised to sum to one."""
    w = np.exp(-(dist - dist.min()) / temperature)
    return w / w.sum()


def mix(p_lm: np.ndarray, dist: np.ndarray, values: np.ndarray, topk_ids: np.ndarray | None,
        topk_probs: np.ndarray | None, s: KnnSettings) -> np.ndarray:
    """P = lambda P_kNN + (1 - lambda) P_LM for one step.

    *p_lm* (V,); *dist* (k,) squared distances; *values* (k,) next tokens;
    *topk_ids* / *topk_probs* (k, t) teacher distributions, or None.
    """
    lam = s.weight(float(dist.min())) if len(values) else 0.0
    if lam == 0.0:
        return p_lm
    w = neighbour_weights(dist, s.temperature)                            # (k,)
    p_knn = np.zeros_like(p_lm)
    np.add.at(p_knn, values, w)                                           # P_hard
    if topk_ids is not None and s.mu < 1.0:
        u = topk_probs.astype(np.float64)
        u /= np.maximum(u.sum(axis=1, keepdims=True), 1e-12)              # (k, t)
        p_logit = np.zeros_like(p_lm)
        np.add.at(p_logit, topk_ids.ravel(), (u * w[:, None]).ravel())
        p_knn = s.mu * p_knn + (1.0 - s.mu) * p_logit
    return lam * p_knn + (1.0 - lam) * p_lm


def mix_one(p_lm: float, token: int, dist: np.ndarray, values: np.ndarray, s: KnnSettings) -> float:
    """P(token) = lambda P_hard(token) + (1 - lambda) p_lm, for one token (hard labels only)."""
    if len(values) == 0:
        return p_lm
    lam = s.weight(float(dist.min()))
    w = neighbour_weights(dist, s.temperature)
    return lam * float(w[values == token].sum()) + (1.0 - lam) * p_lm


class KnnLM:
    """The datastore in memory: an HNSW index over whitened keys, plus values."""

    def __init__(self, stats: ModelStats, keys: np.ndarray | None, values: np.ndarray,
                 topk_ids: np.ndarray | None = None, topk_probs: np.ndarray | None = None,
                 settings: KnnSettings | None = None, index=None):
        """*keys* (n, d) and *values* (n,) of the rows; *index*: the graph over them already built
        (:func:`read_kept`), then *keys* may be None; built here if None."""
        if len(values) == 0:
            raise ChunkwiseError("The kNN datastore is empty: mine a corpus with --knn first.")
        self.stats, self.settings = stats, (settings or KnnSettings()).check()
        self.values = np.asarray(values, dtype=np.int64)
        self.topk_ids, self.topk_probs = topk_ids, topk_probs
        if index is None or index.get_current_count() != len(values):
            if keys is None or len(keys) != len(values):
                raise ChunkwiseError("The kNN datastore's keys are missing; its graph cannot be built.")
            index = build_index(stats.transform(keys))                         # (n, d) unit rows
        index.set_ef(max(EF_SEARCH, self.settings.k))
        self.index = index
        self.source: str | None = None           # the model and whitening its keys are states of (datastore)
        self.teacher: str | None = None          # whose probabilities topk_* are (ChunkStore.knn_data)
        self.extent: tuple[int, int, str] | None = None   # what of the store it holds (ChunkStore.knn_extent)
        self.kept: tuple[int, int, str] | None = None     # ... and what its graph kept on disk holds

    def grow(self, keys: np.ndarray, values: np.ndarray, topk_ids: np.ndarray | None,
             topk_probs: np.ndarray | None, teacher: str | None,
             progress: Callable[[int, int], None] | None = None) -> None:
        """Rows learning added after these, in the store's order (keys (m, d), values (m,), and the
        teacher's top-k where every new row has them from *teacher*): the graph grows by them
        (:func:`grow_index`), GROW_SLICE rows at a time, *progress* (rows done, rows) after each; between
        two slices the datastore is whole, so the caller may answer a suggestion from it there.
        Teacher probabilities stay only where every row has them from one teacher, as
        :meth:`ChunkStore.knn_data` reads the whole datastore."""
        m = len(values)
        if m == 0:
            return
        same_teacher = self.has_teacher and topk_ids is not None and teacher == self.teacher
        if not same_teacher:
            self.topk_ids = self.topk_probs = self.teacher = None
        unit = self.stats.transform(keys)                                      # (m, d)
        if self.index.get_max_elements() < len(self.values) + m:
            self.index.resize_index(len(self.values) + m)                      # once, not per slice
        for start in range(0, m, GROW_SLICE):
            end = min(m, start + GROW_SLICE)
            grow_index(self.index, unit[start:end])
            self.values = np.concatenate([self.values, np.asarray(values[start:end], dtype=np.int64)])
            if same_teacher:
                self.topk_ids = np.concatenate([self.topk_ids, topk_ids[start:end]])
                self.topk_probs = np.concatenate([self.topk_probs, topk_probs[start:end]])
            if progress:
                progress(end, m)

    def __len__(self) -> int:
        return len(self.values)

    @property
    def has_teacher(self) -> bool:
        return self.topk_ids is not None

    def neighbours(self, hidden: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(labels (k,), squared distances (k,)) of the nearest stored contexts."""
        k = min(self.settings.k, len(self.values))
        labels, dist = self.index.knn_query(self.stats.transform(hidden), k=k, num_threads=1)
        return labels[0].astype(np.int64), dist[0].astype(np.float64)

    def nearest(self, hidden: np.ndarray) -> float:
        """Squared distance from the state *hidden* (d,) to the nearest stored context."""
        _labels, dist = self.neighbours(hidden)
        return float(dist.min()) if dist.size else float("inf")

    def distribution(self, p_lm: np.ndarray, hidden: np.ndarray) -> np.ndarray:
        """The mixed next-token distribution (V,) given the model's (V,) and its state (d,)."""
        labels, dist = self.neighbours(hidden)
        ids = self.topk_ids[labels] if self.has_teacher else None
        probs = self.topk_probs[labels] if self.has_teacher else None
        return mix(p_lm, dist, self.values[labels], ids, probs, self.settings)

    def mix_logits(self, logits: np.ndarray, hidden: np.ndarray) -> np.ndarray:
        """Log of the mixed distribution, usable wherever logits are (the sampler's input)."""
        x = logits.astype(np.float64)
        p = np.exp(x - x.max())
        p /= p.sum()
        with np.errstate(divide="ignore"):
            return np.log(self.distribution(p, hidden))
