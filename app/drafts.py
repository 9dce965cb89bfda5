"""The emails being written, each saved as you type, so a crash or a kill loses none of them.

>>> import tempfile, pathlib
>>> folder = DraftFolder(pathlib.Path(tempfile.mkdtemp()))
>>> d = folder.new(); d.save({"to": "", "subject": "Hi", "body": "Hello"})
>>> [saved["subject"] for _, saved in folder.in_progress()]
['Hi']
"""
from __future__ import annotations

import json
import uuid
from pathlib import Path

from core.paths import atomic_write

FIELDS = ("to", "subject", "body")


def default_draft_folder() -> Path:
    from core.paths import data_dir

    return data_dir() / "drafts"


def _clean_marks(value) -> list[list]:
    """[[start, end, chunk id, label], ...] from a draft file, anything malformed dropped."""
    marks = []
    for m in value if isinstance(value, list) else []:
        if (isinstance(m, list) and len(m) == 4 and all(isinstance(x, int) and not isinstance(x, bool) for x in m[:3])
                and 0 <= m[0] < m[1] and isinstance(m[3], str)):
            marks.append(m)
    return marks


class DraftFile:
    """One email in progress: a JSON file, written atomically, owner-only.

    Besides To, Subject and body it keeps where library text sits in the body (``marks``, so the
    highlight survives a restart) and the .eml file the email was opened from or saved to
    (``file``).
    """

    def __init__(self, path: Path):
        self.path = Path(path)

    def save(self, draft: dict) -> None:
        try:
            self.path.parent.mkdir(parents=True, mode=0o700)
        except FileExistsError:
            pass
        data = {k: str(draft.get(k, "")) for k in FIELDS}
        data["marks"] = _clean_marks(draft.get("marks"))
        data["file"] = str(draft.get("file") or "")
        atomic_write(self.path, json.dumps(data, ensure_ascii=False))

    def load(self) -> dict | None:
        """The saved draft, or None if there is none (or it cannot be read)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        draft = {k: data.get(k, "") if isinstance(data.get(k, ""), str) else "" for k in FIELDS}
        if not any(draft.values()):
            return None
        draft["marks"] = _clean_marks(data.get("marks"))
        draft["file"] = data.get("file") if isinstance(data.get("file"), str) else ""
        return draft

    def clear(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


class DraftFolder:
    """Every email in progress, one :class:`DraftFile` each (``draft*.json``), newest first."""

    def __init__(self, folder: Path | None = None):
        self.folder = Path(folder) if folder else default_draft_folder()

    def new(self) -> DraftFile:
        return DraftFile(self.folder / f"draft-{uuid.uuid4().hex[:12]}.json")

    def in_progress(self) -> list[tuple[DraftFile, dict]]:
        """(file, draft) for every readable draft, most recently written first."""
        try:
            paths = sorted(self.folder.glob("draft*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        except OSError:
            return []
        found = []
        for path in paths:
            draft = DraftFile(path).load()
            if draft is not None:
                found.append((DraftFile(path), draft))
        return found


def describe(draft: dict, limit: int = 48) -> str:
    """A menu line for a draft: its subject, else its first words.

    >>> describe({"subject": "", "body": "Hi Ann,\\n\\nSee you on Friday at the station."})
    'Hi Ann, See you on Friday at the station.'
    """
    text = draft.get("subject", "").strip() or " ".join(draft.get("body", "").split())
    text = text or "(no subject)"
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
