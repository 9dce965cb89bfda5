"""The compose window: To, Subject, body; suggestions stream in as ghost text."""
from __future__ import annotations

import itertools
import re
import sys
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QDialog, QFileDialog, QFormLayout, QLabel, QLineEdit, QMainWindow, QMessageBox,
                               QProgressBar, QPushButton, QVBoxLayout, QWidget)

from chunkwise.core import GenerationRequest, Piece
from chunkwise.core.feedback import PassedOver

from .alternatives import Alternatives, trim_start
from .autosave import AutosaveFile
from .email_actions import EmailActions
from .ghost import GhostTextEdit
from .help import show_help
from .lane import StoreLane
from .spelling import Speller, default_words_file
from .settings import Settings, save_settings
from .words import WITHHELD_HINT, withheld_line, words_from_library
from .worker import LOCKED_HINT, MODEL_ALONE, WorkerThread


_previous_handler = None
_MAILTO = re.compile(r"mailto:[^'\"\n]*")


def _redacting_handler(mode, context, message) -> None:
    """Qt's own warnings, with any mailto: URL (which carries the whole email) cut out."""
    message = _MAILTO.sub("mailto:<draft not shown>", message)     # log text: the user's word
    if _previous_handler is not None:
        _previous_handler(mode, context, message)
    else:
        sys.stderr.write(message + "\n")


def keep_emails_out_of_qt_messages() -> None:
    """Put the redacting message handler in front (issue 14.8: a failed mailto open printed the body).
    Idempotent: installed again, it keeps the handler it passes messages on to."""
    global _previous_handler
    from PySide6.QtCore import qInstallMessageHandler

    previous = qInstallMessageHandler(_redacting_handler)
    if previous is not _redacting_handler:
        _previous_handler = previous


def body_prompt(to: str, subject: str, before_cursor: str) -> tuple[str, bool]:
    """The plain-continuation prompt for the body, and whether a trailing space was lifted.

    A prompt ending in a space tokenizes badly (a lone space token); the space
    is lifted and the suggestion's own leading space takes its place.
    """
    head = ""
    if to.strip():
        head += f"To: {to.strip()}\n"
    if subject.strip():
        head += f"Subject: {subject.strip()}\n"
    if head:
        head += "\n"
    text = head + before_cursor
    lifted = text.endswith(" ")
    return (text.rstrip(" ") if lifted else text), lifted


def subject_prompt(to: str, before_cursor: str) -> tuple[str, bool]:
    head = f"To: {to.strip()}\n" if to.strip() else ""
    text = head + "Subject: " + before_cursor
    lifted = text.endswith(" ")
    return (text.rstrip(" ") if lifted else text), lifted


class ComposeWindow(QMainWindow, EmailActions):
    request_generation = Signal(int, object)
    request_load = Signal(dict)
    request_threshold = Signal(float)
    request_refresh = Signal(object)          # chunk ids a library edit touched; None: read it all again
    request_prepare = Signal(object)          # contexts typed into a library entry, read before its save
    request_use = Signal(int)
    request_learn = Signal(dict)
    request_tune = Signal(str)
    request_observe = Signal(str, list)     # text before the cursor, [(start, end)] of text not typed by hand
    request_dismiss = Signal(int, str)      # chunk id turned down, the text before it
    request_confirm = Signal(int, str)      # chunk id taken from the readier alternative, the text before it
    request_forget = Signal()
    request_unlock = Signal(str)            # the store file to open now (a passphrase was given)
    library_unlocked = Signal()             # the library opened after start (dialogs fill their tables)
    library_read = Signal()                 # matching read the library again (the Library's Comes column follows)

    def __init__(self, settings: Settings, settings_file: Path | None = None, start_worker: bool = True,
                 autosave_file: AutosaveFile | None = None):
        super().__init__()
        keep_emails_out_of_qt_messages()
        self.confirm_close = True       # ask before closing with unsaved work
        self.settings = settings
        self.settings_file = settings_file
        self._init_email(autosave_file)
        self.resize(820, 600)
        self._ids = itertools.count(1)
        self.current_id = 0
        self.current_editor: GhostTextEdit | None = None
        self._lifted_space = False
        self._at_line_start = False     # the cursor starts an empty line: the suggestion's leading newlines go
        self._tab_waiting = False       # Tab pressed before the suggestion arrived: take it when it has
        self._in_flight = -1            # the request sent and not finished yet
        # Pieces received per request, and a finish that came before its last pieces: Qt delivered a
        # request's `finished` ahead of its last `piece` (seen in tests/test_editor.py's Alt+] test),
        # so a finish waits until the count the worker sent has arrived.
        self._received: dict[int, int] = {}
        self._early_finish: dict[int, dict] = {}
        self._last_request: GenerationRequest | None = None
        self._library_entries = 0       # the user's own entries matching can use (_show_library_size)
        self._request_place = None
        self.alternatives = Alternatives()   # Alt+] / Alt+[ (app/alternatives.py)
        self._confirming = None              # (entry, text before it): taken from the body's readier alternative
        self._partly_taken: set[int] = set()  # chunks of the suggestion on screen the user took words of
        self.model_ready = False
        self.locked_message = ""       # why the library could not open, while it is locked
        self.last_stats: dict = {}
        self.model_name = ""            # the loaded model's name, for the status bar
        self._build_ui()
        self._build_menus()
        self.debounce = QTimer(self)
        self.debounce.setSingleShot(True)
        self.debounce.setInterval(settings.debounce_ms)
        self.debounce.timeout.connect(self.suggest_now)
        self.autosave = QTimer(self)
        self.autosave.setSingleShot(True)
        self.autosave.setInterval(1000)
        self.autosave.timeout.connect(self.autosave_now)
        self.worker_thread = WorkerThread() if start_worker else None
        self.lane = StoreLane(self.worker) if self.worker_thread else None   # the library's store work
        self._restore_autosave()
        if self.worker_thread:
            self._connect_worker()
            self.load_model()

    # ------------------------------------------------------------ UI

    def _build_ui(self) -> None:
        central = QWidget(self)
        form = QFormLayout()
        self.to_edit = QLineEdit()
        self.to_edit.setPlaceholderText("name@example.com")
        self.subject_edit = GhostTextEdit(single_line=True)
        self.subject_edit.setPlaceholderText("Subject")
        form.addRow("To:", self.to_edit)
        form.addRow("Subject:", self.subject_edit)
        self.body_edit = GhostTextEdit()
        self.body_edit.setPlaceholderText("Write your email. Suggestions appear in grey: Tab accepts, "
                                          "Ctrl+Right takes a word, Esc dismisses.")
        layout = QVBoxLayout(central)
        layout.addLayout(form)
        layout.addWidget(self.body_edit, 1)
        self.setCentralWidget(central)
        # Per editor, the chunks the user typed over in the sentence being written: not suggested again in it.
        self.passed_over = {self.body_edit: PassedOver(), self.subject_edit: PassedOver()}
        for editor in (self.body_edit, self.subject_edit):
            editor.typed_over.connect(self.passed_over[editor].add)
            editor.edited.connect(lambda e=editor: self._on_edited(e))
            editor.interrupted.connect(self.cancel_suggestion)
            editor.dismissed.connect(lambda e=editor: self._on_dismissed(e))
            editor.accepted.connect(lambda pieces, e=editor: self._on_accepted(pieces, e))
            editor.tab_waiting.connect(lambda e=editor: self._on_early_tab(e))
            editor.cursorPositionChanged.connect(self._show_alternatives)   # the "2/3" counter only
        self.to_edit.textEdited.connect(lambda _: self.cancel_suggestion())
        self.to_edit.textChanged.connect(lambda _: self._changed())
        for editor in (self.body_edit, self.subject_edit):
            # contentsChange, not textChanged: the spelling underlines re-format the text (textChanged
            # fires) without changing a character, and that is no edit of the email.
            editor.document().contentsChange.connect(lambda _pos, removed, added: (removed or added) and self._changed())
        self.speller = Speller(default_words_file())
        for editor in (self.body_edit, self.subject_edit):
            editor.check_spelling(self.speller, self.settings.spell_check)
        status = self.statusBar()
        self.alt_label = QLabel("")
        self.alt_label.setToolTip("Other suggestions here: Alt+] next, Alt+[ previous")
        status.addPermanentWidget(self.alt_label)
        self.model_label = QLabel("Loading model…")
        self.stats_label = QLabel("")
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(180)          # widened to its words in _on_progress
        self.progress.setVisible(False)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setVisible(False)
        self.cancel_button.clicked.connect(self._cancel_job)
        status.addPermanentWidget(self.stats_label)
        status.addPermanentWidget(self.model_label)
        status.addPermanentWidget(self.progress)
        status.addPermanentWidget(self.cancel_button)

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self._action(file_menu, "&New email", self.new_email, QKeySequence.New)
        self._action(file_menu, "&Open…", self.open_email, QKeySequence.Open)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        file_menu.addSeparator()
        self._action(file_menu, "&Save", self.save_email, QKeySequence.Save)
        self._action(file_menu, "Save &As…", lambda: self.save_email(ask=True), QKeySequence.SaveAs)
        file_menu.addSeparator()
        self.copy_action = self._action(file_menu, "&Copy email", self.copy_email, QKeySequence("Ctrl+Shift+C"))
        self._action(file_menu, "Open in &mail client", self.open_mail_client)
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", self.close, QKeySequence.Quit)
        edit_menu = self.menuBar().addMenu("&Edit")
        # Each acts on the field with the focus (To, Subject or body), as its own keys do.
        for text, name, keys in (("&Undo", "undo", QKeySequence.Undo), ("&Redo", "redo", QKeySequence.Redo),
                                 (None, None, None),
                                 ("Cu&t", "cut", QKeySequence.Cut), ("&Copy", "copy", QKeySequence.Copy),
                                 ("&Paste", "paste", QKeySequence.Paste),
                                 ("Select &All", "selectAll", QKeySequence.SelectAll), (None, None, None)):
            if text is None:
                edit_menu.addSeparator()
            else:
                self._action(edit_menu, text, lambda n=name: self._edit_command(n), keys)
        self._action(edit_menu, "Ne&xt suggestion", lambda: self.cycle_suggestion(1), QKeySequence("Alt+]"))
        self._action(edit_menu, "Pre&vious suggestion", lambda: self.cycle_suggestion(-1), QKeySequence("Alt+["))
        edit_menu.addSeparator()
        self._action(edit_menu, "Add selection as &snippet…", self.add_selection_as_snippet)
        view_menu = self.menuBar().addMenu("&View")
        self.marks_action = self._action(view_menu, "&Mark text from chunks", self._toggle_marks, checkable=True)
        self.marks_action.setChecked(self.settings.show_chunk_marks)
        self.spelling_action = self._action(view_menu, "Check &spelling", self._toggle_spelling, checkable=True)
        self.spelling_action.setChecked(self.settings.spell_check)
        tools = self.menuBar().addMenu("&Tools")
        self._action(tools, "Your &library…", self.open_library, QKeySequence("Ctrl+L"))
        self.learn_action = self._action(tools, "Learn from &my writing…", self.learn_from_writing)
        self.learned_action = self._action(tools, "What Chunkwise lear&ned…", self.open_learned)
        self.forget_action = self._action(tools, "&Forget what Chunkwise learned…", self.forget_learned)
        self.unlock_action = self._action(tools, "&Unlock library…", self.unlock_library)
        self.unlock_action.setEnabled(False)         # only while the library is locked
        self._action(tools, "&Settings…", self.open_settings, QKeySequence("Ctrl+,"))
        help_menu = self.menuBar().addMenu("&Help")
        self._action(help_menu, "&Keyboard shortcuts", lambda: show_help(self, "keys"), QKeySequence.HelpContents)
        self._action(help_menu, "How &suggestions and the library work", lambda: show_help(self, "how"))
        self._action(help_menu, "&About Chunkwise", lambda: show_help(self, "about"))

    def _edit_command(self, name: str) -> None:
        """Edit menu: undo, cut, paste... in whichever field has the focus (the body if none)."""
        widget = self.focusWidget()          # the window's own: an open menu does not take it
        if widget not in (self.to_edit, self.subject_edit, self.body_edit):
            widget = self.body_edit
        getattr(widget, name)()

    def _action(self, menu, text, slot, shortcut=None, checkable=False) -> QAction:
        """A menu action. `triggered` carries `checked`; only checkable actions pass it on,
        so a slot's optional argument (learn_from_writing's `paths`) is never filled with False."""
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(shortcut)
        action.setCheckable(checkable)
        if checkable:
            action.triggered.connect(slot)
        else:
            action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        return action

    # ------------------------------------------------------------ worker wiring

    def _connect_worker(self) -> None:
        w = self.worker_thread.worker
        self.request_generation.connect(w.generate)
        # Counted as they are asked, on this thread (note_change only counts; the engine is touched on the
        # worker's thread alone): while one waits behind learning, learning answers no suggestion early.
        for signal in (self.request_load, self.request_threshold, self.request_refresh, self.request_forget,
                       self.request_unlock):
            signal.connect(w.note_change, Qt.DirectConnection)
        self.request_load.connect(w.load)
        self.request_threshold.connect(w.set_threshold)
        self.request_refresh.connect(w.refresh)
        self.request_prepare.connect(w.prepare_contexts)
        self.request_use.connect(w.record_use)
        self.request_learn.connect(w.learn)
        self.request_tune.connect(w.tune)
        self.request_observe.connect(w.observe)
        self.request_dismiss.connect(w.dismiss)
        self.request_confirm.connect(w.confirm)
        self.request_forget.connect(w.forget_learned)
        self.request_unlock.connect(w.unlock)
        # Queued, always: the window's slots run on the GUI thread.  (PySide finds a connected method by
        # its name: a function patched in under another name runs on the sender's thread even so.)
        queued = Qt.QueuedConnection
        for signal, slot in ((w.learned_here, self._on_learned_here), (w.forgotten, self._on_forgotten),
                             (w.learned, self._on_learned), (w.learn_failed, self._on_learn_failed),
                             (w.piece, self._on_piece), (w.finished, self._on_finished),
                             (w.failed, self._on_failed), (w.loaded, self._on_loaded),
                             (w.load_failed, self._on_load_failed), (w.progress, self._on_progress),
                             (w.store_ready, self._on_store_ready), (w.store_failed, self._on_store_failed),
                             (w.store_locked, self._on_store_locked), (w.unlocked, self._on_unlocked),
                             (w.unlock_failed, self._on_unlock_failed)):
            signal.connect(slot, queued)

    def _on_learn_failed(self, message: str) -> None:
        QMessageBox.warning(self, "Chunkwise: nothing learned", message)

    def _on_store_failed(self, message: str) -> None:
        self.statusBar().showMessage(f"Library: {message}", 8000)

    @property
    def worker(self):
        return self.worker_thread.worker if self.worker_thread else None

    def load_model(self) -> None:
        s = self.settings
        self.model_ready = False
        self.model_label.setText("Loading model…")
        self.request_load.emit({"model_path": s.model_path, "db_path": s.db_path, "n_ctx": s.n_ctx,
                                "threads": s.threads, "threshold": s.threshold})

    def _on_loaded(self, info: dict) -> None:
        self.model_ready = True
        self._set_locked("")                     # store_locked follows if the library did not open
        self.model_name = info["model"]
        self._show_library_size(info)
        self.progress.setVisible(False)
        self.cancel_button.setVisible(False)
        self.statusBar().showMessage(f"Model ready in {info['seconds']} s", 4000)
        self._schedule()

    def _on_store_locked(self, message: str) -> None:
        """The model runs; the library did not open. Say so where it stays visible, and offer to unlock."""
        self._set_locked(message)
        self.model_label.setText(f"{self.model_name} · library locked")
        self.statusBar().showMessage(f"Your library is locked. {MODEL_ALONE}", 15000)

    def unlock_library(self) -> bool:
        """Tools → Unlock library…: open the library now, without a restart; the model stays loaded.

        Without a keychain the passphrase is asked for (again); with one, opening is simply retried
        (the keychain may have been unlocked, the file moved back).  The model lane opens the store
        (key derivation and SQL never run on this thread): ``library_unlocked`` follows, or a warning
        that it is still locked.  Returns False where the user declined to give a passphrase."""
        from chunkwise.core import crypto

        from .passphrase import ask_passphrase

        if not crypto.keychain_available() and not ask_passphrase(self, unlock=True, store=self.store_path()):
            return False
        if self.worker is None:
            return False
        self.statusBar().showMessage("Opening your library…", 5000)
        self.request_unlock.emit(self.store_path())
        return True

    def _on_unlocked(self, size: dict) -> None:
        self._set_locked("")
        self._show_library_size(size)
        self.statusBar().showMessage("Your library is open; suggestions use it again.", 5000)
        self.library_unlocked.emit()
        self._schedule()

    def _on_unlock_failed(self, message: str) -> None:
        QMessageBox.warning(self, "Chunkwise: library still locked", message)

    def _set_locked(self, message: str) -> None:
        self.locked_message = message
        self.unlock_action.setEnabled(bool(message))
        self.model_label.setToolTip(f"{message}\n\n{MODEL_ALONE}" if message else "")

    def _on_load_failed(self, message: str) -> None:
        self.model_ready = False
        self._show_words_of([])                  # the library closed with the engine: its words go too
        self.progress.setVisible(False)
        self.model_label.setText("No model loaded")
        QMessageBox.warning(self, "Chunkwise: model not loaded",
                            f"{message}\n\nYou can keep writing; choose another model in Tools → Settings.")

    def _on_progress(self, what: str, done: int, total: int) -> None:
        busy = done < total
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy and what in ("Encoding chunks", "Learning from your writing",
                                                              "Tuning the threshold"))
        self.progress.setMaximum(max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(f"{what} %p%")
        # Wide enough for its words at 100%: at a fixed 180 px "Learning from your writing 68%" wrapped
        # onto two clipped lines (seen under Xvfb, tools/xvfb_learn_menu.sh).  At most a third of the
        # window, so a long label never pushes the window wider than the user made it.
        needed = self.progress.fontMetrics().horizontalAdvance(f"{what} 100%") + 24
        needed = min(needed, max(180, self.width() // 3))
        self.progress.setMinimumWidth(needed)
        self.progress.setMaximumWidth(max(needed, 180))

    def _on_store_ready(self, size: dict) -> None:
        self.progress.setVisible(False)
        self.cancel_button.setVisible(False)
        self._show_library_size(size)
        self.library_read.emit()

    def _show_library_size(self, size: dict) -> None:
        """*size*: worker.library_size.  Without an entry of the user's own (an empty library, a locked
        one, or only phrases mined from their mail) the readier detail alternative can bring nothing."""
        self._library_entries = size["entries"]
        self._show_words_of(size.get("values", ()))
        self.model_label.setText(f"{self.model_name} · library ready")
        entries = f"{size['entries']} entr{'y' if size['entries'] == 1 else 'ies'}"
        self.model_label.setToolTip(f"The model is {self.model_name}. Your library has {entries} of your "
                                    f"own; {size['contexts']} phrase(s) lead into them and into the phrases "
                                    "learned from your writing.")

    def _show_words_of(self, values) -> None:
        """The words of the user's personal details (*values*) are no misspelling ("Lindqvist")."""
        if self.speller.set_library(values):
            for editor in (self.body_edit, self.subject_edit):
                editor.spelling.rehighlight()

    def _cancel_job(self) -> None:
        if self.worker:
            self.worker.cancel_job()

    # ------------------------------------------------------------ suggestions

    # One path per keystroke (app/ghost.py): typed characters that match the suggestion consume it and
    # say nothing; any other change of the text says ``edited`` once (cancel, re-arm the pause); a key,
    # click or cursor move that drops the suggestion without changing the text says ``interrupted`` once.

    def _on_edited(self, editor: GhostTextEdit) -> None:
        self.cancel_suggestion()
        self.current_editor = editor
        self._schedule()

    def _schedule(self) -> None:
        self.debounce.start(self.settings.debounce_ms)

    def _new_request_id(self) -> int:
        """The one place request ids are made: the worker stops whatever it runs for an older one."""
        request_id = next(self._ids)
        if self.worker:
            self.worker.latest = request_id
        return request_id

    def cancel_suggestion(self) -> None:
        """Stop the running generation now; its pieces will not paint."""
        self._tab_waiting = False
        self.current_id = 0              # no request is current, as at start (ids start at 1; -1 is _in_flight's none)
        if self.worker:
            self.worker.latest = 0           # the running one stops at its next token
        self.debounce.stop()
        self.alternatives.clear()
        self._confirming = None                  # an entry left half-taken teaches nothing
        self._show_alternatives()

    def suggest_now(self) -> None:
        editor = self.current_editor or self.body_edit
        if not self.model_ready or self.worker is None:
            return
        before = editor.text_before_cursor()
        if not before.strip() or not editor.cursor_at_line_end():
            return
        if editor is self.subject_edit:
            prompt, lifted = subject_prompt(self.to_edit.text(), before)
            stop = ["\n"]
        else:
            prompt, lifted = body_prompt(self.to_edit.text(), self.subject_edit.toPlainText(), before)
            stop = ["\n\n"]
            if self.settings.learn_while_writing:       # learned after this request (ModelWorker.observe)
                self.request_observe.emit(before, editor.not_typed_ranges())
        self.current_id = self._new_request_id()
        self.alternatives.clear()
        self._show_alternatives()
        self._lifted_space = lifted
        self._at_line_start = before.endswith("\n")
        self.current_editor = editor
        editor.start_ghost()
        self._partly_taken = set()
        self._request_place = (editor, editor.anchor)    # the place the request, and its alternatives, are for
        request = self.settings.suggestion_request(prompt, stop, leave_out=self.passed_over[editor].here(before),
                                                   lifted=lifted)
        self._in_flight = self.current_id
        self._last_request = request
        self.request_generation.emit(self.current_id, request)
        if self.worker:      # kept on this thread too, so learning can answer it between two emails
            self.worker.post(self.current_id, request)

    def _on_piece(self, request_id: int, piece: Piece) -> None:
        self._received[request_id] = self._received.get(request_id, 0) + 1
        self._show_piece(request_id, piece)
        early = self._early_finish.get(request_id)
        if early is not None and self._received[request_id] >= early.get("pieces", 0):
            self._on_finished(request_id, self._early_finish.pop(request_id))

    def _show_piece(self, request_id: int, piece: Piece) -> None:
        editor = self.current_editor
        alternative = request_id == self.alternatives.request_id
        if (request_id != self.current_id and not alternative) or editor is None:
            return                       # stale: a newer request or a cancel came since
        shown = self.alternatives.pending if alternative else editor.pieces
        if not shown:
            piece = replace(piece, text=trim_start(piece.text, self._lifted_space, self._at_line_start))
            if not piece.text:
                return
        if alternative:
            self.alternatives.pending.append(piece)        # kept for Alt+], not painted
        else:
            editor.add_ghost(piece)

    def _on_finished(self, request_id: int, stats: dict) -> None:
        if self._received.get(request_id, 0) < stats.get("pieces", 0):
            self._early_finish[request_id] = stats       # its last pieces are still on their way
            return
        self._received.pop(request_id, None)
        if request_id == self.alternatives.request_id:
            if stats.get("stop_reason") == "cancelled":
                self.alternatives.request_id = -1
                return
            if request_id == self.alternatives.ready_id:
                self.alternatives.add_ready(self.alternatives.pending, stats)
            else:
                self.alternatives.add(self.alternatives.pending, stats)
            self._show_alternatives()
            self._next_alternative()
            return
        if request_id != self.current_id:
            return
        self._in_flight = -1
        self.last_stats = stats
        if self._tab_waiting and self.current_editor is not None:
            self._tab_waiting = False
            self.current_editor.accept_ghost()
        editor = self.current_editor
        count = self._show_library_words(editor.pieces if editor else [], stats.get("withheld", ""))
        self._show_figures(stats, count)
        if editor is not None and self._request_place == (editor, editor.anchor):
            # First the same request more readily (app/alternatives.py), where there is anything readier.
            # (not where no library entry can come: a locked or empty library would spend a request on nothing)
            ready = (self._last_request.readier(self.settings.threshold, editor.pieces)
                     if self._library_entries else None)
            if editor.has_ghost():
                self.alternatives.start((editor, editor.anchor), editor.pieces, ready, figures=stats)
                # Rank 0 is the model's own top choice: the suggestion itself, unless a library chunk led it.
                self.alternatives.next_rank = 0 if editor.pieces[0].from_chunk else 1
                self._next_alternative()
            elif ready is not None:
                # Nothing to suggest ("Connect with me here:" -- the model would start a new paragraph):
                # only the readier request, whose library entry Alt+] brings to the empty place.
                self.alternatives.start((editor, editor.anchor), [], ready, model_alternatives=False)
                self._next_alternative()

    # ------------------------------------------------------------ alternatives (Alt+] / Alt+[)

    def _next_alternative(self) -> None:
        """Work out the next alternative on the suggestion lane, if more are wanted (one at a time)."""
        alts = self.alternatives
        if not alts.wants_more() or self._last_request is None or self.worker is None:
            alts.request_id = -1
            return
        alts.request_id, alts.pending = self._new_request_id(), []   # typing makes a newer request: this one stops
        if alts.ready_request is not None:         # first: the same request more readily (app/alternatives.py)
            request, alts.ready_request, alts.ready_id = alts.ready_request, None, alts.request_id
            self.request_generation.emit(alts.request_id, request)
            return
        rank, alts.next_rank = alts.next_rank, alts.next_rank + 1
        self.request_generation.emit(alts.request_id, replace(self._last_request, first_rank=rank))

    def cycle_suggestion(self, step: int) -> None:
        """Alt+] / Alt+[: show the next or previous suggestion for this place."""
        editor, alts = self.current_editor, self.alternatives
        if not self._alternatives_on_screen() or alts.count < 2:
            if editor is not None and editor.has_ghost():
                self.statusBar().showMessage("No other suggestion here (yet).", 3000)
            return
        editor.start_ghost()
        for piece in alts.step(step):
            editor.add_ghost(piece)
        # What the status bar says of the library is about the suggestion now shown (the first one's
        # withheld detail only with it).
        withheld = self.last_stats.get("withheld", "") if alts.index == 0 else ""
        self._show_figures(alts.shown_figures, self._show_library_words(editor.pieces, withheld), withheld)
        self._show_alternatives()

    def _show_figures(self, stats: dict, count: int, withheld: str | None = None) -> None:
        """The technical figures of the suggestion on screen, one hover away for those who want them
        (*count*: its words from the library; *withheld*: its stopped-before detail, default its own)."""
        if "tokens" not in stats:
            self.stats_label.setToolTip("")
            return
        withheld = stats.get("withheld", "") if withheld is None else withheld
        secs = max(stats.get("seconds", 0), 1e-6)
        self.stats_label.setToolTip(
            (WITHHELD_HINT if withheld and not count else "") +
            f"This suggestion: {stats['tokens']} tokens at {stats['tokens'] / secs:.0f} tokens/s, "
            f"{stats['chunks']} library insertion(s), {stats['passes_saved']} model steps saved")

    def _show_library_words(self, pieces: list[Piece], withheld: str = "") -> int:
        """The status bar's "2 words from your library (phone)" for the suggestion on screen; how many words."""
        from_library = [p for p in pieces if p.from_chunk]
        count = sum(len(p.text.split()) for p in from_library)
        self.stats_label.setText(words_from_library(count, from_library[0].label) if count else
                                 withheld_line(withheld) if withheld else "")
        return count

    def _alternatives_on_screen(self) -> bool:
        """Whether the suggestion on screen is the place the known alternatives belong to."""
        editor = self.current_editor
        return (editor is not None and self.alternatives.place == (editor, editor.anchor)
                and (editor.has_ghost() or (self.alternatives.count > 1        # an empty place with an entry
                                            and editor.anchor == editor.textCursor().position()
                                            and editor.hasFocus())))      # Alt+] from To must not paint the body

    def _show_alternatives(self) -> None:
        """The "2/3" counter, while the suggestion it counts is on screen."""
        self.alt_label.setText(self.alternatives.label() if self._alternatives_on_screen() else "")

    def _on_failed(self, request_id: int, message: str) -> None:
        self._received.pop(request_id, None)
        if request_id == self.alternatives.request_id:
            self.alternatives.request_id = -1        # no more alternatives here; the suggestion stays
            if request_id == self.alternatives.ready_id:
                self._next_alternative()             # the readier one failed: the model's may still come
            return
        if request_id == self.current_id:
            self._in_flight = -1
            self._tab_waiting = False
            self.statusBar().showMessage(f"Suggestion failed: {message.splitlines()[0]}", 8000)

    def _on_dismissed(self, editor: GhostTextEdit) -> None:
        """Esc: stop the suggestion; its first chunk is not suggested again in this sentence, and (with
        Learn while I write) counts against the place it was offered -- not where the user took the
        entry's first words with Ctrl+Right (they wanted part of it; the place would hold those words)."""
        self.cancel_suggestion()
        before = editor.text_before_cursor()
        for piece in editor.last_dismissed:
            if piece.from_chunk:
                self.passed_over[editor].add(piece.chunk_id, before)
                if self.settings.learn_while_writing and piece.chunk_id not in self._partly_taken:
                    self.request_dismiss.emit(piece.chunk_id, before)
                return
            before += piece.text

    def _on_learned_here(self, items: list) -> None:
        first = items[0]
        if first.get("taken"):                  # an entry taken from the readier alternative (ModelWorker.confirm)
            what = f"after “{first['context']}” comes your {first['taken']} (you took it)"
        else:
            what = f"“{first['context']}” ({'typed by you' if first['origin'] == 'learned' else 'turned down'})"
        self.statusBar().showMessage(f"Learned: {what}. "
                                     "Tools → What Chunkwise learned… lists and removes it.", 6000)

    def open_learned(self) -> None:
        from .library import LearnedDialog

        dialog = LearnedDialog(self)
        dialog.exec()

    def forget_learned(self, confirm: bool = True) -> None:
        if self.worker is None:
            return
        if self.locked_message:              # say so before asking, not after the user said yes
            QMessageBox.information(self, "Forget what Chunkwise learned", LOCKED_HINT)
            return
        if confirm and QMessageBox.question(
                self, "Forget what Chunkwise learned",
                "Remove everything Chunkwise learned from your writing: phrases learned while you typed, "
                "places you turned suggestions down, chunks mined from your emails and the data behind "
                "'Also predict from my writing'? Your own library entries stay. This cannot be undone.",
                QMessageBox.Yes | QMessageBox.Cancel, QMessageBox.Cancel) != QMessageBox.Yes:
            return
        self.cancel_suggestion()
        self.request_forget.emit()

    def _on_forgotten(self, counts: dict) -> None:
        self.statusBar().showMessage(
            f"Forgot {counts['contexts']} learned phrase(s), {counts['chunks']} mined chunk(s) and "
            f"the rest learned from your writing ({counts['knn_rows']} entries).", 8000)

    def _on_early_tab(self, editor: GhostTextEdit) -> None:
        """Tab in the typing pause or while the suggestion streams: wait for it, never type a tab."""
        if not self.model_ready:
            return
        if self.debounce.isActive():       # still in the typing pause: ask now rather than wait
            self.debounce.stop()
            self.suggest_now()
        if self._in_flight == self.current_id and editor is self.current_editor:
            self._tab_waiting = True

    def _on_accepted(self, pieces: list, editor: GhostTextEdit | None = None) -> None:
        for chunk_id in {p.chunk_id for p in pieces if p.from_chunk}:
            self.request_use.emit(chunk_id)
            self._partly_taken.add(chunk_id)
        self._confirm_taken(pieces, editor)
        self.alternatives.clear()                 # taken: what is left belongs to this suggestion alone
        self._show_alternatives()
        if editor is not None and not editor.pieces:
            self.current_editor = editor
            self._schedule()             # the whole suggestion taken: the next one follows

    def _confirm_taken(self, pieces: list, editor: GhostTextEdit | None) -> None:
        """Taken from the readier alternative (Alt+]), in the body, with Learn while I write on: the phrase
        before the entry is learned, so there it comes by itself the next time.  Sent once the whole entry
        is in the email (Ctrl+Right may take it a word at a time; Esc halfway teaches nothing); the phrase
        is the text before the place the alternative was for, plus its words before the entry, whatever
        the user typed through since."""
        alts = self.alternatives
        if alts.shows_ready() and editor is self.body_edit and self.settings.learn_while_writing:
            option = alts.options[alts.index]
            lead = next(i for i, p in enumerate(option) if p.from_chunk and p.chunk_id == alts.offered.chunk_id)
            _editor, anchor = alts.place
            before = editor.text_before(anchor) + "".join(p.text for p in option[:lead])
            self._confirming = (alts.offered.chunk_id, before)
        if self._confirming is None or editor is not self.body_edit:
            return
        chunk_id, before = self._confirming
        if any(p.from_chunk and p.chunk_id == chunk_id for p in editor.pieces):
            return                                      # part of the entry is still to take
        self._confirming = None
        if editor.toPlainText().startswith(before):     # the words before it still stand as they were
            self.request_confirm.emit(chunk_id, before)

    def _toggle_spelling(self, checked: bool) -> None:
        self.settings.spell_check = checked
        for editor in (self.body_edit, self.subject_edit):
            editor.spelling.set_enabled(checked)
        self._save_settings()

    def _toggle_marks(self, checked: bool) -> None:
        self.settings.show_chunk_marks = checked
        self.body_edit.set_marks_visible(checked)
        self.subject_edit.set_marks_visible(checked)
        self._save_settings()

    # ------------------------------------------------------------ settings and library

    def apply_settings(self, new: Settings) -> None:
        reload = (new.model_path, new.db_path, new.n_ctx, new.threads) != (
            self.settings.model_path, self.settings.db_path, self.settings.n_ctx, self.settings.threads)
        self.settings = new
        self.debounce.setInterval(new.debounce_ms)
        self.request_threshold.emit(new.threshold)
        self._save_settings()
        if reload:
            self.cancel_suggestion()
            self.load_model()

    def set_threshold(self, value: float) -> None:
        """Live from the slider: the next suggestion uses it."""
        self.settings.threshold = value
        self.request_threshold.emit(value)

    def _save_settings(self) -> None:
        try:
            save_settings(self.settings, self.settings_file)
        except OSError as exc:
            self.statusBar().showMessage(f"Settings not saved: {exc.strerror}", 8000)

    def open_settings(self) -> None:
        from .settings_dialog import SettingsDialog

        dialog = SettingsDialog(self, self.settings)
        dialog.exec()

    def learn_from_writing(self, paths: list[str] | None = None) -> None:
        """Mine the user's sent mail or documents: phrases they repeat become chunks (and kNN-LM data)."""
        if paths is None:
            paths, _ = QFileDialog.getOpenFileNames(
                self, "Learn from my writing: choose sent emails or documents", "",
                "Text and mail (*.txt *.md *.eml *.mbox);;All files (*)")
        if not paths or self.worker is None:
            return
        if not self.model_ready:
            self.statusBar().showMessage("The model is still loading; try again in a moment.", 6000)
            return
        self.cancel_suggestion()
        self.request_learn.emit({"paths": list(paths), "gamma": 0.5, "corpus_teacher": True, "knn": True})

    def _on_learned(self, info: dict) -> None:
        self._on_store_ready(info)
        phrases = info.get("learned_phrases", 0)
        # Short enough for the status bar beside the model's name: the longer sentence was cut off
        # mid-word (tools/xvfb_learn_menu.sh). What was learned is listed in What Chunkwise learned….
        self.statusBar().showMessage(
            f"Learned from {info['documents']} document(s): {info['new_chunks']} phrase(s)"
            + (f", {phrases} way(s) into your details" if phrases else "") + ".", 10000)

    def open_library(self) -> None:
        from .library import LibraryDialog

        dialog = LibraryDialog(self)
        dialog.exec()

    def store_path(self) -> str:
        return self.settings.store_path()

    def add_selection_as_snippet(self) -> bool:
        """Edit → Add selection as snippet: the chunk dialog, its context filled with the words before
        the selection; cancelling it adds nothing and opens nothing else (issue 14.7).  The chunk is
        added in the library's lane; the status bar says when it is in.  Returns whether it was sent."""
        cursor = self.body_edit.textCursor()
        text = cursor.selectedText().replace("\u2029", "\n")
        if not text.strip():
            QMessageBox.information(self, "Add snippet", "Select some text in the email first.")
            return False
        if self.locked_message or self.lane is None:
            QMessageBox.information(self, "Add snippet", LOCKED_HINT)
            return False
        from chunkwise.core.text import lead_in

        from .library import ChunkEditDialog

        context = lead_in(self.body_edit.text_before(cursor.selectionStart()))
        dialog = ChunkEditDialog(self, prefill={"text": text, "kind": "snippet",
                                                "contexts": [context] if context else []},
                                 prepare=None if self.locked_message else self.request_prepare.emit)
        if dialog.exec() != QDialog.Accepted:
            return False
        v = dialog.values()

        def added(_chunk_id):
            self.statusBar().showMessage("Snippet added to your library (Tools → Your library…).", 5000)

        self.lane.submit(lambda store: store.add_chunk(v["text"], v["kind"], v["contexts"], label=v["label"]),
                         added, lambda message, _locked: QMessageBox.warning(self, "Add snippet", message),
                         changed=lambda chunk_id: self.request_refresh.emit([chunk_id]))
        return True

    # ------------------------------------------------------------ closing

    def closeEvent(self, event) -> None:
        if self.confirm_close and self.dirty and self.body_edit.toPlainText().strip():
            answer = QMessageBox.question(
                self, "Chunkwise", "This email has not been saved or sent. Save it as .eml before closing?",
                QMessageBox.Save | QMessageBox.Discard | QMessageBox.Cancel, QMessageBox.Save)
            if answer == QMessageBox.Cancel or (answer == QMessageBox.Save and not self.save_email()):
                event.ignore()
                return
            self.autosave_file.clear()       # saved or discarded on purpose: nothing to restore
        elif self.dirty:
            self.autosave_now()
        self.shutdown()
        super().closeEvent(event)

    def shutdown(self) -> None:
        self.autosave.stop()
        self.debounce.stop()
        if self.worker_thread:
            self.worker_thread.stop()
            self.worker_thread = None
