"""File, Edit and Help menus of the editor, driven as a user does: menu actions, keys (issue 14.10-14.14, 14.17).

No model is needed here (start_worker=False): these are the editor's own duties.
"""
import email
import email.policy

import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication  # noqa: E402
from PySide6.QtWidgets import QFileDialog, QMessageBox  # noqa: E402

from chunkwise.app.autosave import AutosaveFile, AutosaveFolder  # noqa: E402
from chunkwise.core import Piece  # noqa: E402
from chunkwise.app.settings import Settings  # noqa: E402
from chunkwise.app.window import ComposeWindow  # noqa: E402


def action(window, menu_title: str, text: str):
    """The QAction a user clicks: menu by title, item by its text without the & mnemonic."""
    for menu_action in window.menuBar().actions():
        if menu_action.text().replace("&", "") == menu_title:
            menu = menu_action.menu()
            menu.aboutToShow.emit()
            for item in menu.actions():
                if item.text().replace("&", "") == text:
                    return item
            raise AssertionError(f"no {text!r} in {menu_title}: {[a.text() for a in menu.actions()]}")
    raise AssertionError(f"no menu {menu_title!r}")


def recent_items(window) -> list[str]:
    window.recent_menu.aboutToShow.emit()
    return [a.text() for a in window.recent_menu.actions() if not a.isSeparator()]


@pytest.fixture
def window(qtbot, tmp_path):
    def make(folder=tmp_path / "drafts", **settings):
        first = AutosaveFolder(folder).in_progress()
        w = ComposeWindow(Settings(debounce_ms=50, **settings), tmp_path / "settings.json", start_worker=False,
                          autosave_file=first[0][0] if first else AutosaveFolder(folder).new())
        w.confirm_close = False
        qtbot.addWidget(w)
        w.show()
        return w
    return make


def test_save_writes_a_draft_a_mail_client_opens_and_the_title_follows(qtbot, window, tmp_path, monkeypatch):
    """Bugs caught: an empty Subject header, no From/Date/X-Unsent (a mail client opened the file as
    a received message), Save asking again for a file it already has, the title not saying which
    file and whether it is saved."""
    w = window(from_address="Ana Jordan <ana@example.org>")
    qtbot.keyClicks(w.to_edit, "sam@example.org")
    w.body_edit.setFocus()
    qtbot.keyClicks(w.body_edit, "Hi Sam, see you at noon.")
    assert w.isWindowModified() and "New email" in w.windowTitle()
    asked = []
    path = tmp_path / "docs" / "noon.eml"
    path.parent.mkdir()

    def save_dialog(parent, caption, start, filter_):
        asked.append(start)
        return str(path), filter_
    monkeypatch.setattr(QFileDialog, "getSaveFileName", save_dialog)
    action(w, "File", "Save").trigger()
    msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    assert msg["X-Unsent"] == "1" and msg["From"] == "Ana Jordan <ana@example.org>" and msg["Date"]
    assert msg["To"] == "sam@example.org" and "Subject" not in msg
    assert msg.get_body(("plain",)).get_content().strip() == "Hi Sam, see you at noon."
    assert asked and asked[0].endswith("email.eml")                     # no subject: a plain name
    assert (path.stat().st_mode & 0o777) == 0o600
    assert not w.isWindowModified() and w.windowTitle().startswith("noon.eml")
    # the next Save goes to the same file without asking
    qtbot.keyClicks(w.body_edit, " Bring the plans.")
    assert w.isWindowModified()
    action(w, "File", "Save").trigger()
    assert len(asked) == 1 and b"Bring the plans." in path.read_bytes()


def test_new_keeps_the_email_in_progress_and_open_recent_brings_it_back(qtbot, window):
    """Bugs caught: New clearing an unsaved email for good, emails in progress that do not survive a restart,
    only one email in progress surviving a crash."""
    w = window()
    w.body_edit.setFocus()
    qtbot.keyClicks(w.body_edit, "First email, not saved.")
    action(w, "File", "New email").trigger()
    assert w.email_fields() == {"to": "", "subject": "", "body": ""} and not w.isWindowModified()
    qtbot.keyClicks(w.subject_edit, "Second")
    w.body_edit.setFocus()
    qtbot.keyClicks(w.body_edit, "Second email.")
    qtbot.waitUntil(lambda: len(w.autosaves.in_progress()) == 2, timeout=5000)     # autosaved a second later
    assert any("First email" in item for item in recent_items(w))
    # a crash: nothing closed properly; a new window finds both emails
    again = window(folder=w.autosaves.folder)
    assert again.email_fields()["body"] == "Second email."
    again.recent_menu.aboutToShow.emit()                                     # the user opens File → Open Recent
    first = [a for a in again.recent_menu.actions() if "First email" in a.text()]
    assert first
    first[0].trigger()
    assert again.email_fields()["body"] == "First email, not saved."
    assert any("Second" in item for item in recent_items(again))            # the other one is still there


def test_open_reads_an_eml_from_a_mail_client_and_refuses_what_it_cannot_edit(qtbot, window, tmp_path, monkeypatch):
    """Bugs caught: an .eml with an HTML alternative opened as raw MIME, a binary or empty file
    replacing the email in the window, the opened file missing from Open Recent."""
    msg = email.message.EmailMessage()
    msg["To"] = "lee@example.org"
    msg["Subject"] = "Quarterly plan"
    msg.set_content("Hi Lee,\n\nHere is the plan.\n")
    msg.add_alternative("<p>Hi Lee,</p><p>Here is the plan.</p>", subtype="html")
    eml = tmp_path / "plan.eml"
    eml.write_bytes(bytes(msg))
    w = window()
    w.body_edit.setFocus()
    qtbot.keyClicks(w.body_edit, "Keep me.")
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: warnings.append(text))
    for bad, content in (("photo.eml", b"\x89PNG\x00\x00binary"), ("empty.txt", b"")):
        (tmp_path / bad).write_bytes(content)
        monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, p=tmp_path / bad: (str(p), ""))
        action(w, "File", "Open…").trigger()
        assert w.email_fields()["body"] == "Keep me." and bad in warnings[-1]
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a: (str(eml), ""))
    action(w, "File", "Open…").trigger()
    assert w.email_fields() == {"to": "lee@example.org", "subject": "Quarterly plan",
                                "body": "Hi Lee,\n\nHere is the plan.\n"}
    assert w.windowTitle().startswith("plan.eml") and not w.isWindowModified()
    items = recent_items(w)
    assert "plan.eml" in items and any("Keep me." in item for item in items)


def test_library_text_keeps_its_highlight_after_a_restored_autosave(qtbot, window):
    """Issue 14.17. Bug caught: the chunk marks lived only in the document's formats, so a
    restored autosave showed the user's phone number as if typed by hand."""
    w = window()
    w.body_edit.setFocus()
    qtbot.keyClicks(w.body_edit, "Call me on")
    w.body_edit.start_ghost()
    w.body_edit.add_ghost(Piece(" (555) 123-4567", "chunk", 7, "pii", "phone", 0.8))
    qtbot.keyClick(w.body_edit, Qt.Key_Tab)
    qtbot.keyClicks(w.body_edit, " after six.")
    marks = w.body_edit.chunk_marks()
    assert marks == [(10, 25, 7)]
    qtbot.waitUntil(lambda: bool(w.autosave_file.load()) and "six" in w.autosave_file.load()["body"], timeout=5000)
    again = window(folder=w.autosaves.folder)
    assert again.email_fields()["body"] == "Call me on (555) 123-4567 after six."
    assert again.body_edit.chunk_marks() == marks
    assert again.body_edit.labelled_marks()[0][3] == "phone"          # the tooltip's label too


def test_edit_menu_acts_on_the_field_with_the_focus_and_help_explains(qtbot, window):
    """Issue 14.14. Bugs caught: Edit actions missing or acting on the body when To has the focus,
    Help pages missing."""
    w = window()
    w.to_edit.setFocus()
    qtbot.keyClicks(w.to_edit, "ann@example.org")
    action(w, "Edit", "Undo").trigger()
    assert w.to_edit.text() == ""
    action(w, "Edit", "Redo").trigger()
    assert w.to_edit.text() == "ann@example.org"
    w.body_edit.setFocus()
    qtbot.keyClicks(w.body_edit, "Move this line.")
    action(w, "Edit", "Select All").trigger()
    action(w, "Edit", "Cut").trigger()
    assert w.body_edit.toPlainText() == "" and QGuiApplication.clipboard().text() == "Move this line."
    action(w, "Edit", "Paste").trigger()
    assert w.body_edit.toPlainText() == "Move this line." and w.to_edit.text() == "ann@example.org"
    for item, words in (("Keyboard shortcuts", "Ctrl+Right"), ("How suggestions and the library work", "library")):
        action(w, "Help", item).trigger()
        shown = [b for b in w.findChildren(QMessageBox) if b.isVisible() and words in b.text()]
        assert shown
        shown[0].close()


def test_an_autosave_from_an_older_chunkwise_is_adopted(qtbot, tmp_path, monkeypatch):
    """The single draft.json an older Chunkwise kept beside the library is found by the autosave folder,
    which keeps the names already on users' disks (drafts/draft-*.json)."""
    from chunkwise.core.paths import data_dir

    legacy = data_dir() / "draft.json"
    legacy.parent.mkdir(parents=True, exist_ok=True)
    AutosaveFile(legacy).save({"to": "", "subject": "Old", "body": "Written before the update."})
    w = ComposeWindow(Settings(), tmp_path / "settings.json", start_worker=False)
    w.confirm_close = False
    qtbot.addWidget(w)
    assert w.email_fields()["body"] == "Written before the update." and not legacy.exists()
    assert w.autosave_file.path == data_dir() / "drafts" / "draft-restored.json"


def test_ghost_and_library_colours_follow_a_dark_theme(qtbot, window, monkeypatch):
    """Issue 14.15. Bugs caught: fixed light-yellow highlights and grey ghost text on a dark
    desktop (unreadable), accepted library text keeping the light tint after a switch to dark,
    CHUNKWISE_THEME / the desktop's dark scheme not reaching the window."""
    from PySide6.QtGui import QPalette, QTextCursor
    from PySide6.QtWidgets import QApplication

    from chunkwise.app.theme import apply_desktop_theme, contrast, dark_palette

    w = window()
    body = w.body_edit
    body.setFocus()
    qtbot.keyClicks(body, "Call me on")
    body.start_ghost()
    body.add_ghost(Piece(" (555) 123-4567", "chunk", 7, "pii", "phone", 0.8))
    qtbot.keyClick(body, Qt.Key_Tab)

    def mark_background():
        cursor = QTextCursor(body.document())
        cursor.setPosition(12)
        return cursor.charFormat().background().color()

    def readable(c, palette):
        base, text = palette.color(QPalette.Base), palette.color(QPalette.Text)
        assert contrast(c.ghost, base) >= 3.0                      # faint, yet legible
        assert contrast(c.ghost, text) >= 1.8                      # and visibly not typed text
        assert contrast(c.chunk_text, c.chunk_background) >= 4.5
        assert contrast(text, c.mark_background) >= 4.5

    light = body.colours
    assert not light.dark and mark_background() == light.mark_background
    readable(light, body.palette())
    w.setPalette(dark_palette())                                  # what a desktop switching to dark does
    dark = body.colours
    assert dark.dark and dark.chunk_background.lightness() < 100
    readable(dark, body.palette())
    assert mark_background() == dark.mark_background               # the email's marks repainted too

    app = QApplication.instance()
    palette, style = app.palette(), app.style().name()
    monkeypatch.setenv("CHUNKWISE_THEME", "dark")
    try:
        apply_desktop_theme(app)
        assert app.palette().color(QPalette.Base).lightness() < 128
    finally:
        app.setPalette(palette)
        app.setStyle(style)


def test_a_misspelling_after_an_emoji_is_underlined_and_corrected_in_place(qtbot, window):
    """Qt counts an emoji as two positions, Python as one: the underline sits on the misspelled word
    and a correction replaces that word, not the characters one to the left.  Catches Python indices
    given to Qt (app/qtext.py)."""
    from PySide6.QtGui import QInputMethodEvent, QTextCharFormat, QTextCursor
    from PySide6.QtWidgets import QApplication

    w = window()
    body = w.body_edit
    body.setFocus()
    qtbot.keyClicks(body, "Thanks ")
    emoji = QInputMethodEvent()
    emoji.setCommitString("🙏")
    QApplication.sendEvent(body, emoji)
    qtbot.keyClicks(body, " I will recieve it")
    start = len("Thanks 🙏 I will ".encode("utf-16-le")) // 2            # Qt's position of the word
    spans = [(f.start, f.length) for f in body.document().firstBlock().layout().formats()
             if f.format.underlineStyle() == QTextCharFormat.SpellCheckUnderline]
    assert spans == [(start, len("recieve"))]
    cursor = QTextCursor(body.document())
    cursor.setPosition(start + 2)
    next(a for a in body.spelling_actions(cursor) if a.text() == "receive").trigger()
    assert body.toPlainText() == "Thanks 🙏 I will receive it"


def test_the_word_being_typed_is_not_underlined_until_the_cursor_leaves_it(qtbot, window):
    """A pause inside a word ("I will recie") brings its rest as a suggestion; a red underline under the
    letters typed so far would be wrong.  Once a space follows, or the cursor moves away, the word is
    checked.  Catches a highlighter that flags every unfinished word as it is typed, and one that
    never checks the word the cursor left."""
    from PySide6.QtGui import QTextCharFormat

    w = window()
    body = w.body_edit
    body.setFocus()

    def underlined():
        return [body.toPlainText()[f.start:f.start + f.length] for f in body.document().firstBlock().layout().formats()
                if f.format.underlineStyle() == QTextCharFormat.SpellCheckUnderline]

    qtbot.keyClicks(body, "I will recie")
    assert underlined() == []
    qtbot.keyClicks(body, "ve")
    assert underlined() == []
    qtbot.keyClicks(body, " it")
    assert underlined() == ["recieve"]
    qtbot.keyClicks(body, " tomorow")
    assert underlined() == ["recieve"]
    qtbot.keyClick(body, Qt.Key_Home)                  # the cursor leaves it: now it is checked
    assert underlined() == ["recieve", "tomorow"]


def test_spelling_is_underlined_corrected_and_learned(qtbot, window):
    """Issue 14.13. Bugs caught: no underline under a misspelling, British spellings flagged,
    a correction that does not replace the word, an added word flagged again (or kept in a
    file others can read), the View toggle not removing the underlines."""
    from PySide6.QtGui import QTextCharFormat, QTextCursor

    from chunkwise.app.spelling import default_words_file

    w = window()
    body = w.body_edit
    body.setFocus()
    qtbot.keyClicks(body, "I will recieve the colour chart from Lindqvist at ana@exmaple.org")

    def underlined(word):
        block = body.document().firstBlock()
        start = block.text().index(word)
        return any(f.start <= start < f.start + f.length and f.format.underlineStyle() == QTextCharFormat.SpellCheckUnderline
                   for f in block.layout().formats())

    def at(word):
        cursor = QTextCursor(body.document())
        cursor.setPosition(body.toPlainText().index(word) + 2)
        return cursor

    assert underlined("recieve") and underlined("Lindqvist")
    assert not underlined("colour") and not underlined("chart") and not underlined("exmaple")   # an address is not prose
    assert body.spelling_actions(at("chart")) == []
    next(a for a in body.spelling_actions(at("recieve")) if a.text() == "receive").trigger()
    assert body.toPlainText().startswith("I will receive the colour chart")
    next(a for a in body.spelling_actions(at("Lindqvist")) if "dictionary" in a.text()).trigger()
    assert not underlined("Lindqvist")
    words = default_words_file()
    assert "lindqvist" in words.read_text().split() and (words.stat().st_mode & 0o777) == 0o600
    qtbot.keyClicks(w.subject_edit, "Shiping dates")
    assert any(f.format.underlineStyle() == QTextCharFormat.SpellCheckUnderline
               for f in w.subject_edit.document().firstBlock().layout().formats())
    action(w, "View", "Check spelling").trigger()
    assert not w.settings.spell_check and not w.subject_edit.document().firstBlock().layout().formats()
