"""Replacing a file (core/paths.atomic_replace, atomic_write): the old file or the new one, never
half of either; owner-only; nothing left behind when it fails."""
import os
import stat

import pytest

from chunkwise.core import paths
from chunkwise.core.paths import atomic_replace, atomic_write


def _leftovers(folder, keep):
    return sorted(p.name for p in folder.iterdir() if p.name != keep)


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_writes_owner_only_even_over_a_readable_file(tmp_path):
    target = tmp_path / "settings.json"
    target.write_text("old")
    target.chmod(0o644)
    atomic_write(target, "new ✓")
    assert target.read_text(encoding="utf-8") == "new ✓"
    assert _mode(target) == 0o600
    assert _leftovers(tmp_path, target.name) == []


@pytest.mark.parametrize("failure", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failure_mid_write_leaves_the_old_file_and_no_temporary(tmp_path, failure):
    target = tmp_path / "draft.json"
    target.write_text("old")
    with pytest.raises(type(failure)):
        with atomic_replace(target) as tmp:
            assert tmp.parent == tmp_path and _mode(tmp) == 0o600      # beside it, owner-only from the start
            tmp.write_text("half of the ne")
            raise failure
    assert target.read_text() == "old"
    assert _leftovers(tmp_path, target.name) == []


@pytest.mark.parametrize("step", ["fsync", "replace"])
def test_a_failed_flush_or_rename_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch, step):
    target = tmp_path / "words.txt"
    target.write_text("old")

    def broken(*args, **kwargs):
        raise OSError(f"{step} failed")

    monkeypatch.setattr(paths.os, step, broken)
    with pytest.raises(OSError, match=step):
        atomic_write(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert _leftovers(tmp_path, target.name) == []


def test_the_file_and_then_its_folder_are_flushed(tmp_path, monkeypatch):
    """The rename is on disk too, not only the bytes: the folder is flushed after it."""
    target = tmp_path / "settings.json"
    order = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        order.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    def replace(src, dst):
        order.append("rename")
        real_replace(src, dst)

    monkeypatch.setattr(paths.os, "fsync", fsync)
    monkeypatch.setattr(paths.os, "replace", replace)
    atomic_write(target, "x")
    assert order == ["file", "rename", "folder"]


def test_a_new_file_is_created_the_same_way(tmp_path):
    target = tmp_path / "new.eml"
    atomic_write(target, b"\x00bytes")
    assert target.read_bytes() == b"\x00bytes" and _mode(target) == 0o600
    assert _leftovers(tmp_path, target.name) == []
