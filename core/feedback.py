"""Learning while writing: the library improves from use, on this machine.

Two signals, both stored as contexts of the chunk they are about (core/store.py):

* A value from the user's library written by the user (their phone number, a
  snippet), typed by hand in the editor or found in mail they had Chunkwise
  learn from (core/learning.py), teaches where it belongs: the phrase before it
  becomes a LEARNED context of that chunk, so the user's own phrasing finds it
  next time.
* A suggested chunk the user dismisses (Esc) teaches where it does not: the
  phrase before it becomes a DISMISSED context, and matching no longer offers
  that chunk where the draft ends in mostly the same words (matching.AVOID_OVERLAP).

>>> engine.learn_typed("For anything urgent, ring me on +49 151 2384 7712")   # doctest: +SKIP
[Learned(chunk_id=2, context='For anything urgent, ring me on', origin='learned')]

Both are personal data and are listed, with their dates, in the library
(Library -> Learned...), where they can be removed one by one or all at once.
A third, :class:`PassedOver`, is never stored: a chunk the user types over is
left out for the rest of that sentence.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

from .errors import StoreError
from .store import DISMISSED, KINDS, LEARNED
from .text import lead_in, learnable, sentence_opening, written_words

LOOKBACK = 2000        # characters before the cursor searched for values typed by hand
MIN_VALUE_CHARS = 4    # shorter library entries ("Ana") are too ambiguous to learn from
AHEAD_CHARS = 3        # a value's first characters typed by hand: its lead-in is read ahead of the learning
AHEAD_PHRASES = 2      # at most this many lead-ins read ahead per look (each is one forward pass)


@dataclass(frozen=True)
class Learned:
    chunk_id: int
    context: str
    origin: str


def _bounded(text: str, start: int, end: int) -> bool:
    """The match is a whole value, not part of a longer word or number."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return not (before.isalnum() or after.isalnum())


def _by_hand(text: str, start: int, end: int, inserted: Sequence[tuple[int, int]]) -> bool:
    """*text*[start:end] is a whole value (or, ending *text*, the start of one) the user typed: bounded
    by no letter or digit, and overlapping none of the *inserted* ranges."""
    return _bounded(text, start, end) and not any(s < end and start < e for s, e in inserted)


def typed_values(values: dict[int, str], text: str, inserted: Sequence[tuple[int, int]] = (),
                 positions: bool = False, lookback: int | None = LOOKBACK) -> list[tuple]:
    """(chunk id, lead-in) for each library value written by hand in the last *lookback* characters of
    *text* (None: all of it).

    *inserted*: (start, end) character ranges of *text* the user did not type
    (accepted suggestions, pastes, a restored draft); a value there is skipped.
    *positions*: (chunk id, lead-in, start) instead.

    >>> typed_values({7: "+1 555 0100"}, "Hi. Ring me on +1 555 0100 today.")
    [(7, 'Ring me on')]
    """
    found, offset = [], 0 if lookback is None else max(0, len(text) - lookback)
    tail = text[offset:]
    for chunk_id, value in values.items():
        value = value.strip()
        if len(value) < MIN_VALUE_CHARS:
            continue
        at = tail.find(value)
        while at >= 0:
            start, end = offset + at, offset + at + len(value)
            if _by_hand(text, start, end, inserted):
                phrase = lead_in(text[:start])
                if written_words(phrase):
                    found.append((chunk_id, phrase, start) if positions else (chunk_id, phrase))
            at = tail.find(value, at + 1)
    return found


def values_being_typed(values: dict[int, str], text: str,
                       inserted: Sequence[tuple[int, int]] = ()) -> list[tuple[int, str]]:
    """(chunk id, lead-in) of library values the user is typing by hand right now: *text* ends with
    at least AHEAD_CHARS of a value's first characters, not all of them, typed rather than inserted.

    Read ahead (``Engine.prepare_typed``), the phrase is known to the model before the value is
    finished, so learning it (:func:`learn_typed`) runs no forward pass on the way to the next
    suggestion (bench/library_update.py).

    >>> values_being_typed({7: "+1 555 0100"}, "Hi. Ring me on +1 55")
    [(7, 'Ring me on')]
    """
    found: list[tuple[int, str]] = []
    for chunk_id, value in values.items():
        value = value.strip()
        if len(value) < MIN_VALUE_CHARS:
            continue
        for n in range(min(len(value) - 1, len(text)), AHEAD_CHARS - 1, -1):
            if text.endswith(value[:n]):
                start = len(text) - n
                phrase = lead_in(text[:start])
                if _by_hand(text, start, len(text), inserted) and learnable(phrase):
                    found.append((chunk_id, phrase))
                break
    return found[:AHEAD_PHRASES]


def library_values(store) -> dict[int, str]:
    """chunk id -> text of the user's own library entries (not mined chunks)."""
    return store.chunk_texts(KINDS)


def learn_typed(engine, text: str, inserted: Sequence[tuple[int, int]] = ()) -> list[Learned]:
    """Store the phrase before each library value the user typed by hand in *text*; refresh if any is new."""
    return _refreshed(engine, store_typed(engine.store, [text], inserted))


def learn_from_mail(engine, texts: Sequence[str]) -> list[Learned]:
    """Store the phrase before each library value in the user's own *texts* (mail they had Chunkwise
    learn from, each read whole); a place they turned down stays so.  Refresh if any is new."""
    return _refreshed(engine, store_typed(engine.store, texts, lookback=None, from_mail=True))


def _refreshed(engine, stored: Iterator[Learned]) -> list[Learned]:
    """Drain *stored*; matching is refreshed for what was stored, even if storing stops part-way."""
    learned: list[Learned] = []
    try:
        learned.extend(stored)
    finally:
        if learned:
            engine.refresh(chunk_ids=sorted({item.chunk_id for item in learned}))
    return learned


def store_typed(store, texts: Sequence[str], inserted: Sequence[tuple[int, int]] = (),
                lookback: int | None = LOOKBACK, from_mail: bool = False) -> Iterator[Learned]:
    """Store the phrase before each library value written in *texts* as a LEARNED context of that value,
    yielding each one stored; no refresh.  The texts are the editor's draft as typed, or with
    *from_mail* the user's own mail (Learn from my writing): a place where the user pressed Esc on that
    value then stays turned down (old mail does not overrule it; the editor, typing there, does).

    Each phrase is stored on its own: one that cannot be (a NUL pasted in) is skipped, the others stay.
    *inserted*, *lookback*: as :func:`typed_values` takes them (a mail is read whole: None)."""
    values = library_values(store)
    for text in texts:
        for chunk_id, phrase in typed_values(values, text, inserted, lookback=lookback):
            if not learnable(phrase):
                continue
            try:
                if from_mail and store.has_context(chunk_id, phrase, DISMISSED):
                    continue
                if store.add_context(chunk_id, phrase, LEARNED) is not None:
                    yield Learned(chunk_id, phrase, LEARNED)
            except StoreError:
                continue


def dismiss(engine, chunk_id: int, text_before: str) -> Learned | None:
    """Remember that the user dismissed *chunk_id* after *text_before*; None if there is nothing to learn
    (no words before it, the chunk deleted meanwhile, or that place already known)."""
    phrase = lead_in(text_before)
    return _remember(engine, chunk_id, phrase, DISMISSED) if written_words(phrase) else None


def confirm(engine, chunk_id: int, text_before: str) -> Learned | None:
    """The user took *chunk_id*, offered one Alt+] away (read too weakly to insert unasked) after
    *text_before*: the phrase before it becomes a learned context, as a value typed by hand there
    would, so the next time it comes by itself.  None if there is nothing to learn (a phrase too
    short to act on alone, the chunk deleted meanwhile, or that phrase already known)."""
    phrase = lead_in(text_before)
    return _remember(engine, chunk_id, phrase, LEARNED) if learnable(phrase) else None


def _remember(engine, chunk_id: int, phrase: str, kind: str) -> Learned | None:
    """Store *phrase* as a *kind* context of *chunk_id* and refresh matching for it; None where it is
    known already or the chunk is gone."""
    try:
        if engine.store.add_context(chunk_id, phrase, kind) is None:
            return None
    except StoreError:
        if not engine.store.list_chunks(ids=[chunk_id]):
            return None                     # deleted in the library meanwhile: nothing to learn about it
        raise
    engine.refresh(chunk_ids=[chunk_id])
    return Learned(chunk_id, phrase, kind)


class PassedOver:
    r"""Chunks the user typed over in the sentence they are writing: not suggested again in it.

    Where a suggestion began with a chunk and the user typed something else instead, the same
    chunk offered at the next pause of the same sentence would be the same mistake again (one
    email address offered at five pauses of "It now connects to your mailing list and sends...":
    bench/keystrokes.py -v).  Nothing is stored.  The memory holds while the text still starts with
    what it was where the first chunk was typed over, in the same sentence: a new sentence, text
    deleted back past that place, or another email (or subject line) forgets it.  The editor puts a
    chunk the user pressed Esc on here too; only Esc, with learning on, also teaches the place for
    good (:func:`dismiss`).

    >>> p = PassedOver()
    >>> p.add(7, "Hi Jo,\n\nIt now connects to")
    >>> sorted(p.here("Hi Jo,\n\nIt now connects to your mailing list and"))
    [7]
    >>> p.here("Hi Jo,\n\nIt now connects to your mailing list. Email me at")
    frozenset()
    """

    def __init__(self) -> None:
        self._since = ""                    # the text where the first chunk of this sentence was typed over
        self._ids: frozenset[int] = frozenset()

    def add(self, chunk_id: int, text_before: str) -> None:
        """The user typed over *chunk_id*, suggested after *text_before*."""
        if not self._holds(text_before):
            # Without the space the suggestion's first character consumed: the place it was offered.
            self._since, self._ids = text_before.rstrip(), frozenset()
        self._ids |= {chunk_id}

    def here(self, text_before: str) -> frozenset[int]:
        """The chunks not to suggest after *text_before*: those typed over in its sentence."""
        return self._ids if self._ids and self._holds(text_before) else frozenset()

    def forget(self) -> None:
        self._since, self._ids = "", frozenset()

    def _holds(self, text: str) -> bool:
        return bool(self._ids) and text.startswith(self._since) and (
            sentence_opening(text) == sentence_opening(self._since))
