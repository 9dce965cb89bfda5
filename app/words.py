"""The words the window uses for the engine's names: one place, so the window never says "pii".

>>> kind_name("pii"), kind_name("teacher"), kind_name("something new")
('Personal info', 'Learned from your writing', 'Something new')
"""
from __future__ import annotations

KIND_NAMES = {
    "pii": "Personal info",
    "snippet": "Snippet",
    "phrase": "Phrase",
    "teacher": "Learned from your writing",
    "self": "Learned (model's own)",
}


def kind_name(kind: str | None) -> str:
    return KIND_NAMES.get(kind or "", (kind or "entry").replace("_", " ").capitalize())


def words_from_library(count: int, label: str | None = None) -> str:
    """The status bar's line for a suggestion that used the library.

    >>> words_from_library(3, "phone")
    '3 words from your library (phone)'
    """
    noun = "word" if count == 1 else "words"
    return f"{count} {noun} from your library" + (f" ({label})" if label else "")


def withheld_line(shape: str) -> str:
    """The status bar's line for a suggestion that stopped before a detail the model would have made up.

    >>> withheld_line("phone")
    'Stopped before a made-up phone number'
    """
    from chunkwise.core.details import shape_name

    return f"Stopped before a made-up {shape_name(shape)}"


WITHHELD_HINT = ("Chunkwise stops before a phone number, email, web or street address the model makes up, and before a "
                 "name or other detail of yours it would write on a line of its own; yours come from the library.\n")
