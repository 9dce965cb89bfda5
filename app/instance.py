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

LOCK_NAME = "editor.lock"
ALREADY_OPEN = ("Chunkwise is already open on this computer. Carry on in the window that is open: "
                "a second one would write over the emails you are writing there.")


def hold_editor_lock(folder: Path) -> QLockFile | None:
    """This process's lock on *folder* (keep the object: the lock lasts as long as it does), or None
    where another running editor holds it.  A folder that cannot be made or written to gives no lock
    to hold but does not stop the editor: None is only for another editor."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return QLockFile(str(folder / LOCK_NAME))            # nothing to lock: the editor opens anyway
    lock = QLockFile(str(folder / LOCK_NAME))
    # Never stale by age: the editor holds it for hours.  (On Linux the holder's flock keeps it anyway;
    # where a file system has no such locks, Qt's default of 30 s would hand it to a second editor.)
    # A holder that no longer runs is still found stale: QLockFile compares the process id and host.
    lock.setStaleLockTime(0)
    if lock.tryLock(100):
        return lock
    if lock.error() == QLockFile.LockError.LockFailedError:
        return None
    return lock                        # the folder is not writable: nothing to guard, the editor opens
