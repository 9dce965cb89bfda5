"""One editor at a time on one data folder.

Two editors on the same folder would both restore the same emails in progress and write them over
each other (app/autosave.py), and both open the same library.  The first holds a lock file there for
as long as it runs; a second one says so and does not open.  A lock left by an editor that crashed
or was killed is taken over: Qt checks whether the process that wrote it still runs.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> first = hold_editor_lock(folder)
>>> first is not None, hold_editor_lock(folder) is None
(True, True)
>>> first.unlock(); hold_editor_lock(folder) is not None
True
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QLockFile
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
