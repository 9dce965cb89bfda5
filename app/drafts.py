"""The email being written, saved as you type, so a crash or a kill loses nothing.

>>> import tempfile, pathlib
>>> d = DraftFile(pathlib.Path(tempfile.mkdtemp()) / "draft.json")
>>> d.save({"to": "", "subject": "Hi", "body": "Hello"}); d.load()["subject"]
'Hi'
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

FIELDS = ("to", "subject", "body")


def default_draft_path() -> Path:
    from core.paths import data_dir

    return data_dir() / "draft.json"


class DraftFile:
    """One JSON file, written atomically (temp file + rename), owner-only."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else default_draft_path()

    def save(self, draft: dict) -> None:
        try:
            self.path.parent.mkdir(parents=True, mode=0o700)
        except FileExistsError:
            pass
        fd, tmp = tempfile.mkstemp(prefix=".draft-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({k: str(draft.get(k, "")) for k in FIELDS}, fh, ensure_ascii=False)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def load(self) -> dict | None:
        """The saved draft, or None if there is none (or it cannot be read)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        draft = {k: data.get(k, "") if isinstance(data.get(k, ""), str) else "" for k in FIELDS}
        return draft if any(draft.values()) else None

    def clear(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
