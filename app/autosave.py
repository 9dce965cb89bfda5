"""The emails being written, each autosaved as you type, so a crash or a kill loses none of them.

Code calls an email in progress an *autosave* (``AutosaveFile``, ``AutosaveFolder``): in code,
"draft" means speculative drafting only (``core/drafting.py``).  What the user sees may still say
"draft", the word an email user expects, and so do the names on disk: the ``drafts/`` folder and
its ``draft-*.json`` files keep the names older releases wrote, so emails already on users' disks
are found without a migration.

>>> import tempfile, pathlib
>>> folder = AutosaveFolder(pathlib.Path(tempfile.mkdtemp()))
>>> a = folder.new(); a.save({"to": "", "subject": "Hi", "body": "Hello"})
>>> [saved["subject"] for _, saved in folder.in_progress()]
['Hi']
"""
from __future__ import annotations

import json
import uuid
from pathlib import Path

from chunkwise.core.paths import atomic_write

FIELDS = ("to", "subject", "body")
FOLDER_NAME = "drafts"              # on disk since before the rename: kept, so nothing needs moving
FILE_PREFIX = "draft"               # draft-<id>.json (and draft-restored.json, adopted from draft.json)


def default_autosave_folder() -> Path:
    from chunkwise.core.paths import data_dir

    return data_dir() / FOLDER_NAME


def _clean_marks(value) -> list[list]:
    """[[start, end, chunk id, label], ...] from an autosave file, anything malformed dropped."""
    marks = []
    for m in value if isinstance(value, list) else []:
        if (isinstance(m, list) and len(m) == 4 and all(isinstance(x, int) and not isinstance(x, bool) for x in m[:3])
                and 0 <= m[0] < m[1] and isinstance(m[3], str)):
            marks.append(m)
    return marks


class AutosaveFile:
    """One email in progress: a JSON file, written atomically, owner-only.

    Besides To, Subject and body it keeps where library text sits in the body (``marks``, so the
    highlight survives a restart) and the .eml file the email was opened from or saved to
    (``file``).
    """

    def __init__(self, path: Path):
        self.path = Path(path)

    def save(self, fields: dict) -> None:
        try:
            self.path.parent.mkdir(parents=True, mode=0o700)
        except FileExistsError:
            pass
        data = {k: str(fields.get(k, "")) for k in FIELDS}
        data["marks"] = _clean_marks(fields.get("marks"))
        data["file"] = str(fields.get("file") or "")
        atomic_write(self.path, json.dumps(data, ensure_ascii=False))

    def load(self) -> dict | None:
        """The saved email, or None if there is none (or it cannot be read)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        fields = {k: data.get(k, "") if isinstance(data.get(k, ""), str) else "" for k in FIELDS}
        if not any(fields.values()):
            return None
        fields["marks"] = _clean_marks(data.get("marks"))
        fields["file"] = data.get("file") if isinstance(data.get("file"), str) else ""
        return fields

    def clear(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


class AutosaveFolder:
    """Every email in progress, one :class:`AutosaveFile` each (``draft*.json``), newest first."""

    def __init__(self, folder: Path | None = None):
        self.folder = Path(folder) if folder else default_autosave_folder()

    def new(self) -> AutosaveFile:
        return AutosaveFile(self.folder / f"{FILE_PREFIX}-{uuid.uuid4().hex[:12]}.json")

    def in_progress(self) -> list[tuple[AutosaveFile, dict]]:
        """(file, email) for every readable autosave, most recently written first."""
        try:
            paths = sorted(self.folder.glob(f"{FILE_PREFIX}*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        except OSError:
            return []
        found = []
        for path in paths:
            fields = AutosaveFile(path).load()
            if fields is not None:
                found.append((AutosaveFile(path), fields))
        return found


def describe(fields: dict, limit: int = 48) -> str:
    """A menu line for an email in progress: its subject, else its first words.

    >>> describe({"subject": "", "body": "Hi Ann,\\n\\nSee you on Friday at the station."})
    'Hi Ann, See you on Friday at the station.'
    """
    text = fields.get("subject", "").strip() or " ".join(fields.get("body", "").split())
    text = text or "(no subject)"
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
