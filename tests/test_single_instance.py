"""One editor at a time on one data folder (app/instance.py), driven through run_app."""
import os
import socket
import sys
import types

import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import QLockFile  # noqa: E402
from PySide6.QtWidgets import QApplication, QMessageBox  # noqa: E402

from chunkwise.app import instance, main  # noqa: E402
from chunkwise.core.paths import data_dir  # noqa: E402


@pytest.fixture
def started(qapp, monkeypatch):
    """run_app with the window, the passphrase prompt and the event loop left out: returns the windows it
    made and the messages it showed.  The data folder is the test's own (conftest's XDG_DATA_HOME)."""
    windows, messages = [], []

    class Window:
        def __init__(self, *_args):
            windows.append(self)

        def show(self):
            pass

        def shutdown(self):
            pass

    fakes = {
        "chunkwise.app.passphrase": types.SimpleNamespace(ask_passphrase=lambda **_: True),
        "chunkwise.app.settings": types.SimpleNamespace(
            load_settings=lambda: (types.SimpleNamespace(store_path=lambda: None), []), settings_path=lambda: None),
        "chunkwise.app.window": types.SimpleNamespace(ComposeWindow=Window),
        "chunkwise.app.worker": types.SimpleNamespace(finish_worker_threads=lambda: None),
    }
    for name, module in fakes.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    monkeypatch.setattr(qapp, "exec", lambda: 0)
    monkeypatch.setattr(QMessageBox, "information", lambda _parent, _title, text, *a: messages.append(text))
    style, icon = qapp.styleSheet(), qapp.windowIcon()
    yield windows, messages
    qapp.setStyleSheet(style)
    qapp.setWindowIcon(icon)


def test_a_second_editor_on_the_same_folder_says_so_and_does_not_open(started):
    """Bug caught: two editors restoring and writing the same emails in progress."""
    windows, messages = started
    other = QLockFile(str(data_dir() / instance.LOCK_NAME))        # another editor, running
    data_dir().mkdir(parents=True, exist_ok=True)
    assert other.tryLock(0)
    try:
        assert main.run_app([]) == 0
        assert windows == [] and messages == [instance.ALREADY_OPEN]
    finally:
        other.unlock()
    assert main.run_app([]) == 0                                    # that one closed: this one opens
    assert len(windows) == 1 and len(messages) == 1
    assert main.run_app([]) == 0 and len(windows) == 2              # and lets go of the lock when it closes


def test_a_lock_left_by_an_editor_that_died_does_not_keep_the_user_out(started):
    """An editor killed or crashed leaves its lock file behind.  Bug caught: the user locked out of
    their own editor until they find and delete a file (or, with Qt's default, for 30 s)."""
    windows, messages = started
    folder = data_dir()
    folder.mkdir(parents=True, exist_ok=True)
    dead = 2 ** 22 + 12345                          # above Linux's default pid_max: no process has it
    with pytest.raises(ProcessLookupError):
        os.kill(dead, 0)
    name = QApplication.applicationName()
    (folder / instance.LOCK_NAME).write_text(f"{dead}\n{name}\n{socket.gethostname()}\n", encoding="utf-8")
    assert main.run_app([]) == 0
    assert len(windows) == 1 and messages == []

