"""Which of the user's values the words of a sentence name.

The slot classifier (core/slots.py) says what kind of detail comes next; where two of the user's
values read alike, or a value is of a kind it was never trained on, the user's own words decide:
the lead-ins and label they stored for each value, the names of its field
(core/data/field_words.json) and the other names of its kind of record
(core/data/record_names.json).  :class:`NamingRules` is the part of
:class:`chunkwise.core.matching.ChunkMatcher` that reads those words; it uses the chunks
:class:`chunkwise.core.matching_state.MatchingState` keeps ("leads", "kin", "own") and the
matcher's lexicon.

>>> naming_scope("I lost my gym card, so ring me on")
['ring']
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

from .encoding import BACKGROUND_FILE
from .slots import label_fields
from .text import content_word_list, content_words, current_clause, current_sentence, words

# A value of a kind the classifier does not know is named by a word among the last few content words of
# the clause ("The receptionist needs my gym card number, which is": "gym", third from the end of the
# sentence), not by one said earlier of something else ("I renewed my passport last week and my new
# mobile number is": "passport", sixth from the end, and the phone is asked for).
NAMING_WORDS = 4


def _field_entries() -> dict[str, dict]:
    """field -> its entry ("aliases", "words") in core/data/field_words.json; empty if unreadable."""
    path = BACKGROUND_FILE.parent / "field_words.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {field: entry for field, entry in data.items() if not field.startswith("_")}


def _load_field_words(entries: dict[str, dict]) -> dict[str, set[str]]:
    """label alias -> words that lead into that field."""
    out = {}
    for field, entry in entries.items():
        bag = set(words(" ".join(entry.get("words", []))))
        for alias in entry.get("aliases", []) + [field]:
            out[alias.lower().strip()] = bag
    return out


def _load_field_names(entries: dict[str, dict]) -> dict[str, set[str]]:
    """field -> the words of its names ("phone": phone, mobile, cell, tel, number...): what a sentence
    calls that field, whatever the user's own lead-ins say."""
    return {field: set(words(" ".join(entry.get("aliases", []) + [field]))) for field, entry in entries.items()}


def _load_record_names(path: Path = BACKGROUND_FILE.parent / "record_names.json") -> dict[str, frozenset[str]]:
    """word -> the words of its group in core/data/record_names.json (the other names of one kind of
    record: "staff", "employee", "personnel", "payroll"); empty if unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    out: dict[str, frozenset[str]] = {}
    for group in data.get("groups", []):
        # One word each, as content_words reads a sentence: a hyphened "e-ticket" would be "e" and
        # "ticket", and join the groups of every entry that splits so.
        split = [words(name) for name in group.get("words", [])]
        bag = frozenset(ws[0] for ws in split if len(ws) == 1 and len(ws[0]) > 2)
        for w in bag:
            out[w] = out.get(w, frozenset()) | bag
    return out


_FIELD_ENTRIES = _field_entries()
FIELD_WORDS = _load_field_words(_FIELD_ENTRIES)
FIELD_NAMES = _load_field_names(_FIELD_ENTRIES)
RECORD_NAMES = _load_record_names()
_CONTACT_WORDS = frozenset().union(*FIELD_NAMES.values())


def kin_words(leads: Iterable[str]) -> set[str]:
    """*leads* (content words) with the other names of each kind of record one of them names
    (core/data/record_names.json, written from general usage): a value the user stored as their
    "Staff number" is named by "my personnel number" too.

    >>> sorted(kin_words({"staff"}) & {"staff", "personnel", "payroll", "passport"})
    ['payroll', 'personnel', 'staff']
    """
    leads = set(leads)
    # Not from a word that names a contact field ("phone PIN", "website login"): that word says what
    # the record belongs to, not what it is.
    return leads.union(*(RECORD_NAMES.get(w, ()) for w in leads if w not in _CONTACT_WORDS))


def chunk_words(contexts: Iterable[str], label: str | None) -> set[str]:
    """The words matching looks for: the chunk's contexts, its label, and its field's usual words."""
    bag = set(words(" ".join(contexts) + " " + (label or "")))
    return bag | FIELD_WORDS.get((label or "").lower().strip(), set())


def naming_scope(text: str) -> list[str]:
    """The content words, in order, that may name which value comes: the clause being written's
    (text.current_clause, with a short bracketed note's words: "ID document (passport) number:"), or the sentence's where the clause has none ("They need the number from my
    passport, it's": the clause " it's" says nothing; "..., and my mobile is" says "mobile").

    >>> naming_scope("They need the number from my passport, it's"), naming_scope("I lost my gym card, so ring me on")
    (['need', 'number', 'passport'], ['ring'])
    """
    return _clause_and_scope(text)[1]


def _clause_and_scope(text: str) -> tuple[list[str], list[str]]:
    """The clause's content words (short notes kept) and :func:`naming_scope`, from one reading of the clause."""
    clause = content_word_list(current_clause(text, notes=True))
    return clause, clause if clause else content_word_list(current_sentence(text))


class NamingRules:
    """Which value the user's words name, mixed into :class:`chunkwise.core.matching.ChunkMatcher`
    (it reads the matcher's ``_chunks``, ``_typed_label``, ``_alone``, ``lexicon``, ``typed_field``
    and ``of_own_kind``)."""

    def which_here(self, chunk_id: int, readings: dict[int, float], text: str) -> int:
        """*chunk_id*, or where *readings* (chunk id -> reading) hold other values of its field, the one
        of them the sentence speaks of (:meth:`which_of`, in the readings' order)."""
        field = self.typed_field(chunk_id)
        siblings = [k for k in sorted(readings, key=readings.get, reverse=True) if self.typed_field(k) == field]
        return self.which_of(siblings, text) if len(siblings) > 1 else chunk_id

    def which_of(self, chunk_ids: Sequence[int], text: str) -> int:
        """Of the user's values of one field (*chunk_ids*, the slot classifier's order: a work and a
        personal email, an office line and a mobile), the one this place speaks of.  The classifier
        reads them alike; the user's own words for each tell them apart: the sentence's words
        (IDF-weighted) among the words that set each one apart from the others (of its stored lead-ins,
        its label and its value: "work", "personal", "mobile", "gmail"; not words common in any email,
        :meth:`chunkwise.core.matching._Lexicon.common`, "my", "me", "at", which say nothing of which).
        Where those say nothing or tie, the classifier's order stands.  (The model's state against each one's stored contexts
        was tried as the tie-break and read "My cell is" nearer "My office number is" than "My
        mobile is": both say a phone number comes, not whose.)

        >>> m.which_of([work_email, personal_email], "For anything private, my personal email is")   # doctest: +SKIP
        personal_email
        """
        weights, total = self.lexicon.weigh(current_sentence(text))
        own = {k: {w for w in self._chunks[k]["own"] if not self.lexicon.common(w)} for k in chunk_ids}
        shared = set.intersection(*own.values())
        said = {k: self.lexicon.overlap(weights, total, own[k] - shared) for k in chunk_ids}
        return max(chunk_ids, key=lambda k: said[k])        # the first of equals: the classifier's order

    def labelled(self, agreement: dict[int, float], text: str) -> dict[int, float]:
        """*agreement* (chunk id -> reading) without the chunks a form label the text ends in rules out
        ("Invoice address:" names an address, whatever else is read: slots.label_fields).  A value of a
        kind the classifier does not know stays: the labels name only kinds it knows ("ID document
        (passport) number:" names the numbers people keep, a tax ID among them, not the passport's
        absence), and such a value comes only by its own words (:meth:`named_alone`)."""
        named = label_fields(text)
        return agreement if named is None else {k: v for k, v in agreement.items()
                                                 if self.of_own_kind(k) or self.typed_field(k) in named}

    def named_by_lead_ins(self, chunk_id: int, rivals: Sequence[int], text: str) -> bool:
        """Whether the clause being written says a word of the user's own lead-ins or label for *chunk_id*
        and none of those for *rivals* (of other fields): "Call me:" after the user stored "Call me at"
        for their phone and "My hours" for the availability snippet the classifier read nearly as
        likely.  Content words only (text.content_words: "call", not "me" or "at"), and not words all
        of them share; unlike :meth:`which_of`, a word common in email counts, since the words that
        name a field ("email", "name") are.  The clause, not the sentence (text.current_clause): "Our
        office line, in case email is slow, is" names the email and asks for the phone.  The value's
        own words do not count: "product" in "on the product team" asks for no "Product Designer".

        >>> m.named_by_lead_ins(phone, [availability], "Call me:")      # doctest: +SKIP
        True
        """
        members = (chunk_id, *rivals)
        leads = {k: self._kin_apart(k, [r for r in members if r != k]) for k in members}
        shared = set.intersection(*leads.values())
        clause = content_words(current_clause(text))
        return bool(clause & (leads[chunk_id] - shared)) and not any(clause & (leads[k] - shared) for k in rivals)

    def named_alone(self, chunk_id: int, text: str) -> bool:
        """Whether one of the last few content words (NAMING_WORDS) of the clause being written is a word
        of the user's own lead-ins or label for *chunk_id* that no value of another field of theirs has
        (:meth:`alone_words`): what brings a value of a kind the slot classifier does not know
        (:meth:`of_own_kind`), whose reading is borrowed from the fields it looks like (a passport number
        reads as a tax ID), so that the reading says an identifier comes, not which.  "number" names
        none of a passport, a staff and a library card number; "passport" names one.  The clause is
        :func:`naming_scope`'s: the sentence where the clause has no content word ("..., it's").

        >>> m.named_alone(passport, "The embassy also needs my passport number:")      # doctest: +SKIP
        True
        """
        return self._named_at(naming_scope(text), self.alone_words(chunk_id), recent=True) >= 0

    def alone_words(self, chunk_id: int) -> frozenset[str]:
        """The words of *chunk_id*'s stored lead-ins and label that no typed value of another field of the
        user's has (another value under its own label is of its field: :meth:`which_of` tells those
        apart), and that name none of the fields people keep (FIELD_NAMES: "number" names a phone as
        much as a gym card, "My VAT number is" none of them).  Each side's words with the other names of
        the kinds of record they name (:func:`kin_words`: "Staff number:" is named by "personnel" too,
        unless another of the user's values is named so).  Kept until the typed chunks change
        (MatchingState._index_types)."""
        found = self._alone.get(chunk_id)
        if found is None:
            field = self.typed_field(chunk_id)
            others = [k for k in self._typed_label if k != chunk_id and self.typed_field(k) != field]
            found = self._alone[chunk_id] = frozenset(self._kin_apart(chunk_id, others).difference(
                *(self._chunks[k]["leads"] for k in others), *FIELD_NAMES.values()))
        return found

    def _kin_apart(self, chunk_id: int, others: Iterable[int]) -> set[str]:
        """*chunk_id*'s lead-in and label words, and the other names of the kinds of record they name
        (:func:`kin_words`) that none of *others*' words name too: with a "Staff number" and a "Payroll
        number" both stored, "staff" and "payroll" still name each, "personnel" neither."""
        info = self._chunks[chunk_id]
        return info["leads"] | info["kin"].difference(*(self._chunks[k]["kin"] for k in others))

    @staticmethod
    def _named_at(scope: list[str], said: Iterable[str], recent: bool = False,
                  after_not: Iterable[str] = ()) -> int:
        """The position in *scope* (content words in order) of the last of *said* in it, or -1; with
        *recent*, -1 too where that is not among the last NAMING_WORDS; not counting a word right after
        one of *after_not*."""
        said, after_not = set(said), set(after_not)
        at = max((i for i, w in enumerate(scope) if w in said and not (i and scope[i - 1] in after_not)),
                 default=-1)
        return -1 if recent and at < len(scope) - NAMING_WORDS else at

    def named_against(self, chunk_id: int, rivals: Sequence[int], text: str) -> bool:
        """Whether the user's words name *chunk_id* and not *rivals*.  Among fields the classifier knows,
        :meth:`named_by_lead_ins` (the clause says its words and none of theirs).  Where a value of a
        kind it does not know is among them, each is named by its own words (:meth:`named_alone` for
        such a value; for the others, their lead-in words that no other of them has) and the one named
        last in the clause is meant: "Please send the passport forms to my email:" asks for the email."""
        members = (chunk_id, *rivals)
        if not any(self.of_own_kind(k) for k in members):
            return self.named_by_lead_ins(chunk_id, rivals, text)
        clause, scope = _clause_and_scope(text)

        def named_at(k: int) -> int:
            if self.of_own_kind(k):
                return self._named_at(scope, self.alone_words(k), recent=True)
            # A field the classifier knows, by the clause alone ("Our office line, in case email is slow,
            # is" names no email), by its lead-ins and by the names of its field ("my mobile is").
            # A word right after an own kind's is part of that one's name ("my gym account"), not this one's.
            rest = [r for r in members if r != k]
            said = ((self._kin_apart(k, rest) | FIELD_NAMES.get(self.typed_field(k), set()))
                    .difference(*(self._chunks[r]["leads"] for r in rest)))
            # (the user's own words for it: "my employee email" asks for the email beside a stored staff number)
            own = set().union(*(self.alone_words(r) & self._chunks[r]["leads"] for r in members if self.of_own_kind(r)))
            return self._named_at(clause, said, after_not=own)

        mine = named_at(chunk_id)
        return mine >= 0 and all(named_at(k) < mine for k in rivals)
