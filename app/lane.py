"""The library's lane: store work sent to the model worker's thread, answers back by signal.

>>> lane = StoreLane(window.worker)                                  # doctest: +SKIP
>>> lane.submit(lambda store: store.list_chunks(kind="pii"), show_rows, on_error=warn)

The model worker owns the one connection to the store (app/worker.py); dialogs
never open a second one, so an edit made while Chunkwise learns from mail waits
for the next step of that job instead of failing on a locked database, and the
GUI thread runs no SQL and no key derivation.  A job is a function of the store
run on the worker's thread: it must not touch widgets, and it should capture
plain values, not widgets.  Its result (or its error message) comes back on the
GUI thread to the callbacks given with it.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable

from PySide6.QtCore import QObject, Qt

from chunkwise.core import ChunkStore

Job = Callable[[ChunkStore], Any]
OnError = Callable[[str, bool], None]          # message, whether the library is locked


class StoreLane(QObject):
    """Submits store jobs to the worker and routes each answer to the callbacks given with it."""

    def __init__(self, worker):
        super().__init__()
        self._worker = worker
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[Callable[[Any], None] | None, OnError | None]] = {}
        self._always: dict[int, Callable[[Any], None]] = {}    # kept when the dialog that asked is gone
        worker.job_done.connect(self._done, Qt.QueuedConnection)
        worker.job_failed.connect(self._failed, Qt.QueuedConnection)

    @property
    def busy(self) -> bool:
        return bool(self._waiting)

    def submit(self, job: Job, on_done: Callable[[Any], None] | None = None,
               on_error: OnError | None = None, changed: Callable[[Any], None] | None = None,
               engine: bool = False) -> int:
        """Queue *job*; *on_done(result)* or *on_error(message, locked)* runs on the GUI thread later.
        *changed(result)*: the job writes the library, and this asks matching to follow; it runs when
        the job succeeds even where its dialog closed meanwhile (:meth:`forget`).  *engine*: the job is
        *job(store, engine)*, to read what matching knows (``Engine.where_entries_come``)."""
        job_id = next(self._ids)
        self._waiting[job_id] = (on_done, on_error)
        if changed is not None:
            self._always[job_id] = changed
        self._worker.submit(job_id, job, changed is not None, engine)
        return job_id

    def forget(self, owner_callbacks: set[int]) -> None:
        """Drop the callbacks of these jobs (their dialog closed); the jobs themselves still run."""
        for job_id in owner_callbacks:
            if job_id in self._waiting:
                self._waiting[job_id] = (None, None)

    def _done(self, job_id: int, result: object) -> None:
        changed = self._always.pop(job_id, None)
        if changed is not None:
            changed(result)
        on_done, _ = self._waiting.pop(job_id, (None, None))
        if on_done is not None:
            on_done(result)

    def _failed(self, job_id: int, message: str, locked: bool) -> None:
        self._always.pop(job_id, None)
        _, on_error = self._waiting.pop(job_id, (None, None))
        if on_error is not None:
            on_error(message, locked)
