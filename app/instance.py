"""One editor at a time on one data folder.

Two editors on the same folder would both restore the same emails in progress and write them over
each other (app/autosave.py), and both open the same library.  The first holds a lock file there for
as long as it runs, and listens on a local socket named for the folder: a second start asks it to
come to the front and ends, as a second start of most desktop applications does.  Where no editor
answers (one on another host of a shared home folder, or one still starting), the second start says
Chunkwise is already open and does not open.  A lock left by an editor that crashed or was killed is
taken over: Qt checks whether the process that wrote it still runs.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> first = hold_editor_lock(folder)
>>> first is not None, hold_editor_lock(folder) is None
(True, True)
>>> first.unlock(); hold_editor_lock(folder) is not None
True
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from PySide6.QtCore import QEventLoop, QLockFile, QTimer
from PySide6.QtNetwork import QLocalServer, QLocalSocket
from PySide6.QtWidgets import QMessageBox

LOCK_NAME = "editor.lock"
ALREADY_OPEN = ("Chunkwise is already open. Carry on in the window that is open: a second one would "
                "write over the emails you are writing there.\n\nIf you have just closed it, it may still "
                "be finishing; start Chunkwise again in a few seconds. If no Chunkwise is running at all, "
                "Open anyway.")


def _lock_file(folder: Path) -> QLockFile:
    """The editor's lock file in *folder*, not yet taken."""
    lock = QLockFile(str(folder / LOCK_NAME))
    # Never stale by age: the editor holds it for hours.  (On Linux the holder's flock keeps it anyway;
    # where a file system has no such locks, Qt's default of 30 s would hand it to a second editor.)
    # A holder that no longer runs is still found stale: QLockFile compares the process id and host.
    lock.setStaleLockTime(0)
    return lock


def hold_editor_lock(folder: Path) -> QLockFile | None:
    """This process's lock on *folder* (keep the object: the lock lasts as long as it does), or None
    where another running editor holds it.  A folder that cannot be made or written to gives a lock
    that holds nothing but does not stop the editor: None is only for another editor."""
    lock = _lock_file(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)     # the user data folder: owner-only
    except OSError:
        return lock                                  # nothing to lock there: the editor opens anyway
    if lock.tryLock(100) or lock.error() != QLockFile.LockError.LockFailedError:
        return lock                      # locked, or the folder is not writable: nothing to guard
    return None


OPEN_ANYWAY = "Open anyway"


def ask_open_anyway() -> bool:
    """Tell the user another editor holds the folder; True where they choose *Open anyway*."""
    box = QMessageBox(QMessageBox.Icon.Information, "Chunkwise", ALREADY_OPEN)
    anyway = box.addButton(OPEN_ANYWAY, QMessageBox.ButtonRole.AcceptRole)
    box.setDefaultButton(box.addButton(QMessageBox.StandardButton.Close))
    box.exec()
    return box.clickedButton() is anyway


def take_over(folder: Path) -> QLockFile:
    """The user chose *Open anyway*: the lock is taken where its holder is gone (another host, a
    process id reused since), and the editor opens in any case, as they asked."""
    lock = _lock_file(folder)
    if not lock.tryLock(0) and lock.removeStaleLockFile():
        lock.tryLock(0)
    return lock


# A second start and the open editor: the second sends RAISE, the open one brings its window to the front
# and answers DONE.  A second start that hears nothing within ANSWER_MS (an editor still starting, or
# one whose window is busy; the editor's GUI thread never waits on the model, so this is rare) falls
# back to the message above.
RAISE, DONE = b"raise\n", b"done\n"
ANSWER_MS = 2000
STARTED_AGAIN = "Chunkwise was started again: this is the window that is open."


SOCKET_NAME = "editor.sock"   # in the data folder, where no runtime folder will do (the folder names it already)
SOCKET_PATH_MAX = 104      # bytes: a Unix socket's path must fit its address (108 on Linux, with its NUL)


def _private(folder: Path) -> bool:
    """Whether *folder* is a folder of this user's that nobody else may enter (mode 0700 or stricter)."""
    try:
        info = folder.stat()
    except OSError:
        return False
    return folder.is_dir() and info.st_uid == os.getuid() and info.st_mode & 0o077 == 0


def server_name(folder: Path) -> str | None:
    """Where the editor open on *folder* listens: a socket named for that folder, in a folder only this
    user can enter -- the session's runtime folder ($XDG_RUNTIME_DIR) or else the data folder itself
    (hold_editor_lock makes it 0700).  Not the shared temporary folder, where another user could take
    the name first and answer a second start in the editor's place.  None where neither will do (a
    path too long for a socket, a data folder others may enter): second starts then get the message.
    Where local sockets are not files (Windows: named pipes), a name."""
    digest = hashlib.sha256(str(folder.resolve()).encode("utf-8")).hexdigest()[:16]
    if os.name != "posix":
        return f"chunkwise-editor-{digest}"    # a named pipe, not a file (Windows): UserAccessOption guards it
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    for base, name in ((runtime, f"chunkwise-editor-{digest}"), (str(folder), SOCKET_NAME)):
        if base and _private(Path(base)):
            path = str(Path(base) / name)
            if len(path.encode("utf-8")) <= SOCKET_PATH_MAX:
                return path
    return None


def listen_for_second_starts(folder: Path, window) -> QLocalServer | None:
    """Listen for second starts on *folder* (the caller holds its lock) and bring *window* to the front
    for each; keep the server as long as the window is open.  None where there is no private place for
    the socket, or another editor already answers there: second starts then get the message."""
    name = server_name(folder)
    if name is None or _answers(name):
        # Qt's listen replaces whatever file is at the path, a live editor's socket too: an editor opened
        # anyway (take_over) must not take the name from one that still answers.
        return None
    server = QLocalServer()
    server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)     # this user's starts only
    if not server.listen(name):              # (a socket file an editor that crashed left there is replaced)
        return None

    def answer(socket: QLocalSocket) -> None:
        if bytes(socket.readAll().data()).startswith(RAISE.strip()):
            bring_to_front(window)
            socket.write(DONE)
            socket.flush()
        socket.disconnectFromServer()

    def on_connection() -> None:
        while server.hasPendingConnections():
            socket = server.nextPendingConnection()
            socket.disconnected.connect(socket.deleteLater)
            socket.readyRead.connect(lambda s=socket: answer(s))
            if socket.bytesAvailable():
                answer(socket)

    server.newConnection.connect(on_connection)
    return server


def _answers(name: str) -> bool:
    """Whether an editor listens at *name* now (a local connection is made or refused at once)."""
    probe = QLocalSocket()
    probe.connectToServer(name)
    live = probe.waitForConnected(200)
    probe.abort()
    return live


def bring_to_front(window) -> None:
    """Show *window* over the others, restored if it was minimised, and say why in its status bar."""
    if window.isMinimized():
        window.showNormal()
    window.show()
    window.raise_()
    window.activateWindow()
    if hasattr(window, "statusBar"):
        window.statusBar().showMessage(STARTED_AGAIN, 8000)


def ask_to_raise(folder: Path) -> bool:
    """A second start: ask the editor open on *folder* to come to the front.  True where it answered
    that it did; False where none listens or none answered in time.  Waits in an event loop, not a
    blocking call, so that an editor in this very process (the tests) can answer."""
    name = server_name(folder)
    if name is None:
        return False
    socket = QLocalSocket()
    loop = QEventLoop()
    answered: list[bytes] = []

    def read() -> None:
        answered.append(bytes(socket.readAll().data()))
        if b"".join(answered).startswith(DONE.strip()):
            loop.quit()

    socket.connected.connect(lambda: socket.write(RAISE))
    socket.readyRead.connect(read)
    socket.errorOccurred.connect(lambda _error: loop.quit())
    socket.disconnected.connect(loop.quit)
    QTimer.singleShot(ANSWER_MS, loop.quit)
    socket.connectToServer(name)
    if socket.state() != QLocalSocket.LocalSocketState.UnconnectedState:
        loop.exec()
    if socket.bytesAvailable():
        read()
    socket.abort()
    return b"".join(answered).startswith(DONE.strip())
