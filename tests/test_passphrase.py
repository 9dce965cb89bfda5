"""The editor's passphrase dialog, typed into as a user does (no keychain on this system)."""
import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import Qt, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication, QInputDialog, QLineEdit, QMessageBox  # noqa: E402

from chunkwise.app.passphrase import ask_passphrase  # noqa: E402
from chunkwise.core import crypto  # noqa: E402
from chunkwise.core.errors import StoreError  # noqa: E402
from chunkwise.core.store import ChunkStore  # noqa: E402


@pytest.fixture
def no_keychain(monkeypatch):
    monkeypatch.delenv("CHUNKWISE_PASSPHRASE", raising=False)
    monkeypatch.setattr(crypto, "keychain_available", lambda: False)
    crypto.set_passphrase(None)
    yield
    crypto.set_passphrase(None)


def answer(qtbot, typed: list[str | None], prompts: list[str], warnings: list[str]):
    """Type each answer into the next passphrase dialog (None: press Escape); note the prompts."""
    def step():
        dialog = QApplication.activeModalWidget()
        if isinstance(dialog, QMessageBox):                 # the mismatch warning: read it, press OK
            warnings.append(dialog.text())
            dialog.button(QMessageBox.Ok).click()
            QTimer.singleShot(50, step)
            return
        if not isinstance(dialog, QInputDialog):
            QTimer.singleShot(20, step)
            return
        prompts.append(dialog.labelText())
        text = typed.pop(0)
        if text is None:
            qtbot.keyClick(dialog, Qt.Key_Escape)
        else:
            line = dialog.findChild(QLineEdit)
            qtbot.keyClicks(line, text)
            qtbot.keyClick(line, Qt.Key_Return)
        if typed:
            QTimer.singleShot(50, step)
    QTimer.singleShot(0, step)


def test_a_new_store_takes_its_passphrase_twice_and_a_mismatch_is_asked_again(qtbot, tmp_path, no_keychain,
                                                                              monkeypatch):
    """Bug caught: one mistyped passphrase for a new store locks the user out of all they store next."""
    prompts, warnings = [], []
    answer(qtbot, ["horse staple", "horse stapel", "horse staple", "horse staple"], prompts, warnings)
    assert ask_passphrase(store=tmp_path / "new.db")
    assert len(prompts) == 4 and "once more" in prompts[1] and "differ" in warnings[0]
    with ChunkStore(tmp_path / "new.db") as store:                      # keyed with the agreed passphrase
        store.add_chunk("+44 7700 900123", "pii", ["Call me on"], label="phone")
    monkeypatch.setenv("CHUNKWISE_PASSPHRASE", "horse staple")
    with ChunkStore(tmp_path / "new.db") as store:
        assert store.get_chunk(1).text == "+44 7700 900123"


def test_an_existing_store_asks_once_and_escape_declines(qtbot, tmp_path, no_keychain):
    db = tmp_path / "old.db"
    crypto.set_passphrase("horse staple")
    ChunkStore(db).close()                                           # a store made earlier
    prompts, warnings = [], []
    answer(qtbot, ["horse staple"], prompts, warnings)
    assert ask_passphrase(store=db) and len(prompts) == 1 and not warnings
    crypto.set_passphrase(None)
    empty = tmp_path / "empty.db"                                    # left by a first open that failed: new
    empty.write_bytes(b"")
    prompts.clear()
    answer(qtbot, ["horse staple", "horse staple"], prompts, warnings)
    assert ask_passphrase(store=empty) and len(prompts) == 2 and "once more" in prompts[1]
    crypto.set_passphrase(None)
    answer(qtbot, ["horse staple", None], prompts, warnings)       # a new store: Escape at the second ask
    assert not ask_passphrase(store=tmp_path / "new.db")
    with pytest.raises(StoreError, match="passphrase"):                # declined: nothing to key a store with
        ChunkStore(tmp_path / "new.db")


def test_the_terminal_asks_as_the_dialog_does(monkeypatch):
    """One dialogue (crypto.choose_passphrase): a new store's passphrase twice on the terminal too,
    with the dialog's words; two that differ change nothing."""
    import getpass

    from chunkwise.core import ChunkwiseError
    from chunkwise.core.cli import _ask_passphrase

    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    asked, answers = [], iter(["horse staple", "horse stapel"])
    monkeypatch.setattr(getpass, "getpass", lambda prompt: asked.append(prompt.strip()) or next(answers))
    with pytest.raises(ChunkwiseError, match="differ"):
        _ask_passphrase(new=True)
    assert asked == [crypto.PROMPT_NEW, crypto.PROMPT_AGAIN]
    answers = iter(["horse staple"])
    assert _ask_passphrase(new=False) == "horse staple" and asked[-1] == crypto.PROMPT
