"""Help → Keyboard shortcuts, How suggestions and the library work, About: short pages in plain words."""
from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

KEYS = """<h3>Keyboard shortcuts</h3>
<table cellpadding="3">
<tr><td><b>Tab</b></td><td>take the whole suggestion (pressed early, it waits for the suggestion)</td></tr>
<tr><td><b>Ctrl+Right</b></td><td>take the suggestion's next word</td></tr>
<tr><td><b>Esc</b></td><td>dismiss the suggestion</td></tr>
<tr><td><b>Alt+] / Alt+[</b></td><td>the next / previous of a few suggestions for the same place
(the status bar shows which, as 2/3; "Alt+] phone" where the first of them is one of your
library entries Chunkwise was not sure enough to put in by itself)</td></tr>
<tr><td><i>keep typing</i></td><td>letters that match the suggestion use it up; others replace it</td></tr>
<tr><td><b>Ctrl+N / Ctrl+O / Ctrl+S</b></td><td>new email, open an email, save it as .eml</td></tr>
<tr><td><b>Ctrl+Shift+S</b></td><td>save as a new file</td></tr>
<tr><td><b>Ctrl+Shift+C</b></td><td>copy the whole email (To, Subject, body)</td></tr>
<tr><td><b>Ctrl+Z / Ctrl+Shift+Z</b></td><td>undo (one undo takes back a whole accepted suggestion) / redo</td></tr>
<tr><td><b>Ctrl+L</b></td><td>your library</td></tr>
<tr><td><b>Ctrl+,</b></td><td>settings</td></tr>
</table>"""

HOW = """<h3>How suggestions and the library work</h3>
<p>When you pause typing, Chunkwise continues your sentence in grey. The words come from a small
language model that runs on this computer; nothing you write leaves it.</p>
<p><b>Your library</b> (Tools → Chunk library) holds text you reuse: your personal info (phone,
email, address...) and snippets. Each entry has a few phrases that lead into it ("You can reach
me on"). When your sentence leads into one, the whole entry is suggested at once and shown on a
yellow highlight; hover over it to see which entry it is. The similarity slider in Settings
sets how readily entries are used. To start, add an entry in the library, or select text in an
email and choose Edit → Add selection as snippet.</p>
<p><b>Learning from your writing</b>: Tools → Learn from my writing reads emails you choose and
learns the phrases you repeat; they are suggested like library entries, and your usual
wording guides the suggestions. While you write, a library value you type by hand teaches
Chunkwise the phrase before it, and a suggestion you dismiss with Esc counts against that
place. Tools → What Chunkwise learned lists all of it; Tools → Forget removes it.</p>
<p>Everything learned is kept in your library file on this computer, locked with your
passphrase or your system keychain.</p>"""


def about_text() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("chunkwise")
    except PackageNotFoundError:
        v = "development copy"
    return (f"<h3>Chunkwise {v}</h3><p>A private writing assistant: suggestions from a language model "
            "on this computer, personalised by your own library. Nothing leaves the machine.</p>")


def show_help(parent, page: str) -> QMessageBox:
    """Show a help page (non-modal, so it can stay open beside the email); returns the box."""
    text = {"keys": KEYS, "how": HOW}.get(page) or about_text()
    box = QMessageBox(QMessageBox.Information, "Chunkwise help", text, QMessageBox.Close, parent)
    box.setObjectName(f"help-{page}")
    box.setModal(False)
    box.show()
    return box
