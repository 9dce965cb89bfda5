"""The editor's settings: one typed object with a schema version, saved as JSON.

>>> s = Settings()
>>> s.threshold, s.debounce_ms
(0.3, 250)

Saved atomically (temp file + rename) in the user's config directory, or where
``CHUNKWISE_CONFIG`` points (tests point it at a temporary file).  Unknown or
invalid values are replaced by defaults with a note, never a crash.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Sequence

from .paths import atomic_write, default_db_path

SCHEMA_VERSION = 3


@dataclass
class Settings:
    schema_version: int = SCHEMA_VERSION
    model_path: str = ""            # empty: the bundled SmolLM2-135M-Instruct
    db_path: str = ""               # empty: CHUNKWISE_DB or the user data directory
    n_ctx: int = 2048
    threads: int = 0                # 0: all cores (at most 8)
    max_tokens: int = 24            # length of one suggestion
    temperature: float = 0.0
    debounce_ms: int = 250
    threshold: float = 0.3          # dev split of bench/personal.py: 0.15 → 0.3 kept right insertions, wrong ones fell
    chunks_enabled: bool = True
    show_chunk_marks: bool = True
    anchor_reduction: bool = False  # drop earlier sentences from the KV cache (costs quality; no memory gain)
    knn_enabled: bool = True        # mix in the kNN-LM of the user's mined writing once Tools → Learn ran
                                    # (bench/keystrokes.py: the better predictor of a person's new mail)
    natural_end: bool = True        # a suggestion ends after a sentence, or before a word the model is unsure of
                                    # (the whole suggestion sooner: bench/editor_latency.py --complete)
    unsure_below: float = 0.3       # that word's probability (bench/keystrokes.py --split dev --natural-end)
    learn_while_writing: bool = True   # a library value typed by hand teaches its lead-in; Esc counts against
    learn_from_sent: bool = False      # opt-in: an email opened in the mail client is learned from
    recent_files: list[str] = field(default_factory=list)   # emails opened or saved, newest first
    spell_check: bool = True        # red underlines in Subject and body (View → Check spelling)
    from_address: str = ""          # From: of a saved .eml (a mail client opens it as the user's draft)

    LIMITS = {
        "n_ctx": (256, 32768), "threads": (0, 64), "max_tokens": (1, 256), "temperature": (0.0, 2.0),
        "debounce_ms": (0, 5000), "threshold": (0.0, 1.0), "unsure_below": (0.0, 1.0),
    }

    def suggestion_request(self, prompt: str, stop: Sequence[str] = ("\n\n",), leave_out: Sequence[int] = (),
                           lifted: bool = False):
        """The request the editor sends for a suggestion at the end of *prompt* (benches send the same);
        *leave_out*: the chunks the user typed over in this sentence (feedback.PassedOver); *lifted*: the
        user's last key was a space, taken off the prompt (the word before it is finished; otherwise the
        suggestion may finish it, GenerationRequest.finish_word).

        >>> Settings(max_tokens=12, natural_end=False).suggestion_request("Call me at").max_tokens
        12
        """
        from .engine import GenerationRequest      # here, not at the top: settings load before any model code

        return GenerationRequest(prompt, max_tokens=self.max_tokens, temperature=self.temperature, stop=list(stop),
                                 use_chunks=self.chunks_enabled, anchor_reduction=self.anchor_reduction,
                                 knn=self.knn_enabled, natural_end=self.unsure_below if self.natural_end else None,
                                 leave_out=tuple(leave_out), finish_word=not lifted)

    def store_path(self) -> str:
        """The chunk store these settings name: ``db_path``, else CHUNKWISE_DB or the user data directory."""
        return self.db_path or str(default_db_path())

    def validated(self) -> tuple["Settings", list[str]]:
        """A copy with out-of-range values reset to defaults, and what was reset."""
        notes, clean, default = [], Settings(**asdict(self)), Settings()
        for name, (lo, hi) in self.LIMITS.items():
            value = getattr(clean, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not lo <= value <= hi:
                notes.append(f"{name} = {value!r} is out of range; using {getattr(default, name)!r}.")
                setattr(clean, name, getattr(default, name))
        for name in ("chunks_enabled", "show_chunk_marks", "anchor_reduction", "knn_enabled", "natural_end",
                     "learn_while_writing", "learn_from_sent", "spell_check"):
            if not isinstance(getattr(clean, name), bool):
                notes.append(f"{name} must be true or false; using {getattr(default, name)!r}.")
                setattr(clean, name, getattr(default, name))
        for name in ("model_path", "db_path", "from_address"):
            if not isinstance(getattr(clean, name), str):
                setattr(clean, name, "")
        if not isinstance(clean.recent_files, list) or not all(isinstance(p, str) for p in clean.recent_files):
            clean.recent_files = []
        return clean, notes


def settings_path() -> Path:
    env = os.environ.get("CHUNKWISE_CONFIG")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("Chunkwise", appauthor=False)) / "settings.json"


def _migrate(data: dict) -> dict:
    """Bring older settings files up to SCHEMA_VERSION.

    Version 1 saved every field, so its ``knn_enabled: false`` was the old
    default, not a choice: version 2 turns predicting from the user's writing
    on (it does nothing until Tools → Learn has run), and an untouched
    threshold of 0.15 becomes the new default 0.3.  Version 3 ends suggestions at a natural end;
    version 2 saved ``natural_end: false`` as its default, so that too is turned on.
    """
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise ValueError(f"settings written by a newer Chunkwise (schema {version!r})")
    if version < 2:
        data["knn_enabled"] = True
        if data.get("threshold") == 0.15:         # the old default, not a choice: the new one
            data["threshold"] = 0.3
    if version < 3:
        data["natural_end"] = True
    data["schema_version"] = SCHEMA_VERSION
    return data


def load_settings(path: Path | None = None) -> tuple[Settings, list[str]]:
    """Settings from disk (defaults if absent), plus notes about anything ignored."""
    path = path or settings_path()
    if not path.exists():
        return Settings(), []
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        before = dict(saved) if isinstance(saved, dict) else {}
        data = _migrate(saved)
        known = {f.name for f in fields(Settings)}
        unknown = sorted(set(data) - known)
        settings = Settings(**{k: v for k, v in data.items() if k in known})
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        return Settings(), [f"Settings file {path} could not be read ({exc}); using defaults."]
    settings, notes = settings.validated()
    if unknown:
        notes.append(f"Ignored unknown settings: {', '.join(unknown)}.")
    if before.get("schema_version", 1) != SCHEMA_VERSION:
        if before.get("natural_end") is False and settings.natural_end:
            notes.append("Suggestions now end after a sentence, or before a word the model is unsure of. To have "
                         "every suggestion run to its full length, turn off Tools → Settings → End a suggestion "
                         "at a natural end.")
        try:
            save_settings(settings, path)       # migrated once: the note is not shown again
        except OSError:
            pass                                # read-only config: migrated again next time, nothing lost
    return settings, notes


def save_settings(settings: Settings, path: Path | None = None) -> None:
    path = path or settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(asdict(settings), indent=2))


def save_threshold(threshold: float, path: Path | None = None) -> None:
    """Store a tuned threshold, keeping every other setting as it is."""
    settings, _notes = load_settings(path)
    settings.threshold = float(threshold)
    save_settings(settings, path)
