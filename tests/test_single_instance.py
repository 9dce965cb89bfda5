"""One editor at a time on one data folder (app/instance.py), driven through run_app."""
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import QDir, QLockFile, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication, QMainWindow, QMessageBox  # noqa: E402

from chunkwise.app import instance, main  # noqa: E402
from chunkwise.core.paths import data_dir  # noqa: E402
from tests.conftest import stub_run_app  # noqa: E402


@pytest.fixture
def started(qapp, monkeypatch):
    """run_app with the window, the passphrase prompt and the event loop left out: returns the windows it
    made and a function that answers the next message box as a user would (its texts are recorded).
    The data folder is the test's own (conftest's XDG_DATA_HOME)."""
    windows, shown = [], []

    class Window:
        def __init__(self, *_args):
            windows.append(self)

        def show(self):
            pass

        def shutdown(self):
            pass

    stub_run_app(monkeypatch, qapp, Window)
    style, icon = qapp.styleSheet(), qapp.windowIcon()

    def answer(button: str) -> None:
        """Click *button* on the next message box once it is up (a box nobody expected is closed too)."""
        def click():
            box = QApplication.activeModalWidget()
            if not isinstance(box, QMessageBox):
                QTimer.singleShot(50, click)
                return
            shown.append(box.text())
            chosen = [b for b in box.buttons() if b.text().replace("&", "") == button]
            (chosen[0] if chosen else box.buttons()[0]).click()
        QTimer.singleShot(0, click)

    yield windows, shown, answer
    qapp.setStyleSheet(style)
    qapp.setWindowIcon(icon)


def held_by_another_editor() -> QLockFile:
    data_dir().mkdir(parents=True, exist_ok=True)
    other = QLockFile(str(data_dir() / instance.LOCK_NAME))
    assert other.tryLock(0)
    return other


def test_a_second_editor_on_the_same_folder_says_so_and_does_not_open(started):
    """Bug caught: two editors restoring and writing the same emails in progress."""
    windows, shown, answer = started
    other = held_by_another_editor()
    try:
        answer("Close")
        assert main.run_app([]) == 0
        assert windows == [] and shown == [instance.ALREADY_OPEN]
    finally:
        other.unlock()
    assert main.run_app([]) == 0                                    # that one closed: this one opens
    assert len(windows) == 1 and len(shown) == 1
    assert main.run_app([]) == 0 and len(windows) == 2              # and lets go of the lock when it closes


def test_open_anyway_opens_the_editor_as_the_user_asked(started):
    """The lock may be held by nothing that still edits: an editor on another host of a shared home
    folder, a process id reused since.  Bug caught: a user locked out of their own editor."""
    windows, shown, answer = started
    other = held_by_another_editor()
    try:
        answer(instance.OPEN_ANYWAY)
        assert main.run_app([]) == 0
        assert len(windows) == 1 and shown == [instance.ALREADY_OPEN]
    finally:
        other.unlock()


def test_a_lock_left_by_an_editor_that_died_does_not_keep_the_user_out(started):
    """An editor killed or crashed leaves its lock file behind.  Bug caught: the user locked out of
    their own editor until they find and delete a file, or asked about it at every start."""
    windows, shown, answer = started
    folder = data_dir()
    folder.mkdir(parents=True, exist_ok=True)
    dead = 2 ** 22 + 12345                          # above Linux's default pid_max: no process has it
    with pytest.raises(ProcessLookupError):
        os.kill(dead, 0)
    (folder / instance.LOCK_NAME).write_text(f"{dead}\npython3\n{socket.gethostname()}\n", encoding="utf-8")
    answer("Close")                                 # were a box to come up (it must not)
    assert main.run_app([]) == 0
    assert len(windows) == 1 and shown == []


def test_the_data_folder_the_lock_makes_is_the_owners_alone(started):
    """The lock is the first thing written to a new user's data folder.  Bug caught: the folder made
    world-readable (the umask's 0755), where the library and the emails in progress go next."""
    windows, _shown, _answer = started
    assert not data_dir().exists()
    assert main.run_app([]) == 0 and len(windows) == 1
    assert (data_dir().stat().st_mode & 0o777) == 0o700


class OpenWindow(QMainWindow):
    """The open editor's window, as far as a second start can tell: it records being brought to the front."""

    def __init__(self):
        super().__init__()
        self.raised = 0

    def activateWindow(self):
        self.raised += 1
        super().activateWindow()


@pytest.fixture
def open_editor(qapp):
    """An editor open on the test's data folder: its lock held and its socket listening, as run_app leaves them."""
    folder = data_dir()
    lock = held_by_another_editor()
    window = OpenWindow()
    window.show()
    server = instance.listen_for_second_starts(folder, window)
    assert server is not None
    yield window
    server.close()
    window.close()
    lock.unlock()


def test_a_second_start_brings_the_open_editor_to_the_front_and_opens_nothing(started, open_editor):
    """Starting Chunkwise again, from the menu or a launcher, with an editor open.  Bug caught: a message
    box to read and close, where desktop applications bring their open window to the front; or a
    second editor on the same emails."""
    windows, shown, answer = started
    open_editor.showMinimized()
    assert open_editor.isMinimized()
    answer("Close")                                 # were a box to come up (it must not)
    assert main.run_app([]) == 0
    assert windows == [] and shown == []            # no second editor, no message
    assert open_editor.raised == 1 and not open_editor.isMinimized()
    assert open_editor.statusBar().currentMessage() == instance.STARTED_AGAIN


def test_a_second_process_brings_the_open_editor_to_the_front(qtbot, open_editor):
    """The second start as it really comes: another process, which ends once the open editor answered.
    Bug caught: a socket another process cannot reach (a name that differs between processes, or
    permissions that shut out the user's own), so every second start fell back to the message."""
    code = ("import sys; from pathlib import Path; from PySide6.QtWidgets import QApplication; "
            "app = QApplication([]); from chunkwise.app.instance import ask_to_raise; "
            "sys.exit(0 if ask_to_raise(Path(sys.argv[1])) else 3)")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    second = subprocess.Popen([sys.executable, "-c", code, str(data_dir())], env=env)
    try:
        qtbot.waitUntil(lambda: second.poll() is not None, timeout=30_000)
    finally:
        second.kill()
    assert second.returncode == 0
    assert open_editor.raised == 1


def test_a_socket_left_by_an_editor_that_died_is_taken_over(qtbot, qapp):
    """An editor killed or crashed leaves its socket file behind in the temporary folder.  Qt replaces a
    socket file nobody listens on (listen_for_second_starts relies on it rather than removing the file
    itself); this checks it does so for the name and options the editor uses.  Bug it would catch: the
    next editor could not listen, so every second start after a crash fell back to the message box."""
    folder = data_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = Path(QDir.tempPath()) / instance.server_name(folder)
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(str(path))                             # bound, then closed without removing the file: a dead editor's
    left.close()
    assert path.exists()
    window = OpenWindow()
    server = instance.listen_for_second_starts(folder, window)
    try:
        assert server is not None and server.isListening()
        assert instance.ask_to_raise(folder)
        assert window.raised == 1
    finally:
        if server is not None:
            server.close()
        window.close()

