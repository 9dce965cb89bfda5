"""Learning from the user's writing: mined chunks and kNN-LM rows stored in one transaction.

>>> from core.learning import mine           # doctest: +SKIP
>>> result = mine(engine, read_corpus(["~/Mail/sent.mbox"]), gamma=0.9)   # doctest: +SKIP
>>> result.new_chunks, result.knn_rows                                      # doctest: +SKIP

The pieces: :mod:`chunkwise.core.scoring` runs the model over a text, :mod:`chunkwise.core.distill` cuts chunks
from it, this module stores them and keeps the kNN-LM graph.  Measuring what was learned is
:func:`chunkwise.core.perplexity.perplexity_of`; choosing gamma and the threshold is :mod:`chunkwise.core.tuning`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Sequence

from .corpus import Document
from .distill import DEFAULT_GAMMA, MAX_CONTEXTS_PER_CHUNK, CorpusTeacher, Miner, MiningReport
from .errors import ChunkwiseError, StoreError
from .feedback import learn_from_mail
from .llama_runtime import LlamaRuntime

Progress = Callable[[int, int], None]


@dataclass
class MineResult:
    report: MiningReport
    kind: str
    new_chunks: int
    new_contexts: int
    knn_rows: int = 0
    teacher: str | None = None
    learned_phrases: int = 0      # phrases before the user's library values in the mail, stored as their contexts


def load_teacher(path: str | os.PathLike, n_ctx: int = 1024, n_threads: int | None = None) -> LlamaRuntime:
    """A second GGUF for KCD-LM (a path, or ``gemma``: the optional Gemma 3 270M); any failure is one clear message."""
    from .paths import resolve_model_path

    try:
        return LlamaRuntime(resolve_model_path(path), n_ctx=n_ctx, n_threads=n_threads)
    except ChunkwiseError as exc:
        raise ChunkwiseError(f"The teacher model could not be loaded: {exc}") from None


def corpus_knn_teacher(engine):
    """The kNN-LM of the other documents as mining teacher, with the paper's fixed lambda: the
    decode-time confidence gate (KnnSettings.gate) cut the chunks mined from the persona mail
    by a fifth (bench/keystrokes.py, dev split).  The other documents are the batch's and what was
    learned before (the engine's datastore, and the documents it holds): an email learned on its
    own, as the editor learns each one sent, has only those (distill.corpus_teacher_confidence)."""
    from dataclasses import replace

    teacher = CorpusTeacher(engine.matcher.stats, replace(engine.knn_settings, gate=None).check())
    if not engine.has_knn:
        return teacher
    return teacher._replace(earlier=engine.knn, learned=engine.store.knn_documents(engine.model_id))


def mine(engine, docs: Sequence[Document], gamma: float = DEFAULT_GAMMA, teacher: LlamaRuntime | None = None,
         kind: str | None = None, knn: bool = False, progress: Progress | None = None,
         cancelled: Callable[[], bool] | None = None, corpus_teacher: bool = False,
         index_progress: Progress | None = None) -> MineResult:
    """Mine *docs* into the engine's store: the chunks and kNN rows in one transaction, or nothing; then
    the words before each of the user's library values the mail contains, each stored on its own as a
    learned context of that value (core/feedback.py store_typed; listed in What Chunkwise learned…).

    *corpus_teacher*: the kNN-LM of the other documents is the teacher
    (engine.knn_settings), so phrases the user repeats become chunks.  *index_progress*: called
    between slices of the kNN rows added to the graph (Engine.catch_up_knn), where a caller may
    answer a suggestion, as *progress* between documents.
    """
    kind = kind or ("teacher" if (teacher is not None or corpus_teacher) else "self")
    if corpus_teacher and engine.has_knn:
        # The datastore of earlier mail teaches this mail: read back, or built or grown where its kept
        # graph is missing, stale or of an older format, in slices a suggestion may come between.
        engine.catch_up_knn(progress=index_progress)
    ct = corpus_knn_teacher(engine) if corpus_teacher else None
    report = Miner(engine.runtime, gamma, teacher, ct).mine(docs, progress, cancelled, knn=knn)
    if report.documents == 0:
        raise ChunkwiseError("No document is long enough to mine (each needs a few sentences); nothing was stored.")
    label = teacher.name if (teacher is not None and report.teacher_probs) else None
    added = engine.store.add_mined(engine.model_id, kind, report.chunks, MAX_CONTEXTS_PER_CHUNK,
                                   report.knn_rows, label)
    # Matching follows the chunks mined in place, and the kNN-LM's graph grows by the new rows: both
    # were read or built whole before, holding the lane for seconds per learned email in a large
    # library (bench/learn_latency.py).  Done here, in the learning job, not on a suggestion.
    engine.refresh(chunk_ids=added.chunk_ids)
    if report.knn_rows:
        engine.catch_up_knn(progress=index_progress)
    # Where the user wrote one of their library values in this mail ("ring me on +44 20 7946 0321"),
    # the words before it are their own phrasing for it: a learned context, as when typed in the editor.
    # After the mined part is in and matching has it: a store that fails here loses only these phrases.
    try:
        learned = learn_from_mail(engine, [d.text for d in docs])
    except StoreError:           # only reading the library's values can raise here, before anything is stored
        learned = []
    return MineResult(report, kind, added.chunks, added.contexts, len(report.knn_rows),
                      teacher.name if teacher is not None else ("corpus kNN-LM" if corpus_teacher else None),
                      len(learned))
