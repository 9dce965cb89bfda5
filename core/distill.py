"""Chunk mining from the user's writing: self (SCD-LM) and teacher (KCD-LM) distillation.

One forward pass of the working model over each document gives, at every
position, the probability of the token that is really there and the hidden
state after it (paper section 4.3, appendix D.1-D.2):

* a *chunk* is a longest run of tokens each of probability >= gamma (the
  teacher's probability with ``teacher=``; tokenizers are aligned through
  byte offsets), at least two tokens long;
* its *entry token* is the token before it, its *context vector* the
  working model's state after that token, its context text the (up to)
  64 tokens before it;
* identical chunks are kept once with all their contexts (section 4.1).

The forward pass itself (windows of 512 tokens, teacher alignment by byte
offsets) is :mod:`chunkwise.core.scoring`.

>>> confident_spans(np.log([np.nan, .2, .8, .9, .3, .95, .99, .97]), gamma=0.7, start=1)
[(2, 4), (5, 8)]
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import AbstractSet, Callable, NamedTuple, Sequence

import numpy as np

from .corpus import Document
from .encoding import join_context, local_mean
from .errors import Cancelled, ChunkwiseError
from .llama_runtime import LlamaRuntime
from .scoring import Scored, align_logprob, document_tokens, score

CONTEXT_TOKENS = 64       # context kept as a chunk's trigger text
MIN_CONTEXT = 4           # tokens of the mined text needed before a chunk starts
MIN_CHUNK_TOKENS = 2      # a one-token chunk saves no forward pass
MAX_CONTEXTS_PER_CHUNK = 32
DEFAULT_GAMMA = 0.9
TOPK = 8                  # teacher probabilities kept per position (kNN-LM)

Progress = Callable[[int, int], None]


@dataclass
class MinedContext:
    text: str
    entry_token: int
    vector: np.ndarray        # (d,) state after the entry token
    vector_local: np.ndarray  # (d,) mean of the last LOCAL_WINDOW states


@dataclass
class MinedChunk:
    text: str
    tokens: tuple[int, ...]
    contexts: list[MinedContext] = field(default_factory=list)
    occurrences: int = 0


@dataclass
class MiningReport:
    documents: int = 0
    tokens: int = 0
    spans: int = 0
    chunks: list[MinedChunk] = field(default_factory=list)
    knn_rows: list[tuple] = field(default_factory=list)
    teacher_probs: bool = False

    @property
    def contexts(self) -> int:
        return sum(len(c.contexts) for c in self.chunks)


# ---------------------------------------------------------------- pure steps


def confident_spans(logprob: np.ndarray, gamma: float, start: int,
                    min_len: int = MIN_CHUNK_TOKENS) -> list[tuple[int, int]]:
    """Maximal runs [i, e) of positions >= start whose every token has p >= gamma."""
    ok = np.zeros(len(logprob) + 1, dtype=bool)
    with np.errstate(invalid="ignore"):
        ok[:-1] = logprob >= math.log(gamma)
    ok[:start] = False
    spans, i, n = [], start, len(logprob)
    while i < n:
        if not ok[i]:
            i += 1
            continue
        e = i
        while ok[e]:
            e += 1
        if e - i >= min_len:
            spans.append((i, e))
        i = e
    return spans


# ---------------------------------------------------------------- mining


class CorpusTeacher(NamedTuple):
    """The corpus as mining teacher (:func:`corpus_teacher_confidence`): the working model's whitening
    and the kNN-LM settings; and the datastore of what was learned before with the hashes of the
    documents it holds (:func:`document_hash`), where there is one."""

    stats: "ModelStats"
    settings: "KnnSettings"
    earlier: "KnnLM | None" = None
    learned: AbstractSet[str] = frozenset()


class Miner:
    """Finds chunks in documents with the working model (and optionally a teacher).

    >>> miner = Miner(runtime, gamma=0.9)            # doctest: +SKIP
    >>> report = miner.mine(read_corpus(["sent/"]))  # doctest: +SKIP
    """

    def __init__(self, rt: LlamaRuntime, gamma: float = DEFAULT_GAMMA, teacher: LlamaRuntime | None = None,
                 corpus_teacher=None):
        """*corpus_teacher*: a :class:`CorpusTeacher` (or its first fields as a tuple) -- the kNN-LM of
        the corpus itself, and of what was learned before, decides the chunks (see
        :func:`corpus_teacher_confidence`)."""
        if not 0.0 < gamma < 1.0:
            raise ChunkwiseError(f"gamma must be between 0 and 1 (exclusive), not {gamma}.")
        if teacher is not None and corpus_teacher is not None:
            raise ChunkwiseError("Use either a teacher model or the corpus as teacher, not both.")
        self.rt, self.gamma, self.teacher, self.corpus_teacher = rt, gamma, teacher, corpus_teacher

    def confidence(self, doc: Document, scored: Scored, topk: int = 0) -> tuple[np.ndarray, Scored | None]:
        """Log-probability per working-model token that decides chunk membership, and the teacher's pass."""
        if self.teacher is None:
            return scored.logprob, None
        t_tokens, t_first = document_tokens(self.teacher, doc)
        same = t_tokens == scored.tokens and self.teacher.n_vocab == self.rt.n_vocab
        teacher = score(self.teacher, t_tokens, t_first, hidden=False, topk=topk if same else 0)
        if same:
            return teacher.logprob, teacher
        total = len((doc.prefix + doc.text).encode("utf-8"))
        if scored.offsets[-1] != total or teacher.offsets[-1] != total:
            raise ChunkwiseError(f"{doc.name}: a tokenizer does not reproduce the text byte for byte, "
                                 "so teacher and working model cannot be aligned.")
        return align_logprob(scored.offsets, teacher.offsets, teacher.logprob), teacher

    def mine(self, docs: Sequence[Document], progress: Progress | None = None,
             cancelled: Callable[[], bool] | None = None, knn: bool = False) -> MiningReport:
        """Score every document, cut chunks, merge identical ones. Writes nothing.

        With *knn*, also collects the per-token kNN-LM rows (``report.knn_rows``).
        """
        passes = self.score_all(docs, progress, cancelled, topk=TOPK if knn else 0)
        report = self.extract(passes, self.gamma)
        if knn:
            for doc, scored, _conf, teacher in passes:
                report.knn_rows.extend(knn_rows(doc, scored, teacher))
            report.teacher_probs = any(r[3] is not None for r in report.knn_rows)
        return report

    def score_all(self, docs: Sequence[Document], progress: Progress | None = None,
                  cancelled: Callable[[], bool] | None = None, topk: int = 0) -> list[tuple]:
        """(document, our pass, confidence per token, teacher pass or None) for each usable document.

        *progress* is called after each document, where the runtime holds nothing this pass needs (each
        document is read from an empty cache): a caller may use the model there, as the editor does to
        answer a suggestion while it learns (app/worker.py)."""
        out = []
        for i, doc in enumerate(docs):
            if cancelled and cancelled():
                raise Cancelled("Mining was cancelled; nothing was stored.")
            tokens, first = document_tokens(self.rt, doc)
            if len(tokens) - first >= MIN_CONTEXT + MIN_CHUNK_TOKENS:
                scored = score(self.rt, tokens, first)
                confidence, teacher = self.confidence(doc, scored, topk=topk)
                out.append((doc, scored, confidence, teacher))
            if progress:
                progress(i + 1, len(docs))
        if self.corpus_teacher is not None:
            ct = CorpusTeacher(*self.corpus_teacher)
            skip = {i for i, p in enumerate(out) if document_hash(p[0]) in ct.learned}
            confidences = corpus_teacher_confidence([p[1] for p in out], ct.stats, ct.settings,
                                                    earlier=ct.earlier, skip=skip)
            out = [(d, sc, conf, None) for (d, sc, _c, _t), conf in zip(out, confidences)]
        return out

    def extract(self, passes: Sequence[tuple], gamma: float) -> MiningReport:
        """Chunks at *gamma* from scored documents (cheap: tuning tries several gammas on one pass)."""
        report = MiningReport()
        found: dict[str, MinedChunk] = {}
        for _doc, scored, confidence, _teacher in passes:
            report.documents += 1
            report.tokens += len(scored.tokens) - scored.first
            for span in confident_spans(confidence, gamma, start=scored.first + MIN_CONTEXT):
                chunk = self.cut(scored, *span)
                if chunk is None:
                    continue
                report.spans += 1
                merged = found.setdefault(chunk.text, MinedChunk(chunk.text, chunk.tokens))
                merged.occurrences += 1
                texts = {c.text for c in merged.contexts}
                if len(merged.contexts) < MAX_CONTEXTS_PER_CHUNK and chunk.contexts[0].text not in texts:
                    merged.contexts.append(chunk.contexts[0])
        report.chunks = sorted(found.values(), key=lambda c: -c.occurrences)
        return report

    def cut(self, scored: Scored, start: int, end: int) -> MinedChunk | None:
        """The chunk tokens[start:end] with its context, moved to start on a word boundary."""
        tokens, rt = scored.tokens, self.rt
        while end - start >= MIN_CHUNK_TOKENS:
            lo = max(scored.first, start - CONTEXT_TOKENS)
            try:
                context = bytes(b"".join(rt.piece(t) for t in tokens[lo:start])).decode("utf-8")
                text = bytes(b"".join(rt.piece(t) for t in tokens[start:end])).decode("utf-8")
            except UnicodeDecodeError:        # a span boundary inside a multi-byte character
                start += 1
                continue
            # The store re-joins context and chunk when a model needs them
            # encoded again: keep only cuts where that gives back the text.
            if context.strip() and text.strip() and context == context.rstrip(" \t") \
                    and join_context(context, text) == context + text:
                ctx = MinedContext(context, int(tokens[start - 1]), scored.hidden[start - 1].copy(),
                                   local_mean(scored.hidden, start - 1, first=scored.first))
                return MinedChunk(text, tuple(int(t) for t in tokens[start:end]), [ctx], 1)
            start += 1
        return None


def document_hash(doc: Document) -> str:
    """What names a document's rows in the kNN datastore (a document learned twice adds them once)."""
    return hashlib.sha1((doc.prefix + "\x00" + doc.text).encode("utf-8")).hexdigest()


def knn_rows(doc: Document, scored: Scored, teacher: Scored | None) -> list[tuple]:
    """kNN-LM datastore rows of one document: (doc hash, key, next token, teacher top-k ids, probs).

    Key: the state after token p; value: token p + 1 (every scored position
    of the mined text).  Teacher probabilities only when the teacher shares
    the working model's tokens (then its rows line up with ours).
    """
    digest = document_hash(doc)
    rows = []
    for p in range(scored.first, len(scored.tokens) - 1):
        if np.isnan(scored.logprob[p + 1]):
            continue
        ids = probs = None
        if teacher is not None and teacher.topk_ids is not None:
            ids, probs = teacher.topk_ids[p + 1], teacher.topk_probs[p + 1]
        rows.append((digest, scored.hidden[p], scored.tokens[p + 1], ids, probs))
    return rows


def generate_corpus(engine, prompts: Sequence[str], samples: int = 2, max_tokens: int = 200,
                    temperature: float = 0.8, seed: int = 0, progress: Progress | None = None,
                    cancelled: Callable[[], bool] | None = None) -> list[Document]:
    """The model's own answers to *prompts* (*samples* each), the paper's self-memory corpus.

    Each answer keeps its chat prompt as ``prefix`` so mining sees the
    states the model had while writing it.
    """
    from .engine import GenerationRequest

    if samples < 1:
        raise ChunkwiseError("--samples must be at least 1.")
    docs, total = [], len(prompts) * samples
    for i, prompt in enumerate(prompts):
        prefix = engine.runtime.chat_prompt([{"role": "user", "content": prompt}])
        for s in range(samples):
            if cancelled and cancelled():
                raise Cancelled("Mining was cancelled; nothing was stored.")
            request = GenerationRequest(prompt, mode="chat", max_tokens=max_tokens, temperature=temperature,
                                        seed=seed + 1000 * i + s, use_chunks=False)
            text = engine.generate(request, record_use=False).text
            if text.strip():
                docs.append(Document(f"prompt {i + 1} sample {s + 1}", text, prefix))
            if progress:
                progress(i * samples + s + 1, total)
    return docs


def corpus_teacher_confidence(passes: Sequence[Scored], stats, settings, spare: int = 48,
                              earlier=None, skip: AbstractSet[int] = frozenset()) -> list[np.ndarray]:
    """Token log-probabilities under the kNN-LM of the *other* documents (leave one out).

    The user's own writing makes a teacher that knows what a 135M model
    cannot: their sign-off, their projects' names, their stock phrases.
    For each position: P = lambda P_kNN + (1 - lambda) P_LM (PP-KD Eq. 1, 4
    with hard labels), the neighbours drawn from every document but the
    one being scored, so a phrase counts only when it recurs across
    documents.

    *earlier*: the kNN-LM of what was learned before (:class:`chunkwise.core.knn.KnnLM`, the
    engine's datastore); its rows are other documents too, and its nearest join the batch's.
    Without it, an email learned on its own (the editor learns each sent email so) has no other
    document and is mined on the model's confidence alone: the phrases the user repeats from
    earlier mail never became chunks.  *skip*: passes whose document that datastore already holds
    (learned again), which would find themselves there.
    """
    from .knn import build_index, mix_one

    keys, values, owner, where = [], [], [], []
    for d, sc in enumerate(passes):
        nxt = np.arange(sc.first + 1, len(sc.tokens))
        nxt = nxt[~np.isnan(sc.logprob[nxt])]
        keys.append(sc.hidden[nxt - 1])
        values.append(np.asarray(sc.tokens)[nxt])
        owner.append(np.full(len(nxt), d))
        where.append(nxt)
    out = [sc.logprob.copy() for sc in passes]
    if earlier is not None and len(earlier) == 0:
        earlier = None
    if not keys or sum(len(k) for k in keys) == 0 or (len(passes) < 2 and earlier is None):
        return out
    vectors = stats.transform(np.vstack(keys))                                  # (n, d) unit rows
    values_all, owner_all = np.concatenate(values), np.concatenate(owner)
    if len(passes) >= 2:
        want = min(len(vectors), settings.k + spare)
        index = build_index(vectors, ef=max(64, want))
        labels, dist = index.knn_query(vectors, k=want, num_threads=1)         # (n, want)
    if earlier is not None:
        k_earlier = min(settings.k, len(earlier))
        e_labels, e_dist = earlier.index.knn_query(vectors, k=k_earlier, num_threads=1)   # (n, k)
        e_values = earlier.values[e_labels.astype(np.int64)]                  # (n, k)
    row = 0
    for d, sc in enumerate(passes):
        for pos in where[d]:
            dst, vals = np.empty(0, np.float32), np.empty(0, np.int64)
            if len(passes) >= 2:
                keep = owner_all[labels[row]] != d
                dst, vals = dist[row][keep][: settings.k], values_all[labels[row][keep][: settings.k]]
            if earlier is not None and d not in skip:
                dst, vals = np.concatenate([dst, e_dist[row]]), np.concatenate([vals, e_values[row]])
                nearest = np.argsort(dst, kind="stable")[: settings.k]
                dst, vals = dst[nearest], vals[nearest]
            if len(dst):
                p_lm = math.exp(sc.logprob[pos])
                out[d][pos] = math.log(max(mix_one(p_lm, sc.tokens[pos], dst, vals, settings), 1e-300))
            row += 1
    return out
