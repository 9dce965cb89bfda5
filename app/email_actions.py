"""The File menu's side of the compose window: the email in it, its autosave, the .eml it is saved to.

Every email in progress has its own autosave file (``app/autosave.py``), written a second after each
change, so New, Open or a crash never lose one; File → Open Recent lists them beside the emails
opened or saved lately.  A saved email is a .eml a mail client opens as a draft (the mail client's
word; in code "draft" means speculative drafting only).
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from PySide6.QtCore import QStandardPaths, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QFileDialog, QMessageBox

from chunkwise.core.paths import atomic_write

from .autosave import FILE_PREFIX, AutosaveFile, AutosaveFolder, describe
from .email_file import OPEN_FILTER, EmailFileError, eml_message, read_email_file, suggested_file_name

MAX_RECENT = 8


def documents_folder() -> str:
    return QStandardPaths.writableLocation(QStandardPaths.DocumentsLocation) or str(Path.home())


class EmailActions:
    """Mixed into ComposeWindow (which owns to_edit, subject_edit, body_edit, settings, autosave)."""

    # ------------------------------------------------------------ state

    def _init_email(self, autosave_file: AutosaveFile | None) -> None:
        self._dirty = False
        self._loading = False            # filling the window from a file: not an edit
        self.file_path = ""              # the .eml this email was opened from or saved to
        if autosave_file is not None:
            self.autosaves = AutosaveFolder(autosave_file.path.parent)
            self.autosave_file = autosave_file
        else:
            self.autosaves = AutosaveFolder()
            self._adopt_single_autosave()
            found = self.autosaves.in_progress()
            self.autosave_file = found[0][0] if found else self.autosaves.new()

    def _adopt_single_autosave(self) -> None:
        """Chunkwise before several emails in progress kept one ``draft.json`` (its name on users'
        disks) beside the library: move it in."""
        legacy = self.autosaves.folder.parent / "draft.json"
        if legacy.exists():
            try:
                self.autosaves.folder.mkdir(parents=True, mode=0o700, exist_ok=True)
                legacy.replace(self.autosaves.folder / f"{FILE_PREFIX}-restored.json")
            except OSError:
                pass

    @property
    def dirty(self) -> bool:
        """Changed since it was opened or saved (the title shows it)."""
        return self._dirty

    @dirty.setter
    def dirty(self, value: bool) -> None:
        self._dirty = value
        self.setWindowModified(value)

    def _update_title(self) -> None:
        name = Path(self.file_path).name if self.file_path else (self.subject_edit.toPlainText().strip() or "New email")
        self.setWindowTitle(f"{name}[*] — Chunkwise")
        self.setWindowModified(self._dirty)

    def email_text(self) -> str:
        return self.body_edit.toPlainText()

    def email_fields(self) -> dict:
        """To, Subject and body as they are in the window."""
        return {"to": self.to_edit.text(), "subject": self.subject_edit.toPlainText(),
                "body": self.body_edit.toPlainText()}

    def _changed(self) -> None:
        if self._loading:
            return
        self.dirty = True
        self.autosave.start()
        self._update_title()

    # ------------------------------------------------------------ autosave

    def autosave_now(self) -> None:
        """Autosave: the email as it is now, with its library marks, so a crash or a kill loses nothing."""
        try:
            if any(self.email_fields().values()):
                self.autosave_file.save({**self.email_fields(), "marks": self.body_edit.labelled_marks(),
                                         "file": self.file_path})
            else:
                self.autosave_file.clear()
        except OSError as exc:
            self.statusBar().showMessage(f"Draft not autosaved: {exc.strerror}", 8000)

    def _restore_autosave(self) -> None:
        saved = self.autosave_file.load()
        if saved:
            self._show_email(saved, self.autosave_file, saved.get("file", ""), dirty=True)
            self.statusBar().showMessage("Restored the email you were writing", 6000)
        else:
            self._update_title()

    def _keep_current(self) -> None:
        """Before another email takes the window: this one stays an email in progress if unsaved."""
        self.autosave.stop()
        if self.dirty and any(self.email_fields().values()):
            self.autosave_now()
            self.statusBar().showMessage("The email you were writing is kept under File → Open Recent.", 6000)

    def _show_email(self, fields: dict, autosave_file: AutosaveFile, file_path: str, dirty: bool) -> None:
        self.cancel_suggestion()
        for editor in (self.body_edit, self.subject_edit):
            editor.clear_ghost()
            self.passed_over[editor].forget()        # chunks typed over belong to the email they were typed in
        self._loading = True
        try:
            self.to_edit.setText(fields.get("to", ""))
            self.subject_edit.setPlainText(fields.get("subject", ""))
            self.body_edit.setPlainText(fields.get("body", ""))
            self.body_edit.mark_not_typed()      # not typed in this session: not learned from
            self.body_edit.restore_marks(fields.get("marks", []))
            self.body_edit.moveCursor(self.body_edit.textCursor().MoveOperation.End)
        finally:
            self._loading = False
        self.autosave_file, self.file_path, self.dirty = autosave_file, file_path, dirty
        self.autosave.stop()
        self._update_title()
        self.body_edit.setFocus()

    # ------------------------------------------------------------ File menu

    def new_email(self) -> None:
        """File → New: an empty email; the one in the window stays in progress if it was not saved."""
        self._keep_current()
        self._show_email({}, self.autosaves.new(), "", dirty=False)

    def open_email(self, path: str | None = None) -> bool:
        """File → Open…: a .eml (its plain-text part) or a text file, as a new email in progress."""
        if not path:
            path, _ = QFileDialog.getOpenFileName(self, "Open email", documents_folder(), OPEN_FILTER)
        if not path:
            return False
        try:
            fields = read_email_file(path)
        except EmailFileError as exc:
            QMessageBox.warning(self, "Open email", str(exc))
            return False
        self._keep_current()
        eml = path if Path(path).suffix.lower() == ".eml" else ""     # a text file is saved as a new .eml
        self._show_email(fields, self.autosaves.new(), eml, dirty=not eml)
        self._remember(path)
        self.statusBar().showMessage(f"Opened {Path(path).name}", 4000)
        return True

    def open_autosave(self, autosave_file: AutosaveFile) -> None:
        """File → Open Recent → an email in progress."""
        saved = autosave_file.load()
        if saved is None:
            QMessageBox.information(self, "Open Recent", "That draft is no longer there.")
            return
        self._keep_current()
        self._show_email(saved, autosave_file, saved.get("file", ""), dirty=True)

    def save_email(self, path: str | None = None, ask: bool = False) -> str | None:
        """File → Save (to the email's own .eml, or asking where) and Save As… (``ask``)."""
        if not path and self.file_path and not ask:
            path = self.file_path
        if not path:
            start = self.file_path or str(Path(documents_folder()) / suggested_file_name(self.email_fields()))
            path, _ = QFileDialog.getSaveFileName(self, "Save email", start, "Email (*.eml)")
        if not path:
            return None
        if not Path(path).suffix:
            path += ".eml"
        try:
            atomic_write(path, eml_message(self.email_fields(), self.settings.from_address).as_bytes(), mode=0o600)
        except (OSError, ValueError) as exc:
            QMessageBox.warning(self, "Save email", f"Could not save {path}: {getattr(exc, 'strerror', None) or exc}")
            return None
        self.file_path = path
        self.dirty = False
        self.autosave.stop()
        self.autosave_file.clear()           # saved: no longer an email in progress (an edit makes it one again)
        self._remember(path)
        self._update_title()
        self.statusBar().showMessage(f"Saved {path}", 3000)
        return path

    def _remember(self, path: str) -> None:
        path = str(Path(path).resolve())
        recent = [p for p in self.settings.recent_files if p != path]
        self.settings.recent_files = [path] + recent[: MAX_RECENT - 1]
        self._save_settings()

    def _fill_recent_menu(self) -> None:
        """File → Open Recent, built when it opens: emails in progress, then files opened or saved."""
        menu = self.recent_menu
        menu.clear()
        others = [(f, e) for f, e in self.autosaves.in_progress() if f.path != self.autosave_file.path]
        if others:
            menu.addSection("Emails in progress")
            for autosave_file, fields in others[:MAX_RECENT]:
                menu.addAction(describe(fields)).triggered.connect(
                    lambda _=False, f=autosave_file: self.open_autosave(f))
        files = [p for p in self.settings.recent_files if Path(p).exists()]
        if files:
            menu.addSection("Files")
            for path in files:
                action = menu.addAction(Path(path).name)
                action.setToolTip(path)
                action.triggered.connect(lambda _=False, p=path: self.open_email(p))
        if not others and not files:
            menu.addAction("Nothing recent").setEnabled(False)

    # ------------------------------------------------------------ handing the email on

    def copy_email(self) -> None:
        parts = []
        if self.to_edit.text().strip():
            parts.append(f"To: {self.to_edit.text().strip()}")
        if self.subject_edit.toPlainText().strip():
            parts.append(f"Subject: {self.subject_edit.toPlainText().strip()}")
        text = ("\n".join(parts) + "\n\n" if parts else "") + self.email_text()
        QGuiApplication.clipboard().setText(text)
        self.statusBar().showMessage("Email copied to the clipboard", 3000)

    def mailto_url(self) -> QUrl:
        to = quote(self.to_edit.text().strip(), safe="@,")
        query = f"subject={quote(self.subject_edit.toPlainText().strip())}&body={quote(self.email_text())}"
        return QUrl(f"mailto:{to}?{query}")

    def open_mail_client(self) -> None:
        if not QDesktopServices.openUrl(self.mailto_url()):
            QMessageBox.information(self, "Open in mail client", "No mail client is set up on this system.")
            return
        self.learn_from_sent_email()

    def learn_from_sent_email(self) -> None:
        """Opt-in (Settings): the email handed to the mail client is learned from, as Tools → Learn does."""
        if self.settings.learn_from_sent and self.model_ready and self.worker and self.email_text().strip():
            self.request_learn.emit({"texts": [self.email_text()], "gamma": 0.5, "corpus_teacher": True,
                                     "knn": True})
