"""The model worker: one thread owns the engine and the store; the GUI talks to it by signals.

The GUI thread never waits on the model, and runs no SQL and no key derivation.
Requests carry an id; the GUI bumps ``latest`` before sending one, and the
worker checks it between tokens, so a newer request (or a cancel) stops the
running generation at once and stale queued requests are skipped without
touching the model.

The library's reads and edits are *store jobs* (app/lane.py): functions of the
store, queued from the GUI thread and run on this thread, between the steps of
whatever long job runs here (learning, tuning, loading), so the library stays
usable during a mining run and never opens a second connection.

Every long job is cancellable: the Cancel button stops it (``cancel_job``), and
closing the window (``WorkerThread.stop``) stops it at its next step, so the
window closes within a second.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
import traceback
from dataclasses import asdict

from PySide6.QtCore import QMetaObject, QObject, QThread, Qt, Signal, Slot

from chunkwise.core import Cancelled, ChunkStore, ChunkwiseError, Engine, GenerationRequest, StoreError
from chunkwise.core.matching import DEFAULT_THRESHOLD

log = logging.getLogger("chunkwise.worker")


def _unexpected(what: str) -> str:
    """Log where *what* failed, and say it in the user's words: that something went wrong, and of which
    kind, never "internal error" or the exception's message (it may quote the user's text); the
    callers say what was kept.

    For the log: the frames, for whoever looks into it.
    """
    import sys

    exc_type, _exc, tb = sys.exc_info()
    name = exc_type.__name__ if exc_type else "unknown"
    frames = "".join(traceback.format_tb(tb, limit=5))
    log.error("%s failed: %s\n%s", what, name, frames)
    return f"something unexpected went wrong ({name})"


LOCKED_HINT = "Your library is locked. Unlock it with Tools → Unlock library…, then try again."
MODEL_ALONE = "Suggestions come from the model alone. Tools → Unlock library… opens it."


def library_size(engine) -> dict:
    """What matching can use now, as the window shows it: {"contexts": phrases that lead into entries,
    "entries": the user's own library entries (not mined phrases), "values": their personal details'
    values, for the spelling check (held in memory only)}; zeros without an engine."""
    if engine is None:
        return {"contexts": 0, "entries": 0, "values": ()}
    return {"contexts": engine.contexts, "entries": engine.library_entries, "values": engine.detail_values}


class ModelWorker(QObject):
    """Lives in its own QThread; every slot runs there."""

    loaded = Signal(dict)                   # {"model": name, "seconds": s, **library_size}
    load_failed = Signal(str)
    piece = Signal(int, object)             # request id, core.Piece (frozen: safe to hand across threads)
    finished = Signal(int, dict)            # request id, stats
    failed = Signal(int, str)
    progress = Signal(str, int, int)        # what, done, total
    store_ready = Signal(dict)              # library_size after a refresh
    store_failed = Signal(str)
    store_locked = Signal(str)              # the library could not open: suggestions from the model alone
    threshold_profile = Signal(list)        # [{end, phrase, chunk_id, label, reach}]: core.tuning.Place
    learned = Signal(dict)                  # summary of a mining run
    learn_failed = Signal(str)
    tuned = Signal(dict)                    # {threshold, right, wrong, false, positives, negatives, grid, extreme}
    tune_failed = Signal(str)
    learned_here = Signal(list)             # [{"chunk_id", "context", "origin"}] learned while writing
    forgotten = Signal(dict)                # {"contexts", "chunks", "knn_rows"} removed
    job_done = Signal(int, object)          # store job id, its result
    job_failed = Signal(int, str, bool)     # store job id, message, whether the library is locked
    unlocked = Signal(dict)                 # the library opened after start: library_size
    unlock_failed = Signal(str)

    def __init__(self):
        super().__init__()
        self.engine: Engine | None = None
        self.store: ChunkStore | None = None   # the library (or, while locked, an empty stand-in)
        self.latest = 0                     # the newest request id; written by the GUI thread
        self._cancel = threading.Event()    # the Cancel button: stops the running long job
        self._stopping = threading.Event()  # the window closes: every job stops at its next step
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()   # (id, fn) store jobs from the GUI thread
        self.locked: str | None = None      # why the library could not open (the engine runs on an empty one)
        self._typing: tuple | None = None   # the newest text observed, for learn_observed
        # The newest generation request, posted from the GUI thread as it is sent (post), so a long job
        # can answer it between its steps; a request is generated once, whichever way it comes.
        self._waiting: tuple[int, GenerationRequest] | None = None
        self._waiting_lock = threading.Lock()
        self._served = 0                    # the newest request id generated so far
        # Requests that change what a suggestion is made from (a library refresh, the threshold, another
        # model, forgetting) asked by the GUI thread and begun here: while one is still queued behind a
        # long job, nothing is served early (it would be made from the library as it was).
        self.changes_asked = 0              # written by the GUI thread (note_change)
        self._changes_begun = 0
        self._stale = False                 # a store job changed the library since matching last read it

    # ------------------------------------------------------------ lifetime

    @Slot(dict)
    def load(self, options: dict) -> None:
        """Load (or reload) the model and the store: options = model_path, db_path, n_ctx, threads, threshold."""
        self._begin_change()
        if self._stopping.is_set():
            return                           # the window is closing
        start = time.perf_counter()
        try:
            self._close()
            self.progress.emit("Loading model", 0, 1)
            self.store = self._open_store(options.get("db_path"))
            self.run_jobs()                  # the library answers before the model has loaded
            self._cancel.clear()
            engine = Engine(options.get("model_path") or None, self.store,
                            n_ctx=options.get("n_ctx", 2048), n_threads=options.get("threads") or None,
                            threshold=options.get("threshold", DEFAULT_THRESHOLD),
                            progress=self._step("Measuring this model (once)", jobs=False))
            self.engine = engine
            engine.refresh(progress=self._step("Encoding chunks", jobs=False), cancelled=self._stopped)
            self.progress.emit("Loading model", 1, 1)
            self.loaded.emit({"model": engine.model_name, "seconds": round(time.perf_counter() - start, 2),
                              **library_size(engine)})
            if self.locked:
                self.store_locked.emit(self.locked)
            try:
                engine.warm()                # here, while the user has typed nothing yet (Engine.warm)
            except Exception:  # noqa: BLE001 - a table made ahead of time; the first request makes it otherwise
                pass
        except Cancelled:
            self.load_failed.emit("Loading was cancelled.")
        except ChunkwiseError as exc:
            self.load_failed.emit(str(exc))
        except Exception:  # never let the worker thread die silently
            self.load_failed.emit(f"The model did not load: {_unexpected('loading')}")

    def _open_store(self, db_path: str | None) -> ChunkStore:
        """The library, or an empty stand-in while it cannot open (``locked`` says why)."""
        from chunkwise.core.paths import default_db_path

        self.locked = None
        try:
            return ChunkStore(db_path or str(default_db_path()))
        except StoreError as exc:
            # Locked (no or a wrong passphrase), damaged or from a newer Chunkwise: the model alone, on
            # an empty store in memory; nothing learned goes anywhere until the library is unlocked.
            self.locked = str(exc)
            return ChunkStore(":memory:")

    @Slot(str)
    def unlock(self, db_path: str) -> None:
        """Open the library now (the passphrase was given meanwhile) and match against it; the model
        stays loaded.  A wrong passphrase or a file still unreadable: ``unlock_failed``, still locked."""
        self._begin_change()
        if self._stopping.is_set():
            return                           # the window is closing
        try:
            store = ChunkStore(db_path)
        except ChunkwiseError as exc:
            self.unlock_failed.emit(str(exc))
            return
        stand_in, self.store, self.locked = self.store, store, None    # store jobs from now on: the library
        try:
            if self.engine is not None:
                self.engine.use_store(store, progress=self._step("Encoding chunks", jobs=False),
                                      cancelled=self._stopped)
            elif stand_in is not None:
                stand_in.close()
            self.unlocked.emit(library_size(self.engine))
        except ChunkwiseError as exc:        # opened, but not matched against: still usable, told why
            self.store_failed.emit(str(exc))
            self.unlocked.emit(library_size(None))
        self.run_jobs()

    def _close(self) -> None:
        if self.engine is not None:
            self.engine.close()              # closes its store too
        elif self.store is not None:
            self.store.close()
        self.engine = self.store = None

    @Slot()
    def shutdown(self) -> None:
        """The last call on this thread: what the library was asked to do is done, then all closes."""
        self.run_jobs()
        self._close()
        QThread.currentThread().quit()

    # ------------------------------------------------------------ long jobs: progress, cancel, store jobs between steps

    def _stopped(self) -> bool:
        return self._cancel.is_set() or self._stopping.is_set()

    def _step(self, what: str, jobs: bool = True, suggestions: bool = False):
        """A progress callback for a long job: shows progress, runs the library's queued store jobs
        (so it answers during the job; not where the job writes the store in steps, as encoding
        does: *jobs* False), and stops the job when the window closes.  *suggestions*: the job calls
        it where the model is free (learning: between two emails, core/distill.py score_all), so the
        newest suggestion request is answered there instead of after the whole job."""
        def step(done: int, total: int) -> None:
            self.progress.emit(what, done, total)
            if jobs:
                self.run_jobs()
            if suggestions and not self._stopped():
                self._serve_waiting()
            if self._stopping.is_set():
                raise Cancelled(f"{what}: stopped, the window is closing.")
        return step

    def post(self, request_id: int, request: GenerationRequest) -> None:
        """Called on the GUI thread as the window sends its suggestion (not the alternatives, which
        can wait): only keeps it, for :meth:`_serve_waiting`; its queued ``generate`` still comes."""
        with self._waiting_lock:
            self._waiting = (request_id, request)

    def note_change(self, *_args) -> None:
        """Called on the GUI thread as it asks for a refresh, threshold, model or forgetting (direct
        connections); the slot doing it counts it begun (:meth:`_begin_change`)."""
        with self._waiting_lock:
            self.changes_asked += 1

    def _begin_change(self) -> None:
        # At most as many as were asked: a slot called directly (a test) must not cover a later request.
        self._changes_begun = min(self._changes_begun + 1, self.changes_asked)

    def _serve_waiting(self) -> None:
        """Generate the newest posted request now, if it is still the one the window waits for and
        no change to what suggestions are made from is still waiting behind the job."""
        with self._waiting_lock:        # checked with the request taken: a change asked since is seen
            if self._stale or self._changes_begun < self.changes_asked:
                return
            waiting, self._waiting = self._waiting, None
        if waiting is not None and waiting[0] == self.latest:
            self.generate(*waiting)

    # ------------------------------------------------------------ store jobs (app/lane.py)

    def submit(self, job_id: int, fn, writes: bool = False, engine: bool = False) -> None:
        """Called from the GUI thread: queue *fn(store)*; it runs here, now or between a long job's steps.
        *writes*: it changes the library, so matching is out of date until the refresh the caller sends.
        *engine*: *fn(store, engine)*, for a job that reads what matching knows (the engine is None
        where the model did not load)."""
        self._jobs.put((job_id, fn, writes, engine))
        QMetaObject.invokeMethod(self, "run_jobs", Qt.QueuedConnection)

    @Slot()
    def run_jobs(self) -> None:
        while True:
            try:
                job_id, fn, writes, engine = self._jobs.get_nowait()
            except queue.Empty:
                return
            if self.store is None or self.locked:
                self.job_failed.emit(job_id, self.locked or "The library is not open yet.", bool(self.locked))
                continue
            try:
                result = fn(self.store, self.engine) if engine else fn(self.store)
            except Exception as exc:
                self.store.rollback()        # a job that failed half-way leaves no transaction open behind it
                if isinstance(exc, ChunkwiseError):
                    self.job_failed.emit(job_id, str(exc), False)
                else:                        # the type and place for the log; the user a sentence
                    self.job_failed.emit(job_id, f"The library could not do that: {_unexpected('library')}; "
                                                 "nothing was changed.", False)
            else:
                # Its refresh is sent once the window hears of it: until it runs, no suggestion is
                # answered early (a deleted entry would still be in matching).
                self._stale = self._stale or writes
                self.job_done.emit(job_id, result)

    # ------------------------------------------------------------ generation

    @Slot(int, object)
    def generate(self, request_id: int, request: GenerationRequest) -> None:
        received = time.perf_counter()
        if request_id != self.latest or request_id <= self._served or self.engine is None:
            return                           # stale before it started, or served during a long job
        self._served = request_id
        first = None
        try:
            gen = self.engine.stream(request, cancelled=lambda: self.latest != request_id)
            sent = 0
            for piece in gen:
                if self.latest != request_id:
                    break
                first = first or time.perf_counter()
                self.piece.emit(request_id, piece)
                sent += 1
            stats = gen.stats.as_dict()
            stats["passes_saved"] = gen.stats.passes_saved
            stats["pieces"] = sent           # the window waits for them all (ComposeWindow._on_finished)
            stats["received_at"], stats["first_piece_at"] = received, first   # time.perf_counter()
            self.finished.emit(request_id, stats)
        except ChunkwiseError as exc:
            self.failed.emit(request_id, str(exc))
        except Exception:   # reported in one line; the details go to the log, not the screen
            self.failed.emit(request_id, f"{_unexpected('generation')}; your email is as it was")

    @Slot(float)
    def set_threshold(self, value: float) -> None:
        self._begin_change()
        if self.engine is not None:
            try:
                self.engine.threshold = value
            except ChunkwiseError:
                pass

    @Slot(int)
    def record_use(self, chunk_id: int) -> None:
        if self.engine is not None and not self.locked:
            try:
                self.store.record_use(chunk_id)
            except ChunkwiseError:
                pass

    # ------------------------------------------------------------ learning while writing (core/feedback.py)

    @Slot(str, list)
    def observe(self, text: str, inserted: list) -> None:
        """Values from the library typed by hand in *text* teach the phrase before them.

        Learned after the suggestion the window asks for next (queued behind it), so that suggestion
        never waits for the model to read a phrase.  Only the newest text observed is looked at: the
        text before the cursor, whose last 2,000 characters hold what was typed before (a value typed
        and then followed by a click back above it waits for the next look from below it)."""
        if self.engine is None or self.locked:
            return
        self._typing = (text, [tuple(r) for r in inserted])
        QMetaObject.invokeMethod(self, "learn_observed", Qt.QueuedConnection)

    @Slot()
    def learn_observed(self) -> None:
        """Learn from the newest observed text, then read ahead the phrase before a value the user
        has begun to type (Engine.prepare_typed), so learning it later runs no forward pass."""
        typing, self._typing = self._typing, None
        if typing is None or self.engine is None or self.locked:
            return
        try:
            learned = self.engine.learn_typed(*typing)
        except ChunkwiseError as exc:
            self.store_failed.emit(str(exc))
            return
        except Exception:             # the details go to the log, never the draft's text
            self.store_failed.emit(f"Not learned: {_unexpected('learning while writing')}; your library is as it was")
            return
        if learned:
            self.learned_here.emit([vars(x) for x in learned])
        if self._stopping.is_set():
            return
        try:
            self.engine.prepare_typed(*typing)
        except Exception:             # best effort: learning reads the phrase itself
            _unexpected("reading a phrase ahead")

    @Slot(int, str)
    def dismiss(self, chunk_id: int, text_before: str) -> None:
        """The user turned down *chunk_id* after *text_before*."""
        self._learn_place(self.engine.dismiss if self.engine else None, chunk_id, text_before, "dismissal")

    @Slot(int, str)
    def confirm(self, chunk_id: int, text_before: str) -> None:
        """The user took *chunk_id*, offered one Alt+] away, after *text_before*."""
        self._learn_place(self.engine.confirm if self.engine else None, chunk_id, text_before, "a chosen entry",
                          taken=True)

    def _learn_place(self, learn, chunk_id: int, text_before: str, what: str, taken: bool = False) -> None:
        """Learn what the user said of one library entry at one place (Engine.dismiss / Engine.confirm);
        *taken*: the user took it (the status bar then names the entry)."""
        if learn is None or self.locked:
            return
        try:
            learned = learn(chunk_id, text_before)
        except ChunkwiseError as exc:
            self.store_failed.emit(str(exc))
            return
        except Exception:
            self.store_failed.emit(f"Not learned: {_unexpected(what)}; your library is as it was")
            return
        if learned is not None:
            item = vars(learned)
            if taken:
                chunk = self.engine.store.get_chunk(chunk_id)
                item = {**item, "taken": chunk.label or chunk.shown()[:40]}
            self.learned_here.emit([item])

    @Slot()
    def forget_learned(self) -> None:
        self._begin_change()
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
        except Exception:
            self.store_failed.emit(f"Nothing was forgotten: {_unexpected('forgetting')}")

    # ------------------------------------------------------------ the store

    @Slot(object)
    def refresh(self, chunk_ids: list[int] | None = None) -> None:
        """Encode new or changed contexts (progress, cancellable), then match against them: in place for
        *chunk_ids* (a library edit), or the whole library again (None)."""
        self._begin_change()
        self._stale = False                  # (what a store job changed is read below, or the engine is gone)
        if self._stopping.is_set():
            return                           # the window is closing
        if self.engine is None:
            return
        self._cancel.clear()
        try:
            self.engine.refresh(progress=lambda d, t: self.progress.emit("Encoding chunks", d, t),
                                cancelled=self._stopped, chunk_ids=chunk_ids)
            self.store_ready.emit(library_size(self.engine))
        except ChunkwiseError as exc:
            self.store_failed.emit(str(exc))

    @Slot(object)
    def prepare_contexts(self, contexts: list[str]) -> None:
        """Read the contexts the user is typing into a library entry, so that saving it finds them read
        (Engine.prepare_contexts).  Best effort: any failure leaves the save to read them itself."""
        if self._stopping.is_set() or self.engine is None or self.locked:
            return
        try:
            self.engine.prepare_contexts(contexts)
        except Exception:                    # nothing is lost: the save encodes what is missing
            _unexpected("reading contexts ahead")

    def cancel_job(self) -> None:
        """Called from the GUI thread (the Cancel button): a threading.Event, safe across threads."""
        self._cancel.set()

    # ------------------------------------------------------------ learning from the user's writing

    @Slot(dict)
    def learn(self, options: dict) -> None:
        """Mine into the store (one transaction): paths (files) or texts (sent emails), gamma, corpus_teacher, knn."""
        if self._stopping.is_set():
            return                           # the window is closing
        if self.engine is None:
            self.learn_failed.emit("The model is not loaded yet.")
            return
        if self.locked:                      # learning into the empty stand-in store would be lost on exit
            if "texts" in options:
                self.store_failed.emit(f"Not learned from this email. {LOCKED_HINT}")
            else:
                self.learn_failed.emit(f"Nothing was learned. {LOCKED_HINT}")
            return
        from chunkwise.core.corpus import read_corpus
        from chunkwise.core.learning import mine

        self._cancel.clear()
        try:
            if "texts" in options:
                from chunkwise.core.corpus import Document, own_words

                docs = [Document(f"sent email {i + 1}", own_words(t)) for i, t in enumerate(options["texts"])]
                docs = [d for d in docs if d.text]
            else:
                docs = read_corpus(options["paths"])
            result = mine(self.engine, docs, options.get("gamma", 0.5), knn=options.get("knn", True),
                          corpus_teacher=options.get("corpus_teacher", True),
                          progress=self._step("Learning from your writing", suggestions=True),
                          cancelled=self._stopped,
                          index_progress=self._step("Indexing what was learned", suggestions=True))
            if self._stale:
                # A library edit came between two emails: mine followed only the chunks it mined, so
                # read the whole library, as before, so that no suggestion answered before the edit's
                # own refresh (queued behind this job) comes from the library as it was.
                self.engine.refresh()
            self._stale = False
            self.progress.emit("Learning from your writing", 1, 1)
            self.learned.emit({"documents": result.report.documents, "new_chunks": result.new_chunks,
                               "new_contexts": result.new_contexts, "knn_entries": result.knn_rows,
                               "learned_phrases": result.learned_phrases,
                               **library_size(self.engine)})
        except Cancelled as exc:             # the user pressed Cancel: a note, not a dialog
            self.progress.emit("Learning from your writing", 1, 1)
            self.store_failed.emit(str(exc))
        except ChunkwiseError as exc:
            self.progress.emit("Learning from your writing", 1, 1)
            if "texts" in options:           # a sent email: a note in the status bar, not a dialog
                self.store_failed.emit(f"Not learned from this email: {exc}")
            else:
                self.learn_failed.emit(str(exc))
        except Exception:
            self.progress.emit("Learning from your writing", 1, 1)
            self.learn_failed.emit(f"{_unexpected('learning')}; nothing was stored")

    @Slot(str)
    def tune(self, path: str) -> None:
        """The threshold that inserts the user's values where they wrote them and nowhere else (core/tuning.py)."""
        if self._stopping.is_set():
            return                           # the window is closing
        if self.engine is None:
            self.tune_failed.emit("The model is not loaded yet.")
            return
        if self.locked:
            self.tune_failed.emit(f"Tuning needs your library's values. {LOCKED_HINT}")
            return
        from chunkwise.core.corpus import read_corpus
        from chunkwise.core.tuning import tune_insertions

        self._cancel.clear()
        try:
            texts = [d.text for d in read_corpus([path])]
            result = tune_insertions(self.engine, texts, progress=self._step("Tuning the threshold"),
                                     cancelled=self._stopped)
            self.tuned.emit({"threshold": result.threshold, "positives": result.positives,
                             "negatives": result.negatives, "grid": result.grid, "extreme": result.extreme,
                             **result.best})
        except ChunkwiseError as exc:
            self.tune_failed.emit(str(exc))
        except Exception:
            self.tune_failed.emit(f"{_unexpected('tuning')}; the threshold is as it was")
        finally:
            self.progress.emit("Tuning the threshold", 1, 1)

    @Slot(str)
    def profile_threshold(self, text: str) -> None:
        """Which phrases of *text* would take which chunk, up to which threshold (the settings plot)."""
        if self._stopping.is_set():
            return                           # the window is closing
        if self.engine is None:
            self.threshold_profile.emit([])
            return
        from chunkwise.core.tuning import insertion_places

        try:
            places = insertion_places(self.engine, text, progress=self._step("Reading this email for the plot"),
                                      cancelled=self._stopping.is_set)
        except ChunkwiseError:
            places = []
        except Exception:
            _unexpected("threshold profile")
            places = []
        self.progress.emit("Reading this email for the plot", 1, 1)
        self.threshold_profile.emit([asdict(p) for p in places])


class WorkerThread:
    """Starts a ModelWorker in a QThread and stops both cleanly."""

    def __init__(self):
        self.thread = QThread()
        self.thread.setObjectName("chunkwise-model")
        self.worker = ModelWorker()
        self.worker.moveToThread(self.thread)
        self.thread.start()

    def stop(self, timeout_ms: int = 1000) -> bool:
        """Stop whatever runs at its next step, close the model and the store, end the thread.

        The GUI waits at most *timeout_ms* (one step of any job is shorter).  Past that, the thread
        is left to finish on its own and kept referenced until it does, so Qt never destroys a
        running thread.  Returns whether it ended in time."""
        self.worker.latest = -1              # cancel a generation
        self.worker._stopping.set()          # and any long job, at its next step
        self.worker.blockSignals(True)       # what it says while stopping ("cancelled") is for no one
        if not self.thread.isRunning():
            return True
        QMetaObject.invokeMethod(self.worker, "shutdown", Qt.QueuedConnection)
        if self.thread.wait(timeout_ms):
            return True
        log.warning("the model thread is still finishing a step; it closes on its own")
        _finishing.append(self)
        self.thread.finished.connect(lambda: _finishing.remove(self) if self in _finishing else None)
        return False


_finishing: list[WorkerThread] = []        # threads still ending after their window closed


def finish_worker_threads(timeout_ms: int = 60_000) -> None:
    """At exit: wait for model threads still ending a step (a model load has none inside it), so
    their queued library edits are done and Qt never destroys a running thread."""
    for worker_thread in list(_finishing):
        worker_thread.thread.wait(timeout_ms)

