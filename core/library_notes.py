"""Where each entry of the user's library comes: what the Library window shows beside it.

Matching decides in these ways (core/matching.py), and a user cannot see which applies: a number
stored under "ID:" alone never comes, one stored under "My number is" alone reads as a phone and
comes wherever a phone is asked for.  One line per entry says which:

- a value of a field the slot classifier knows (phone, email, address, tax ID...): wherever the
  model's state reads that field next, in any words;
- a value of a kind it does not know (a passport, a gym card): only where the user's own words
  for it, or another name for the same kind of record, are said (:meth:`ChunkMatcher.alone_words`),
  and nowhere while it has none;
- a sentence of a kind it knows (availability, a closing line...): where the model's state reads
  that kind next, unless another snippet's stored contexts match the place better;
- an entry it reads as no kind: where its stored contexts match the place (the CD-LM paper's
  context matching).

>>> where_it_comes(matcher, passport_id)                                   # doctest: +SKIP
'where your words name it: "passport" or another name for the same record'
"""
from __future__ import annotations

from typing import Iterable

from .slots import SENTENCE_KINDS

NAMING_SHOWN = 4          # words shown for an entry of its own kind (the rest are as good)


def where_it_comes(matcher, chunk_id: int) -> str:
    """One line on where *chunk_id* (an entry of the user's library) is inserted; "" where matching
    does not know it (not read yet: a refresh is on its way)."""
    try:
        matcher.chunk_info(chunk_id)
    except KeyError:
        return ""
    if not matcher.is_typed(chunk_id):
        return "where its contexts match"
    field = matcher.typed_field(chunk_id)
    if matcher.of_own_kind(chunk_id):
        # The user's own words; the other names of the same kind of record (naming.kin_words) are
        # only mentioned: a list of them ("emp", "pasaporte") would read as noise.
        alone, own = matcher.alone_words(chunk_id), matcher.chunk_info(chunk_id)["leads"]
        named = sorted(alone & own)[:NAMING_SHOWN] or sorted(alone)[:NAMING_SHOWN]
        if not named:
            return 'nowhere yet: add a context that says what it is ("My gym card number is")'
        kin = " or another name for the same record" if alone - own else ""
        return "where your words name it: " + ", ".join(f'"{w}"' for w in named) + kin
    readable = field.replace("_", " ")
    if field in SENTENCE_KINDS:
        return f"where the model reads a sentence of {readable} next"
    return f"wherever your {readable} is asked for"


def where_entries_come(matcher, chunk_ids: Iterable[int]) -> dict[int, str]:
    """:func:`where_it_comes` for each of *chunk_ids*; {} without a matcher (an empty library)."""
    if matcher is None:
        return {}
    return {k: where_it_comes(matcher, k) for k in chunk_ids}
