r"""What a suggestion streams: :class:`Piece` (text and where it came from), and the filters every piece
passes on its way out of the decode loop (core/decoding.py ``Decoder.show``): stop sequences that keep
each piece's source (:class:`AttributedStops`), and the end of a suggestion where the model starts one
of the user's values again (:class:`ValueRepeats`).

>>> out, stopped = AttributedStops(["\n\n"]).feed_all([Piece("Thanks,"), Piece(" Ana", "chunk", 3), Piece("\n\nP.S.")])
>>> [(p.text, p.source) for p in out], stopped
([('Thanks,', 'model'), (' Ana', 'chunk')], True)
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from .sampling import StopMatcher


@dataclass(frozen=True)
class Piece:
    """A piece of generated text and where it came from.

    ``source`` is ``"model"`` for sampled tokens, ``"chunk"`` for an inserted
    chunk (then ``chunk_id``, ``kind``, ``label`` and ``match`` say which
    and how well it matched: :class:`chunkwise.core.matching.Proposal`).
    """

    text: str
    source: str = "model"
    chunk_id: int | None = None
    kind: str | None = None
    label: str | None = None
    match: float | None = None

    @property
    def from_chunk(self) -> bool:
        return self.source == "chunk"


def split_pieces(pieces: Sequence[Piece], n: int) -> tuple[list[Piece], list[Piece]]:
    """*pieces* cut after *n* characters: (first part, rest), each part keeping its source.

    >>> split_pieces([Piece(" call"), Piece(" 555", "chunk", 7)], 7)
    ([Piece(text=' call', source='model', chunk_id=None, kind=None, label=None, match=None), \
Piece(text=' 5', source='chunk', chunk_id=7, kind=None, label=None, match=None)], \
[Piece(text='55', source='chunk', chunk_id=7, kind=None, label=None, match=None)])
    """
    taken, rest, used = [], [], 0
    for p in pieces:
        take = max(0, min(len(p.text), n - used))
        if take:
            taken.append(replace(p, text=p.text[:take]))
        if take < len(p.text):
            rest.append(replace(p, text=p.text[take:]))
        used += len(p.text)
    return taken, rest


def feed_each(feed: Callable[[Piece], tuple[list[Piece], bool]],
              pieces: Sequence[Piece]) -> tuple[list[Piece], bool]:
    """*pieces* through *feed* (one of the filters below) in turn, until one stops: (what came out, stopped)."""
    out: list[Piece] = []
    for piece in pieces:
        got, stopped = feed(piece)
        out += got
        if stopped:
            return out, True
    return out, False


REPEAT_HEAD = 5          # characters of an inserted value (past a web address's scheme) whose return ends a suggestion
_SCHEME = re.compile(r"(?:[A-Za-z][\w+.-]*://)?(?:www\.)?")


def repeat_head(value_text: str) -> str:
    """The start of a value that, written again by the model, ends the suggestion; "" for a value too
    short to tell from the start of an ordinary word.

    >>> repeat_head("\\nLindenstraße 42, 10969 Berlin"), repeat_head(" https://anamarin.design"), repeat_head("Jo")
    ('Linde', 'https://anama', '')
    """
    value = value_text.strip()
    n = _SCHEME.match(value).end() + REPEAT_HEAD
    return value[:n] if len(value) >= n else ""


class ValueRepeats:
    """After one of the user's values, model text that starts that value again ("...Berlin, Germany" +
    "\\nLinden") ends the suggestion before it, the line break or space before it too.  Only the
    model's own text is looked at: another of the user's values after this one passes whole."""

    def __init__(self) -> None:
        self._matcher: StopMatcher | None = None

    def arm(self, value_text: str) -> None:
        head = repeat_head(value_text)
        self._matcher = StopMatcher(["\n" + head, " " + head], lead=False) if head else None

    def feed(self, piece: Piece) -> tuple[list[Piece], bool]:
        if self._matcher is None:
            return [piece], False
        if piece.source == "chunk":                   # a value of the user's: what was held goes before it
            return self.release() + [piece], False
        safe, stopped = self._matcher.feed(piece.text)
        return ([replace(piece, text=safe)] if safe else []), stopped

    def feed_all(self, pieces: Sequence[Piece]) -> tuple[list[Piece], bool]:
        return feed_each(self.feed, pieces)

    def release(self) -> list[Piece]:
        """Model text held as a possible start of the value, let out (it was not); disarmed."""
        held = self._matcher.flush() if self._matcher is not None else ""
        self._matcher = None
        return [Piece(held)] if held else []


class AttributedStops:
    """Stop sequences over streamed pieces, keeping each piece's source."""

    def __init__(self, stops: Sequence[str], lead: bool = True):
        self.matcher = StopMatcher(list(stops), lead)
        self.held: list[Piece] = []

    def feed(self, piece: Piece) -> tuple[list[Piece], bool]:
        if not self.matcher.stops:
            return ([piece] if piece.text else []), False
        self.held.append(piece)
        safe, stopped = self.matcher.feed(piece.text)
        # The matcher returns the safe prefix of (held + new); split pieces to that length.
        out, remaining = split_pieces(self.held, len(safe))
        self.held = [] if stopped else remaining
        return out, stopped

    def feed_all(self, pieces: Sequence[Piece]) -> tuple[list[Piece], bool]:
        return feed_each(self.feed, pieces)

    def flush(self) -> list[Piece]:
        out = [p for p in self.held if p.text]
        self.held = []
        self.matcher.flush()
        return out
