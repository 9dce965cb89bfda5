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
# one whose window is busy) falls back to the message above.
RAISE, DONE = b"raise\n", b"done\n"
ANSWER_MS = 2000
STARTED_AGAIN = "Chunkwise was started again: this is the window that is open."


def server_name(folder: Path) -> str:
    """The name the open editor listens on: one per data folder (a user's own, so one per user too).
    A name, not a path: Qt puts the socket in the temporary folder, whose paths stay short enough for
    a Unix socket where a data folder's may not."""
    digest = hashlib.sha256(str(folder.resolve()).encode("utf-8")).hexdigest()[:16]
    return f"chunkwise-editor-{digest}"


def listen_for_second_starts(folder: Path, window) -> QLocalServer | None:
    """Listen for second starts on *folder* (the caller holds its lock) and bring *window* to the front
    for each; keep the server as long as the window is open.  None where the socket cannot be made:
    second starts then say Chunkwise is already open, as before."""
    server = QLocalServer()
    server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)     # this user's starts only
    # A socket file left by an editor that crashed is replaced: Qt removes one that nobody listens on.
    if not server.listen(server_name(folder)):
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
    socket.connectToServer(server_name(folder))
    if socket.state() != QLocalSocket.LocalSocketState.UnconnectedState:
        loop.exec()
    if socket.bytesAvailable():
        read()
    socket.abort()
    return b"".join(answered).startswith(DONE.strip())
