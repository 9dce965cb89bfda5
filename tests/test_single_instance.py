"""One editor at a time on one data folder (app/instance.py), driven through run_app."""
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")
from PySide6.QtCore import QLockFile, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication, QMainWindow, QMessageBox  # noqa: E402

from chunkwise.app import instance, main  # noqa: E402
from chunkwise.core.paths import data_dir  # noqa: E402
from tests.conftest import stub_run_app  # noqa: E402


@pytest.fixture
def started(qapp, monkeypatch):
    """run_app with the window, the passphrase prompt and the event loop left out: returns the windows it
    made and a function that answers the next message box as a user would (its texts are recorded).
    The data folder is the test's own (conftest's XDG_DATA_HOME)."""
    windows, shown, done = [], [], []

    class Window:
        def __init__(self, *_args):
            windows.append(self)
            self.raised = 0

        def show(self):
            pass

        def isMinimized(self):
            return False

        def raise_(self):
            pass

        def activateWindow(self):
            self.raised += 1

        def shutdown(self):
            pass

    stub_run_app(monkeypatch, qapp, Window)
    style, icon = qapp.styleSheet(), qapp.windowIcon()

    def answer(button: str) -> None:
        """Click *button* on the next message box once it is up (a box nobody expected is closed too)."""
        def click():
            if done:
                return                              # the test is over: no clicking on later tests' boxes
            box = QApplication.activeModalWidget()
            if not isinstance(box, QMessageBox):
                QTimer.singleShot(50, click)
                return
            shown.append(box.text())
            chosen = [b for b in box.buttons() if b.text().replace("&", "") == button]
            (chosen[0] if chosen else box.buttons()[0]).click()
        QTimer.singleShot(0, click)

    yield windows, shown, answer
    done.append(True)
    qapp.setStyleSheet(style)
    qapp.setWindowIcon(icon)


def held_by_another_editor() -> QLockFile:
    data_dir().mkdir(parents=True, exist_ok=True, mode=0o700)       # as hold_editor_lock makes it
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
    """An editor killed or crashed leaves its socket file behind.  Qt's listen replaces the file at the
    path (listen_for_second_starts relies on it once no editor answers there); this checks it does so
    for the path and options the editor uses.  Bug it would catch: the next editor could not listen, so
    every second start after a crash fell back to the message box."""
    folder = data_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = Path(instance.server_name(folder))
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



def test_the_editor_run_app_opens_listens_while_open_and_stops_when_closed(started, monkeypatch, qapp):
    """run_app as the first editor: while its window is open (the event loop, here a stand-in that
    makes a second start), a second start brings that window to the front; once the window has closed,
    nobody answers.  Bug caught: run_app not listening (every second start got the message), or still
    answering after its window closed."""
    windows, _shown, _answer = started
    during = []
    monkeypatch.setattr(qapp, "exec", lambda: during.append(instance.ask_to_raise(data_dir())) or 0)
    assert main.run_app([]) == 0
    assert during == [True] and len(windows) == 1 and windows[0].raised == 1
    assert not instance.ask_to_raise(data_dir())


def test_the_socket_is_in_a_folder_no_other_user_can_enter(qapp, monkeypatch):
    """The socket a second start talks to must not be one another user can make first: in the shared
    temporary folder, another user could take the name and answer "done" for the editor, so the second
    start ended with nothing brought to the front.  Bug caught: the socket in a folder others may enter."""
    folder = data_dir()
    folder.mkdir(parents=True, mode=0o700)
    runtime = Path(os.environ["XDG_RUNTIME_DIR"])                   # conftest's: private, and short
    for place, expected in ((str(runtime), runtime), (None, folder)):
        if place is None:
            monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
        else:
            monkeypatch.setenv("XDG_RUNTIME_DIR", place)
        server = instance.listen_for_second_starts(folder, OpenWindow())
        try:
            path = Path(server.fullServerName())
            assert path.parent == expected and path.exists()
            assert path.parent.stat().st_mode & 0o077 == 0
        finally:
            server.close()
    folder.chmod(0o755)                                      # a data folder others may enter: no socket at all
    assert instance.server_name(folder) is None and instance.listen_for_second_starts(folder, OpenWindow()) is None
    folder.chmod(0o700)


def test_an_editor_opened_anyway_does_not_take_the_open_ones_socket(open_editor):
    """Open anyway (a busy editor did not answer in time) gives a second editor; Qt's listen would take
    the socket's path from the first, and the first, closing, would delete the second's.  Bug caught:
    second starts then raised the newer window, or none.  The second does not listen; the first still answers."""
    other = OpenWindow()
    assert instance.listen_for_second_starts(data_dir(), other) is None
    assert instance.ask_to_raise(data_dir())
    assert open_editor.raised == 1 and other.raised == 0
