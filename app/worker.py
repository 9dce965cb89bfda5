"""The model worker: one thread owns the engine; the GUI talks to it by signals.

The GUI thread never waits on the model.  Requests carry an id; the GUI bumps
``latest`` before sending one, and the worker checks it between tokens, so a
newer request (or a cancel) stops the running generation at once and stale
queued requests are skipped without touching the model.
"""
from __future__ import annotations

import logging
import threading
import time
import traceback
from dataclasses import asdict, replace

from PySide6.QtCore import QObject, QThread, Signal, Slot

from core import ChunkStore, ChunkwiseError, Engine, GenerationRequest, StoreError
from core.matching import DEFAULT_THRESHOLD

log = logging.getLogger("chunkwise.worker")


def _log_failure(what: str) -> None:
    """Where it failed, for the log; never the exception's message, which may quote the user's text."""
    import sys

    exc_type, _exc, tb = sys.exc_info()
    frames = "".join(traceback.format_tb(tb, limit=5))
    log.error("%s failed: %s\n%s", what, exc_type.__name__ if exc_type else "?", frames)


LOCKED_HINT = "Your library is locked. Unlock it with Tools → Unlock library…, then try again."
MODEL_ALONE = "Suggestions come from the model alone. Tools → Unlock library… opens it."


class ModelWorker(QObject):
    """Lives in its own QThread; every slot runs there."""

    loaded = Signal(dict)                   # {"model": name, "contexts": n, "seconds": s}
    load_failed = Signal(str)
    piece = Signal(int, str, dict)          # request id, text, {"source", "chunk_id", "kind", "label", "similarity"}
    finished = Signal(int, dict)            # request id, stats
    failed = Signal(int, str)
    progress = Signal(str, int, int)        # what, done, total
    store_ready = Signal(int)               # contexts matched after a refresh
    store_failed = Signal(str)
    store_locked = Signal(str)              # the library could not open: suggestions from the model alone
    threshold_profile = Signal(list)        # [{end, phrase, chunk_id, label, reach}]: core.tuning.Place
    learned = Signal(dict)                  # summary of a mining run
    learn_failed = Signal(str)
    tuned = Signal(dict)                    # {threshold, right, wrong, false, positives, negatives, grid, extreme}
    tune_failed = Signal(str)
    learned_here = Signal(list)             # [{"chunk_id", "context", "origin"}] learned while writing
    forgotten = Signal(dict)                # {"contexts", "chunks", "knn_rows"} removed

    def __init__(self):
        super().__init__()
        self.engine: Engine | None = None
        self.latest = 0                     # the newest request id; written by the GUI thread
        self._cancel_refresh = threading.Event()
        self.locked: str | None = None      # why the library could not open (the engine runs on an empty one)

    # ------------------------------------------------------------ lifetime

    @Slot(dict)
    def load(self, options: dict) -> None:
        """Load (or reload) the model and the store: options = model_path, db_path, n_ctx, threads, threshold."""
        start = time.perf_counter()
        try:
            if self.engine is not None:
                self.engine.close()
                self.engine = None
            self.progress.emit("Loading model", 0, 1)
            from core.paths import default_db_path

            self.locked = None
            try:
                store = ChunkStore(options.get("db_path") or str(default_db_path()))
            except StoreError as exc:
                # Locked (no or a wrong passphrase), damaged or from a newer Chunkwise: the model alone, on
                # an empty store in memory; nothing learned goes anywhere until the library is unlocked.
                store, self.locked = ChunkStore(":memory:"), str(exc)
            try:
                engine = Engine(options.get("model_path") or None, store,
                                n_ctx=options.get("n_ctx", 2048), n_threads=options.get("threads") or None,
                                threshold=options.get("threshold", DEFAULT_THRESHOLD),
                                progress=lambda d, t: self.progress.emit("Measuring this model (once)", d, t))
            except BaseException:
                store.close()                # the model failed: the store is not left open behind it
                raise
            self.engine = engine
            self._cancel_refresh.clear()
            engine.refresh(progress=lambda d, t: self.progress.emit("Encoding chunks", d, t),
                           cancelled=self._cancel_refresh.is_set)
            self.progress.emit("Loading model", 1, 1)
            self.loaded.emit({"model": engine.runtime.name, "contexts": len(engine.matcher),
                              "seconds": round(time.perf_counter() - start, 2)})
            if self.locked:
                self.store_locked.emit(self.locked)
        except ChunkwiseError as exc:
            self.load_failed.emit(str(exc))
        except Exception as exc:  # never let the worker thread die silently
            _log_failure("loading")           # the type and place only: the message may quote the user's text
            self.load_failed.emit(f"Unexpected error while loading: {type(exc).__name__}")

    @Slot()
    def shutdown(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None

    # ------------------------------------------------------------ generation

    @Slot(int, object)
    def generate(self, request_id: int, request: GenerationRequest) -> None:
        received = time.perf_counter()
        if request_id != self.latest or self.engine is None:
            return                           # stale before it started
        first = None
        try:
            if request.knn and not self.engine.has_knn:
                request = replace(request, knn=False)     # nothing learned yet: plain suggestions
            gen = self.engine.stream(request, cancelled=lambda: self.latest != request_id)
            for piece in gen:
                if self.latest != request_id:
                    break
                first = first or time.perf_counter()
                self.piece.emit(request_id, piece.text, {
                    "source": piece.source, "chunk_id": piece.chunk_id, "kind": piece.kind,
                    "label": piece.label, "similarity": piece.similarity})
            stats = gen.stats.as_dict()
            stats["passes_saved"] = gen.stats.passes_saved
            stats["received_at"], stats["first_piece_at"] = received, first   # time.perf_counter()
            self.finished.emit(request_id, stats)
        except ChunkwiseError as exc:
            self.failed.emit(request_id, str(exc))
        except Exception as exc:   # reported in one line; the details go to the log, not the screen
            _log_failure("generation")
            self.failed.emit(request_id, f"internal error ({type(exc).__name__})")

    @Slot(float)
    def set_threshold(self, value: float) -> None:
        if self.engine is not None:
            try:
                self.engine.threshold = value
            except ChunkwiseError:
                pass

    @Slot(int)
    def record_use(self, chunk_id: int) -> None:
        if self.engine is not None and not self.locked:
            try:
                self.engine.store.record_use(chunk_id)
            except ChunkwiseError:
                pass

    # ------------------------------------------------------------ learning while writing (core/feedback.py)

    @Slot(str, list)
    def observe(self, text: str, inserted: list) -> None:
        """Values from the library typed by hand in *text* teach the phrase before them."""
        if self.engine is None or self.locked:
            return
        try:
            learned = self.engine.learn_typed(text, [tuple(r) for r in inserted])
        except ChunkwiseError as exc:
            self.store_failed.emit(str(exc))
            return
        except Exception as exc:      # the details go to the log, never the draft's text
            _log_failure("learning while writing")
            self.store_failed.emit(f"Not learned: internal error ({type(exc).__name__})")
            return
        if learned:
            self.learned_here.emit([vars(x) for x in learned])

    @Slot(int, str)
    def dismiss(self, chunk_id: int, text_before: str) -> None:
        """The user turned down *chunk_id* after *text_before*."""
        if self.engine is None or self.locked:
            return
        try:
            learned = self.engine.dismiss(chunk_id, text_before)
        except ChunkwiseError as exc:
            self.store_failed.emit(str(exc))
            return
        except Exception as exc:
            _log_failure("dismissal")
            self.store_failed.emit(f"Not learned: internal error ({type(exc).__name__})")
            return
        if learned is not None:
            self.learned_here.emit([vars(learned)])

    @Slot()
    def forget_learned(self) -> None:
        if self.engine is None:
            self.store_failed.emit("The model is not loaded yet; nothing was forgotten.")
            return
        if self.locked:
            self.store_failed.emit(f"Nothing was forgotten. {LOCKED_HINT}")
            return
        try:
            self.forgotten.emit(self.engine.forget_learned())
        except ChunkwiseError as exc:
            self.store_failed.emit(str(exc))
        except Exception as exc:
            _log_failure("forgetting")
            self.store_failed.emit(f"Nothing was forgotten: internal error ({type(exc).__name__})")

    # ------------------------------------------------------------ the store

    @Slot()
    def refresh(self) -> None:
        """Encode new or changed contexts (progress, cancellable), then match against them."""
        if self.engine is None:
            return
        self._cancel_refresh.clear()
        try:
            self.engine.refresh(progress=lambda d, t: self.progress.emit("Encoding chunks", d, t),
                                cancelled=self._cancel_refresh.is_set)
            self.store_ready.emit(len(self.engine.matcher))
        except ChunkwiseError as exc:
            self.store_failed.emit(str(exc))

    def cancel_refresh(self) -> None:
        """Called from the GUI thread: a threading.Event, safe across threads."""
        self._cancel_refresh.set()

    # ------------------------------------------------------------ learning from the user's writing

    @Slot(dict)
    def learn(self, options: dict) -> None:
        """Mine into the store (one transaction): paths (files) or texts (sent emails), gamma, corpus_teacher, knn."""
        if self.engine is None:
            self.learn_failed.emit("The model is not loaded yet.")
            return
        if self.locked:                      # learning into the empty stand-in store would be lost on exit
            if "texts" in options:
                self.store_failed.emit(f"Not learned from this email. {LOCKED_HINT}")
            else:
                self.learn_failed.emit(f"Nothing was learned. {LOCKED_HINT}")
            return
        from core.corpus import read_corpus
        from core.learning import mine

        self._cancel_refresh.clear()
        try:
            if "texts" in options:
                from core.corpus import Document, own_words

                docs = [Document(f"sent email {i + 1}", own_words(t)) for i, t in enumerate(options["texts"])]
                docs = [d for d in docs if d.text]
            else:
                docs = read_corpus(options["paths"])
            result = mine(self.engine, docs, options.get("gamma", 0.5), knn=options.get("knn", True),
                          corpus_teacher=options.get("corpus_teacher", True),
                          progress=lambda d, t: self.progress.emit("Learning from your writing", d, t),
                          cancelled=self._cancel_refresh.is_set)
            self.progress.emit("Learning from your writing", 1, 1)
            self.learned.emit({"documents": result.report.documents, "new_chunks": result.new_chunks,
                               "new_contexts": result.new_contexts, "knn_entries": result.knn_rows,
                               "contexts": len(self.engine.matcher)})
        except ChunkwiseError as exc:
            self.progress.emit("Learning from your writing", 1, 1)
            if "texts" in options:           # a sent email: a note in the status bar, not a dialog
                self.store_failed.emit(f"Not learned from this email: {exc}")
            else:
                self.learn_failed.emit(str(exc))
        except Exception as exc:
            _log_failure("learning")
            self.progress.emit("Learning from your writing", 1, 1)
            self.learn_failed.emit(f"internal error ({type(exc).__name__}); nothing was stored")

    @Slot(str)
    def tune(self, path: str) -> None:
        """The threshold that inserts the user's values where they wrote them and nowhere else (core/tuning.py)."""
        if self.engine is None:
            self.tune_failed.emit("The model is not loaded yet.")
            return
        if self.locked:
            self.tune_failed.emit(f"Tuning needs your library's values. {LOCKED_HINT}")
            return
        from core.corpus import read_corpus
        from core.tuning import tune_insertions

        self._cancel_refresh.clear()
        try:
            texts = [d.text for d in read_corpus([path])]
            result = tune_insertions(self.engine, texts,
                                     progress=lambda d, t: self.progress.emit("Tuning the threshold", d, t),
                                     cancelled=self._cancel_refresh.is_set)
            self.tuned.emit({"threshold": result.threshold, "positives": result.positives,
                             "negatives": result.negatives, "grid": result.grid, "extreme": result.extreme,
                             **result.best})
        except ChunkwiseError as exc:
            self.tune_failed.emit(str(exc))
        except Exception as exc:
            _log_failure("tuning")
            self.tune_failed.emit(f"internal error ({type(exc).__name__})")
        finally:
            self.progress.emit("Tuning the threshold", 1, 1)

    @Slot(str)
    def profile_threshold(self, text: str) -> None:
        """Which phrases of *text* would take which chunk, up to which threshold (the settings plot)."""
        if self.engine is None:
            self.threshold_profile.emit([])
            return
        from core.tuning import insertion_places

        try:
            places = insertion_places(self.engine, text)
        except ChunkwiseError:
            places = []
        except Exception:
            _log_failure("threshold profile")
            places = []
        self.threshold_profile.emit([asdict(p) for p in places])


class WorkerThread:
    """Starts a ModelWorker in a QThread and stops both cleanly."""

    def __init__(self):
        self.thread = QThread()
        self.thread.setObjectName("chunkwise-model")
        self.worker = ModelWorker()
        self.worker.moveToThread(self.thread)
        self.thread.start()

    def stop(self, timeout_ms: int = 10000) -> None:
        self.worker.latest = -1              # cancel whatever runs
        self.worker.cancel_refresh()
        if self.thread.isRunning():
            from PySide6.QtCore import QMetaObject, Qt

            QMetaObject.invokeMethod(self.worker, "shutdown", Qt.BlockingQueuedConnection)
            self.thread.quit()
            self.thread.wait(timeout_ms)

