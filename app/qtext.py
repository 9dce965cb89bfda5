"""Positions between Qt and Python.

Qt counts positions in UTF-16 code units, Python in code points: an emoji, or any other
character outside the Basic Multilingual Plane, is two of Qt's and one of Python's.  Every
position that crosses between the two goes through these two functions.
"""
from __future__ import annotations


def qt_len(text: str) -> int:
    """Qt's length of *text*.

    >>> qt_len("Hi 🙂"), len("Hi 🙂")
    (5, 4)
    """
    return len(text) if text.isascii() else len(text.encode("utf-16-le")) // 2


def py_index(text: str, position: int) -> int:
    """The Python index in *text* of Qt's *position* in it.

    >>> py_index("Hi 🙂 there", 6)
    5
    """
    if text.isascii():
        return position
    return len(text.encode("utf-16-le")[: 2 * position].decode("utf-16-le", errors="ignore"))
