"""The chunk library: browse, filter, search, add, edit, delete, import, export.

Every read and edit is a store job on the model worker's thread (app/lane.py):
one connection to the store, none on the GUI thread, and an edit made while
Chunkwise learns from mail runs between that job's steps.  Answers arrive by
signal; ``answered(what, result)`` tells when each action is done.  After a
change the dialog asks the worker to re-encode what changed, so matching follows
without a restart.
"""
from __future__ import annotations

from typing import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog,
                               QFormLayout, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QMessageBox,
                               QPlainTextEdit, QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout)

from chunkwise.core import ChunkwiseError
from chunkwise.core.portable import export_file, import_file
from chunkwise.core.store import KINDS, validate_chunk
from .theme import colours
from .words import kind_name

# The pause in typing a context after which the model reads the contexts (ChunkEditDialog's *prepare*).
CONTEXT_PAUSE_MS = 300


def locked_banner() -> QLabel:
    """Where a dialog says its library is locked and why (hidden while the library is open)."""
    banner = QLabel()
    banner.setWordWrap(True)
    banner.setStyleSheet(f"color: {colours(banner.palette()).warning.name()};")
    banner.setVisible(False)
    return banner


def row_table(columns: list[str], stretch: tuple[int, ...]) -> QTableWidget:
    """A read-only table selected by whole rows, with *stretch* columns taking the spare width."""
    table = QTableWidget(0, len(columns))
    table.setHorizontalHeaderLabels(columns)
    table.setSelectionBehavior(QAbstractItemView.SelectRows)
    table.setEditTriggers(QAbstractItemView.NoEditTriggers)
    for col in stretch:
        table.horizontalHeader().setSectionResizeMode(col, QHeaderView.Stretch)
    return table


class ChunkEditDialog(QDialog):
    """Add or edit one chunk: kind, label, text, trigger contexts (one per line)."""

    def __init__(self, parent=None, chunk=None, prefill: dict | None = None,
                 prepare: Callable[[list[str]], None] | None = None):
        """*prepare(contexts)*: called a moment after the contexts change (and at open, for a new entry
        with contexts filled in), so the model reads them while the user types and the saved entry
        reaches suggestions sooner."""
        super().__init__(parent)
        self.setWindowTitle("Edit chunk" if chunk else "Add chunk")
        self.resize(520, 420)
        self.kind = QComboBox()
        kinds = list(KINDS)
        if chunk and chunk.kind not in kinds:
            kinds.append(chunk.kind)
        for k in kinds:
            self.kind.addItem(kind_name(k), k)
        self.label = QLineEdit()
        self.text = QPlainTextEdit()
        self.contexts = QPlainTextEdit()
        self.contexts.setPlaceholderText("One per line: the words that lead into this chunk,\n"
                                         "e.g. 'You can call me at'")
        self.error = QLabel("")
        self.error.setStyleSheet(f"color: {colours(self.palette()).warning.name()};")
        self.error.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Kind:", self.kind)
        form.addRow("Label:", self.label)
        form.addRow("Text:", self.text)
        form.addRow("Contexts:", self.contexts)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self._check_and_accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        data = prefill or {}
        if chunk:
            data = {"kind": chunk.kind, "label": chunk.label or "", "text": chunk.text,
                    "contexts": [c.text for c in chunk.contexts]}
        self.kind.setCurrentIndex(max(self.kind.findData(data.get("kind", "snippet")), 0))
        self.label.setText(data.get("label") or "")
        self.text.setPlainText(data.get("text", ""))
        self.contexts.setPlainText("\n".join(data.get("contexts", [])))
        self._prepare = prepare
        self._read_ahead = QTimer(self, singleShot=True, interval=CONTEXT_PAUSE_MS)
        self._read_ahead.timeout.connect(self._prepare_contexts)
        self._pasted = False
        self.contexts.document().contentsChange.connect(self._note_paste)
        self.contexts.textChanged.connect(self._contexts_changed)
        if prepare is not None and chunk is None and data.get("contexts"):
            self._read_ahead.start()              # new contexts filled in (a selection's lead-in); an entry's
                                                  # own were read when it was saved

    def _note_paste(self, _position: int, _removed: int, added: int) -> None:
        self._pasted = added > 1                  # more than a keystroke's character: pasted or dropped

    def _contexts_changed(self) -> None:
        """Typed: read once the typing pauses.  Pasted: read now, as OK may follow at once (a paste
        saved before its contexts were read was seen 88 ms after the save instead of ~20 ms)."""
        if self._pasted:
            self._pasted = False
            self._read_ahead.stop()
            self._prepare_contexts()
        else:
            self._read_ahead.start()

    def _prepare_contexts(self) -> None:
        contexts = self.values()["contexts"]
        if self._prepare is not None and contexts and self.isVisible():
            self._prepare(contexts)

    def done(self, result: int) -> None:
        self._read_ahead.stop()                   # OK: the save reads what is left; Cancel: nothing more to read
        super().done(result)

    def values(self) -> dict:
        contexts = [line for line in self.contexts.toPlainText().splitlines() if line.strip()]
        return {"text": self.text.toPlainText(), "kind": self.kind.currentData(),
                "label": self.label.text().strip() or None, "contexts": contexts}

    def _check_and_accept(self) -> None:
        v = self.values()
        try:
            validate_chunk(v["text"], v["kind"], v["label"], v["contexts"])
        except ChunkwiseError as exc:
            self.error.setText(str(exc))
            return
        self.accept()


class LaneDialog(QDialog):
    """A dialog whose store work goes through the editor's lane; answers to a closed dialog are dropped."""

    answered = Signal(str, object)      # what was done ("reload", "add", ...), its result (None: it failed)

    def __init__(self, window, title: str):
        super().__init__(window)
        self.window_ = window
        self.setWindowTitle(title)
        self.lane = getattr(window, "lane", None)
        self.locked = getattr(window, "locked_message", "") or ("" if self.lane else
                                                                 "the editor's model lane is not running.")
        self.changed = False
        self._jobs: set[int] = set()
        self._closed = False

    def _submit(self, what: str, job, on_done, title: str, changed=None, engine: bool = False) -> None:
        """Run *job(store)* in the lane; *on_done(result)* here when it answers, a warning if it fails.
        *changed(result)*: the chunk ids a write touched (None: all) -- matching follows them even where
        the dialog was closed before the answer came (the user deleted an entry and closed the library)."""
        if self.lane is None or self.locked:
            return
        job_id = None

        def done(result):
            self._jobs.discard(job_id)
            if not self._closed:
                on_done(result)
                self.answered.emit(what, result)

        def failed(message: str, locked: bool):
            self._jobs.discard(job_id)
            if self._closed:
                return
            if locked:
                self._locked(message)
            else:
                QMessageBox.warning(self, title, message)
            self.answered.emit(what, None)

        job_id = self.lane.submit(job, done, failed,
                                  None if changed is None else lambda result: self._store_changed(changed(result)),
                                  engine=engine)
        self._jobs.add(job_id)

    def _locked(self, message: str) -> None:
        self.locked = message

    def _prepare_contexts(self, contexts: list[str]) -> None:
        """The model reads an entry's contexts while they are typed (Engine.prepare_contexts)."""
        if not self.locked and hasattr(self.window_, "request_prepare"):
            self.window_.request_prepare.emit(list(contexts))

    def _store_changed(self, chunk_ids: list[int] | None = None) -> None:
        """Matching follows the change: the worker encodes what changed and updates matching in place
        for *chunk_ids* (milliseconds), or reads the whole library again (None: an import)."""
        self.changed = True
        if hasattr(self.window_, "request_refresh"):
            self.window_.request_refresh.emit(chunk_ids)

    def done(self, result: int) -> None:
        self._closed = True                 # the jobs still run; their answers are not for a closed dialog
        if self.lane is not None:
            self.lane.forget(self._jobs)
        super().done(result)


class LibraryDialog(LaneDialog):
    COLUMNS = ["Kind", "Label", "Text", "Contexts", "Comes", "Uses"]

    def __init__(self, window):
        super().__init__(window, "Library")
        self.resize(900, 520)
        self.banner = locked_banner()
        self.unlock_button = QPushButton("Unlock…")
        self.unlock_button.clicked.connect(lambda _=False: self.unlock())
        self.kind_filter = QComboBox()
        self.kind_filter.addItem("All kinds", None)
        for k in KINDS:
            self.kind_filter.addItem(kind_name(k), k)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search text, labels and contexts")
        self.reveal = QCheckBox("Show personal info")
        self.table = row_table(self.COLUMNS, stretch=(2, 3, 4))
        self.table.doubleClicked.connect(lambda _: self.edit_selected())
        top = QHBoxLayout()
        top.addWidget(self.kind_filter)
        top.addWidget(self.search, 1)
        top.addWidget(self.reveal)
        buttons = QHBoxLayout()
        self.actions_ = []               # what needs an open library: disabled while it is locked
        for text, slot in (("Add…", self.add_chunk), ("Edit…", self.edit_selected), ("Delete", self.delete_selected),
                           ("Import…", self.import_dialog), ("Export…", self.export_dialog),
                           ("Learned…", self.open_learned)):
            b = QPushButton(text)
            b.clicked.connect(lambda _=False, s=slot: s())
            buttons.addWidget(b)
            self.actions_.append(b)
        buttons.addWidget(self.unlock_button)
        buttons.addStretch(1)
        close = QPushButton("Close")
        close.clicked.connect(self.accept)
        buttons.addWidget(close)
        self.protection = QLabel()
        self.protection.setStyleSheet("color: #555;")
        layout = QVBoxLayout(self)
        layout.addWidget(self.banner)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        self.empty_hint = QLabel("Your library is empty. Press Add… to store your phone number, email or "
                                 "address with a few words that lead into it (\"You can reach me on\"), or "
                                 "Import… a file of entries. In an email, Edit → Add selection as snippet "
                                 "stores the selected text.")
        self.empty_hint.setWordWrap(True)
        self.empty_hint.setVisible(False)
        layout.insertWidget(layout.indexOf(self.table), self.empty_hint)
        layout.addWidget(self.protection)
        layout.addLayout(buttons)
        self.kind_filter.currentIndexChanged.connect(lambda _: self.reload())
        self.search.textChanged.connect(lambda _: self.reload())
        self.reveal.toggled.connect(lambda _: self._fill())
        self.chunks = []
        self.comes: dict[int, str] = {}  # chunk id -> where matching inserts it (core.library_notes)
        self._reloads = 0                # the newest reload wins: a slower older answer is dropped
        if hasattr(window, "library_unlocked"):
            window.library_unlocked.connect(self._on_unlocked)
        if hasattr(window, "library_read"):
            window.library_read.connect(self._on_read)          # matching read an edit: where entries come
        self._show_state(self.locked)
        self.reload()

    def _locked(self, message: str) -> None:
        super()._locked(message)
        self._show_state(message)

    def _show_state(self, locked: str) -> None:
        """Open: the table and its buttons. Locked: why, and an Unlock button; nothing else to press."""
        self.banner.setText(f"Your library is locked: {locked}\n\nSuggestions come from the model alone "
                            "until it is unlocked: press Unlock… to enter your passphrase or try again."
                            if locked else "")
        self.banner.setVisible(bool(locked))
        self.unlock_button.setVisible(bool(locked) and self.lane is not None)
        for widget in [*self.actions_, self.kind_filter, self.search, self.reveal, self.table]:
            widget.setEnabled(not locked)
        if locked:
            self.protection.setText("")

    def unlock(self) -> bool:
        """Ask the editor to unlock (it asks for the passphrase); the table fills when the library opens.
        False: the user declined to give a passphrase."""
        if not self.locked:
            return True
        return bool(hasattr(self.window_, "unlock_library") and self.window_.unlock_library())

    def _on_unlocked(self) -> None:
        if self._closed:
            return
        self.locked = ""
        self._show_state("")
        self.reload()

    # ------------------------------------------------------------ table

    def reload(self) -> None:
        self._reloads += 1
        n, kind, search = self._reloads, self.kind_filter.currentData(), self.search.text().strip() or None

        def show(result):
            if n == self._reloads:
                self.chunks, encryption, self.comes = result
                self.protection.setText(f"Personal information in this library: {encryption}.")
                self._fill()

        def job(store, engine):
            rows = store.list_chunks(kind=kind, search=search)
            comes = engine.where_entries_come([c.id for c in rows]) if engine is not None else {}
            return rows, store.encryption, comes

        self._submit("reload", job, show, "Library", engine=True)

    def done(self, result: int) -> None:
        for signal, slot in (("library_unlocked", self._on_unlocked), ("library_read", self._on_read)):
            if hasattr(self.window_, signal):
                try:
                    getattr(self.window_, signal).disconnect(slot)   # a closed dialog hears no more of it
                except (RuntimeError, TypeError):
                    pass
        super().done(result)

    def _on_read(self) -> None:
        """Matching has read the library again (after an edit here or elsewhere): the Comes column follows."""
        if not self._closed and not self.locked:
            self.reload()

    def _fill(self) -> None:
        self.table.setRowCount(len(self.chunks))
        # the hint for a first start: nothing stored at all (not: nothing matches the search)
        self.empty_hint.setVisible(not self.chunks and not self.search.text().strip()
                                   and self.kind_filter.currentData() is None)
        for row, c in enumerate(self.chunks):
            cells = [kind_name(c.kind), c.label or "", c.shown(self.reveal.isChecked()).replace("\n", " ⏎ "),
                     " | ".join(x.text for x in c.contexts), self.comes.get(c.id, ""), str(c.use_count)]
            for col, value in enumerate(cells):
                item = QTableWidgetItem(value)
                if col == 2 and c.kind == "pii" and not self.reveal.isChecked():
                    item.setToolTip("Hidden: tick 'Show personal info' to show")
                if self.COLUMNS[col] == "Comes" and value:
                    item.setToolTip(f"Chunkwise inserts it {value}.")
                item.setData(Qt.UserRole, c.id)
                self.table.setItem(row, col, item)

    def selected_ids(self) -> list[int]:
        rows = sorted({i.row() for i in self.table.selectedIndexes()})
        return [self.chunks[r].id for r in rows]

    # ------------------------------------------------------------ actions

    def add_chunk(self, prefill: dict | None = None, values: dict | None = None) -> bool:
        """Ask for a chunk (or take *values*) and add it; answered("add", its id). False: nothing asked."""
        if self.locked:
            QMessageBox.warning(self, "Add chunk", "The library could not be opened, so nothing can be added.")
            return False
        if values is None:
            dialog = ChunkEditDialog(self, prefill=prefill, prepare=self._prepare_contexts)
            if dialog.exec() != QDialog.Accepted:
                return False
            values = dialog.values()
        v = dict(values)
        self._submit("add", lambda store: store.add_chunk(v["text"], v["kind"], v["contexts"], label=v["label"]),
                     lambda _chunk_id: self.reload(), "Add chunk", changed=lambda chunk_id: [chunk_id])
        return True

    def edit_selected(self, values: dict | None = None) -> bool:
        ids = self.selected_ids()
        if len(ids) != 1:
            return False
        chunk = next(c for c in self.chunks if c.id == ids[0])
        if values is None:
            dialog = ChunkEditDialog(self, chunk=chunk, prepare=self._prepare_contexts)
            if dialog.exec() != QDialog.Accepted:
                return False
            values = dialog.values()
        v, cid = dict(values), chunk.id
        self._submit("edit", lambda store: store.update_chunk(cid, text=v["text"], kind=v["kind"], label=v["label"],
                                                              contexts=v["contexts"]),
                     lambda _result: self.reload(), "Edit chunk", changed=lambda _result: [cid])
        return True

    def delete_selected(self, confirm: bool = True) -> int:
        """Delete the selected chunks in one transaction; answered("delete", how many)."""
        ids = self.selected_ids()
        if not ids:
            return 0
        if confirm:
            answer = QMessageBox.question(self, "Delete chunks",
                                          f"Delete {len(ids)} chunk(s) and their contexts? This cannot be undone.")
            if answer != QMessageBox.Yes:
                return 0
        self._submit("delete", lambda store: store.remove_chunks(ids), lambda _n: self.reload(), "Delete chunks",
                     changed=lambda _n: ids)
        return len(ids)

    def import_dialog(self, path: str | None = None) -> bool:
        if not path:
            path, _ = QFileDialog.getOpenFileName(self, "Import chunks", "", "Chunks (*.json *.csv)")
        if not path:
            return False

        def run(store):
            try:
                return len(import_file(store, path))
            except ChunkwiseError as exc:
                raise ChunkwiseError(f"Nothing was imported.\n\n{exc}") from None

        self._submit("import", run, lambda _result: self.reload(), "Import chunks", changed=lambda _result: None)
        return True

    def export_dialog(self, path: str | None = None, include_pii: bool | None = None) -> bool:
        """Export to *path*; asks first whether personal details go in plain text, where there are any."""
        if not path:
            path, _ = QFileDialog.getSaveFileName(self, "Export chunks", "chunks.json", "JSON (*.json);;CSV (*.csv)")
        if not path:
            return False
        if include_pii is None:
            self._submit("count", lambda store: bool(store.list_chunks(kind="pii")),
                         lambda has_pii: self.export_dialog(path, has_pii and QMessageBox.question(
                             self, "Export chunks",
                             "Write your personal information (phone, address, email…) into the file in plain "
                             "text?\n\nChoose No to export it masked.", QMessageBox.Yes | QMessageBox.No,
                             QMessageBox.No) == QMessageBox.Yes),
                         "Export chunks")
            return True
        self._submit("export", lambda store: export_file(store, path, include_pii=include_pii),
                     lambda _n: None, "Export chunks")
        return True

    def open_learned(self) -> None:
        if self.locked:
            return
        dialog = LearnedDialog(self.window_)
        dialog.exec()
        if dialog.changed:
            self.reload()


class LearnedDialog(LaneDialog):
    """What Chunkwise learned while the user wrote: phrases before values they typed by hand, and
    places they turned a suggestion down; each with its date, removable one by one or all at once."""

    COLUMNS = ["When", "How", "Phrase", "For"]

    def __init__(self, window):
        super().__init__(window, "What Chunkwise learned")
        self.resize(820, 420)
        self.rows = []
        self.note = QLabel(f"Your library is locked: {self.locked}\n\nUnlock it with Unlock… in the library or "
                           "Tools → Unlock library…, then look here again." if self.locked else
                           "Learned on this computer from what you write: when you type a value from your library "
                           "yourself, take it with Alt+], or it is in mail you had Chunkwise learn from, the words "
                           "before it; when you "
                           "press Esc on a suggested chunk, the words where you turned it down. Nothing leaves "
                           "this machine.")
        self.note.setWordWrap(True)
        self.table = row_table(self.COLUMNS, stretch=(2,))
        self.remove_button = QPushButton("Remove selected")
        self.remove_button.clicked.connect(lambda _=False: self.remove_selected())
        self.clear_button = QPushButton("Remove all")
        self.clear_button.clicked.connect(lambda _=False: self.remove_all())
        for button in (self.remove_button, self.clear_button):
            button.setEnabled(False)                     # until the rows have come
        close = QPushButton("Close")
        close.clicked.connect(self.accept)
        buttons = QHBoxLayout()
        buttons.addWidget(self.remove_button)
        buttons.addWidget(self.clear_button)
        buttons.addStretch(1)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.note)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        self.reload()

    def reload(self) -> None:
        self._submit("reload", lambda store: store.learned_contexts(), self._fill, "What Chunkwise learned")

    def _fill(self, rows) -> None:
        self.rows = rows
        self.table.setRowCount(len(self.rows))
        for row, (ctx, chunk) in enumerate(self.rows):
            target = chunk.label or chunk.shown()[:60]
            cells = [(ctx.learned_at or "").replace("T", " ")[:16],
                     "written by you" if ctx.origin == "learned" else "turned down", ctx.text, f"{kind_name(chunk.kind)}: {target}"]
            for col, value in enumerate(cells):
                item = QTableWidgetItem(value)
                item.setData(Qt.UserRole, ctx.id)
                self.table.setItem(row, col, item)
        self.remove_button.setEnabled(bool(self.rows))
        self.clear_button.setEnabled(bool(self.rows))

    def selected_ids(self) -> list[int]:
        return [self.rows[r][0].id for r in sorted({i.row() for i in self.table.selectedIndexes()})]

    def remove_selected(self) -> int:
        return self._remove(self.selected_ids())

    def remove_all(self, confirm: bool = True) -> int:
        ids = [ctx.id for ctx, _chunk in self.rows]
        if confirm and ids and QMessageBox.question(
                self, "Remove all", f"Remove all {len(ids)} learned phrase(s)?",
                QMessageBox.Yes | QMessageBox.Cancel, QMessageBox.Cancel) != QMessageBox.Yes:
            return 0
        return self._remove(ids)

    def _remove(self, ids: list[int]) -> int:
        """Remove learned contexts in one transaction; answered("remove", how many went)."""
        if not ids:
            return 0

        wanted = set(ids)
        owners = sorted({chunk.id for ctx, chunk in self.rows if ctx.id in wanted})

        self._submit("remove", lambda store: store.remove_contexts(ids), lambda _gone: self.reload(),
                     "What Chunkwise learned", changed=lambda _gone: owners)
        return len(ids)
