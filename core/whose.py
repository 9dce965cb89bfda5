"""Whose detail comes next: the writer's own, or someone else's.

A sentence that names who the detail belongs to settles it in words: the
last person it mentions before the cursor ("give me a buzz on" is the
writer's; "her mobile's", "Sam's portfolio, it's at", "my colleague Dr.
Wolff on" are someone else's).  A bare form label in the writer's own email
("Billing address:", naming nobody else) is the writer's (:func:`form_label`).
Where the words name nobody otherwise ("Invoices go to"), the model is asked:
it continues "<text> — that's" with " my" or with " his / her / their / your"
(:func:`writer_evidence`); " our" counts with " my" for a value whose stored lead-ins speak for
a group, the user's business (:func:`speaks_as_we`).

>>> person_cue("Ring the landlord about the boiler, his number's"), person_cue("get him to give me a buzz on")
('others', 'writer')
>>> person_cue("Billing address:"), person_cue("CC my boss:"), person_cue("Check out Sam's portfolio, it's at")
(None, 'others', 'others')

A place or an organisation named nearer the cursor than any person owns a contact detail that
comes next ("Hotel address:", "I'm staying at the Grand Hotel this week, the address is"), unless
it is the writer's ("Our clinic is located at"): :func:`names_a_place`.
"""
from __future__ import annotations

import re
from typing import Callable, Collection, Iterable

import numpy as np

from .details import find_details
from .llama_runtime import LlamaRuntime
from .slots import LABEL_FIELDS, OTHER_NUMBER_WORDS, label_fields, names_a_number
from .text import CLAUSE_MARK, label_line, lead_in

WRITER, OTHERS = "writer", "others"
# The model's own continuation of "<text> — that's my|his|her|their|your".  Chosen over " (that is" on
# the dev sets by how well it tells the writer's own places from someone else's (AUC over 267 positives
# and 183 third-party cases of the personal, paper and entities dev sets: 0.885 against 0.808; every
# "that's" form tried read 0.85-0.89, every "that is" form 0.81-0.84: python bench/probes.py).  Not " our": counted as the
# writer's it gained two right values on the paper dev set ("our on-call number is" read -2.2 with " my"
# alone), but on the frozen sets it put the user's phone, IBAN and email where an organisation's go
# (an organisation's "our" is mostly not the writer's own detail; docs/benchmarks.md, "Whose words").
OWNER_PROBE = " — that's"
PROBE_WRITER, PROBE_OTHERS = " my", (" his", " her", " their", " your")
# ... except for a value the user's own lead-ins speak of as a group's (speaks_as_we: "Our office is
# located at", "Visit us at", the CD-LM paper's profile): then " our" is the writer's too.
PROBE_GROUP = " our"
# Log-odds below which a detail the words name nobody for is someone else's.  Chosen on the dev
# splits by right - 2 x errors, end to end (bench/personal.py, bench/cli_profile.py --cases dev,
# bench/entities.py, dev; docs/benchmarks.md "A better writer probe"): -1.0 / -1.5 / -2.0 -> 197 / 197 / 195
# (the old probe at -2.0: 193); at -1.5 the probe alone passes 99% of the positives and 63% of the
# third-party cases, the old one at -2.0 94% and 75%.
OWNER_MIN = -1.5

# Words with inner apostrophes and hyphens kept whole ("co-author", "sister-in-law's").
_TOKEN_RE = re.compile(r"[^\W\d_]+(?:['-][^\W\d_]+)*'?", re.UNICODE)
_I = {"i", "me", "my", "mine", "myself", "i'm", "i've", "i'll", "i'd"}
_WE = {"we", "us", "our", "ours", "ourselves", "we're", "we've", "we'll", "we'd"}
_FIRST_PERSON = _I | _WE
_COUNTRY_US = re.compile(r"\bU\.?S\.?(?:A\b|\b|(?=\s|$))")    # "US", "U.S.", "USA": a country, not "us"
# Not "they": a subject "they" is mostly things or whoever acts ("they're all on", "they can call").
_THIRD_PERSON = {"he", "she", "him", "her", "hers", "his", "their", "theirs", "them", "whose",
                 "he's", "she's", "he'll", "she'll", "he'd", "she'd", "himself", "herself", "themselves"}
# "my colleague ...", "our billing team at": people and groups other than the writer.
_RELATIONS = {"colleague", "colleagues", "co-author", "coauthor", "manager", "boss", "assistant", "secretary",
              "brother", "sister", "mum", "mom", "dad", "mother", "father", "parents", "wife", "husband",
              "partner", "son", "daughter", "friend", "friends", "neighbour", "neighbor", "landlord", "landlady",
              "team", "department", "accountant", "lawyer", "solicitor", "doctor", "supervisor", "advisor",
              "adviser", "client", "customer", "flatmate", "roommate", "housemate", "cousin", "uncle", "aunt",
              "grandmother", "grandfather", "girlfriend", "boyfriend", "fiancé", "fiance", "fiancée", "mate",
              "tenant", "agent", "author", "sister-in-law", "brother-in-law", "helpdesk", "support", "reception"}
# Not "contact" or "desk": "my contact number", "my desk phone" are the writer's own.
# "it's at", "here's my": an apostrophe s that is "is", not a possessive.
_NOT_POSSESSIVE = {"it", "that", "here", "there", "what", "who", "where", "how", "let", "he", "she", "this",
                   "everything", "nothing", "name", "one"}
# "the flat's at", "email's best": after these words an apostrophe s is "is", not a possessive
# (a possessive is followed by what is owned, a noun or its adjective).
_AFTER_IS = {"at", "on", "in", "to", "from", "by", "via", "best", "easiest", "quickest", "fastest", "below",
             "above", "here", "there", "still", "now", "just", "also", "always", "probably", "usually",
             "the", "a", "an", "not", "no", "my", "your", "our", "his", "her", "their", "this", "that"}
# Verbs whose object is the one reached: "call the landlord on", "ring the help desk at".  Over the
# slot training corpora a contact verb with "the ..." as its object, and no word for the writer after
# it, comes before 34 more of someone else's details and none of the writer's own (bench/slot_reading.py,
# its person-cue table: someone else's 899 -> 933, the writer's own 57 -> 57).
# Not "phone", "text", "email" or "message", which are as often nouns ("my last message — the right email is").
_CONTACT_VERBS = {"call", "ring", "contact", "reach", "dial"}
_RELATION_SPAN = 3        # "our billing team": the group noun within three words of "my" / "our"
# Places and organisations whose phone, email, web or street address an email gives ("the school
# website at", "Museum website:").  Not "office", "shop", "store", "studio" or "club": a signature's
# "Office:" or "Shop online:", "in case the office is shut, my mobile is" are mostly the writer's
# own (in the slot classifier's training fragments, core/data/slot_training*.json, this list names
# a place before 2 of 1,334 of the writer's own phone, email, address, website and postcode places).
_PLACES = {"hotel", "hostel", "restaurant", "café", "cafe", "bar", "pub", "bakery", "museum", "gallery", "school",
           "university", "college", "hospital", "clinic", "surgery", "pharmacy", "bank", "library", "venue",
           "theatre", "theater", "cinema", "station", "airport", "gym", "church", "council", "agency", "centre",
           "center", "garage", "salon", "practice", "embassy", "consulate", "supermarket", "market", "stadium",
           "vendor", "supplier", "firm", "depot", "insurer", "airline", "helpdesk", "organisers", "organizers",
           "charity", "landlord"}


def _tokens(sentence: str) -> list[str]:
    return _TOKEN_RE.findall(sentence.lower().replace("\u2019", "'"))


def person_cue(text: str) -> str | None:
    """WRITER, OTHERS, or None: the last person the sentence being written names before the cursor.

    Two kinds of word name no owner of what comes: the subject of a clause of time or condition right
    after the writer as a verb's object, closed before the cursor's clause ("The courier should phone me
    when he arrives, on": the writer's, :func:`_closed_aside`), and, where the cursor's clause only
    points back at a detail a possessive owned before it ("Feel free to pass my email on to her, it's"),
    anyone named after that detail: its owner is (:func:`_pointed_owner`).

    >>> person_cue("The courier should phone me when he arrives, on"), person_cue("Pass my email on to her, it's")
    ('writer', 'writer')
    >>> person_cue("When he lands, his number is"), person_cue("I gave her number to the courier, it's")
    ('others', 'others')
    """
    return _cue(text, _segments(text))


def _cue(text: str, segments: list[list[str]]) -> str | None:
    """:func:`person_cue` of *text*, whose sentence's words are *segments* (:func:`_segments`)."""
    tokens = [t for seg in segments for t in seg]
    cue = _pointed_owner(segments) or _last_person(tokens, _closed_aside(segments))
    if cue is not None:
        return cue
    # A label that names a relation and nobody else ("Client site:", "Landlord:", "IT support hotline:")
    # is that person's.  Over the slot training corpora this moves 23 of someone else's details and 1
    # of the writer's own ("Role in team:") to someone else's (bench/slot_reading.py, its table of
    # the person cue on the corpora: 876 -> 899 and 56 -> 57).
    label = label_line(text)
    if label is not None and any(t in _RELATIONS for t in _tokens(label)):
        return OTHERS
    return None


# Words that open a clause of time or condition: its subject, right after the writer as a verb's object and
# closed before the cursor's clause, acts in it ("phone me when he arrives, on") and owns nothing that comes.
_SUBORDINATORS = {"when", "whenever", "once", "while", "before", "after", "until", "till", "if", "unless"}
# A clause that only points back at a thing named before it: "…, it's", "…, which is", "…, that's".
_POINTING = {"it", "it's", "which", "that", "that's", "this"}
_LINKING = {"is", "was", "will", "be", "should", "would"}        # "it should be", "which will be"
_SUBJECTS = {"he", "she", "he's", "she's", "he'll", "she'll", "he'd", "she'd"}
# Words that name a detail, the thing a pointing clause may stand for ("my email, it's"): not a person or a
# place ("my dentist, it's", "my aunt's, it's": theirs), not "contact" ("my point of contact, it's").
_DETAIL_WORDS = set(LABEL_FIELDS) | {"number", "no", "name", "details", "dob", "birthday", "birth", "ni", "reference",
                                     "ref", "id", "account", "profile", "handle", "username", "site", "page", "code",
                                     "mail"}
_POSSESSIVES = {"my", "our", "his", "her", "their", "your"}
_DETERMINERS = {"the", "a", "an", "this", "that", "these", "those"}     # a thing named with no owner


def _segments(text: str) -> list[list[str]]:
    """The words of the sentence being written (text.lead_in), split where a comma, colon, semicolon or dash
    ends a clause (text.CLAUSE_MARK); the last segment is the cursor's clause (empty right after the mark)."""
    return [_tokens(part) for part in CLAUSE_MARK.split(lead_in(text))]


def _closed_aside(segments: list[list[str]]) -> set[int]:
    """The positions (in the tokens of all *segments*, the sentence split at its clause marks,
    text.CLAUSE_MARK) of the subject (_SUBJECTS) of a clause of time or condition right after the writer as its verb's object ("phone me
    when he arrives", "call me back once she lands"), in a segment closed before the last one, the
    cursor's clause (with words).  Not after anyone else ("I rang Sarah when she was at work, on")."""
    inside, at = set(), 0
    if not segments[-1]:
        return inside                         # "…if you want to see his stuff:": the label's own clause, not closed
    for seg in segments[:-1]:
        for k, t in enumerate(seg):
            if (t in _SUBORDINATORS and "me" in seg[max(0, k - 2): k]
                    and k + 1 < len(seg) and seg[k + 1] in _SUBJECTS):
                inside.add(at + k + 1)
        at += len(seg)
    return inside


def _pointed_owner(segments: list[list[str]]) -> str | None:
    """Where the last segment only points back (_POINTING: "it's", "which is") at a detail a possessive
    owns (:func:`_pointed_at`), whose that detail is ("my email" the writer's, "her number", "your
    number" or "Tom's email" someone else's); otherwise None, and the last person named decides as
    everywhere ("I gave her number to the courier, it's": the courier owns nothing).

    >>> _pointed_owner([["pass", "my", "email", "on", "to", "her"], ["it's"]]), _pointed_owner([["i", "gave", "you", "the", "address"], ["it's"]])
    ('writer', None)
    """
    pointed = _pointed_at(segments)
    if pointed is None:
        return None
    seg, k, end = pointed
    return OTHERS if seg[k] == "your" else _last_person(seg[:end])


def _pointed_at(segments: list[list[str]]) -> tuple[list[str], int, int] | None:
    """(the segment, where the possessive is in it, where the thing it owns ends) for the detail the last
    segment points back at, or None.  The last segment only points back (_POINTING), and the last word of
    the segment before it that says whose or which thing comes is a possessive followed by a word.  A
    possessive with no word after it ("on to her", "at my aunt's") or another's after a word of where a
    thing goes ("to your sister", _GOES_TO) names who gets it, not what; an article names a thing of no
    one's.  The thing runs to the next word of where it goes ("my email" in "my email on to her") and
    must name a detail (_DETAIL_WORDS: "my dentist, it's" points at the dentist)."""
    last = segments[-1]
    if len(segments) < 2 or not last or last[0] not in _POINTING or not set(last) <= _POINTING | _LINKING:
        return None
    seg = segments[-2]
    if seg and _is_possessive(seg[-1], "") and seg[-1] != "mine's":
        return None                                  # "I'm staying at my aunt's, it's": the aunt's
    marks = [k for k, t in enumerate(seg[:-1]) if (t in _POSSESSIVES or t in _DETERMINERS or _is_possessive(t, seg[k + 1]))
             and not (seg[k - 1: k] and seg[k - 1] in _GOES_TO and t != "my")]
    if not marks or seg[marks[-1]] in _DETERMINERS:
        return None
    k = marks[-1]
    end = next((j for j in range(k + 1, len(seg)) if seg[j] in _GOES_TO), len(seg))
    return (seg, k, end) if _DETAIL_WORDS.intersection(seg[k + 1: end]) else None


def _is_possessive(token: str, following: str | None) -> bool:
    """Whether *token* is a possessive ("Sam's", "the organisers'") before *following*, not "it's" or "the flat's at"."""
    return len(token) > 2 and token.endswith("s'") or (
        following is not None and token.endswith("'s") and token[:-2] not in _NOT_POSSESSIVE
        and following not in _AFTER_IS)


def _last_person(tokens: list[str], aside: Collection[int] = frozenset()) -> str | None:
    """WRITER, OTHERS or None: the last person *tokens* name, read from the end (:func:`person_cue`);
    a third person at a position in *aside* names no one."""
    for i in range(len(tokens) - 1, -1, -1):
        t = tokens[i]
        if t in _THIRD_PERSON:
            if i in aside:
                continue
            return OTHERS
        if t in _CONTACT_VERBS and tokens[i + 1: i + 2] == ["the"]:
            return OTHERS             # "call the duty line:", "ring the help desk at": the one called owns it
        if t == "mine's" and tokens[i - 1: i] != ["of"]:
            return WRITER             # "Mine's", "wrong @, mine's actually"; "a friend of mine's number" is the friend's
        if t in _FIRST_PERSON:
            if tokens[i - 1: i] == ["not"] or tokens[max(0, i - 2): i] in (["not", "to"], ["not", "for"]):
                return OTHERS         # "reply to the recruiter, not me, at", "not to me": the writer says it is not
                                      # theirs ("If not, call me on", "Why not email me at" are the writer's)
            after = tokens[i + 1: i + 1 + _RELATION_SPAN]
            return OTHERS if t in ("my", "our") and any(a in _RELATIONS for a in after) else WRITER
        if _is_possessive(t, tokens[i + 1] if i + 1 < len(tokens) else None):
            # "the organisers' account", "Sam's portfolio", "my wife's number", "my friend Sam's";
            # but "our company's page", "our new company's" are the writer's own group.
            before = tokens[max(0, i - 2): i]
            owner = t.rstrip("'").removesuffix("'s")
            if (any(b in ("my", "our") for b in before) and owner not in _RELATIONS
                    and not any(b in _RELATIONS for b in before)):
                return WRITER
            return OTHERS
    return None


def speaks_as_we(contexts: Iterable[str]) -> bool:
    """Whether the user's own lead-ins for one of their values speak for a group more often than for
    themselves: the value is their business's, and a business's "our" before it is the writer's.

    >>> speaks_as_we(["Our office is located at", "Visit us at", "My address:"]), speaks_as_we(["My number is", "Call me on"])
    (True, False)
    >>> speaks_as_we(["Phone:"]), speaks_as_we([]), speaks_as_we(["Ship to our US office", "Ship to:"])
    (False, False, True)
    >>> speaks_as_we(["Shipping address in the US:", "Ship to:"])
    False
    """
    we = i = 0
    for context in contexts:
        tokens = set(_tokens(_COUNTRY_US.sub(" ", context)))
        we += bool(tokens & _WE)
        i += bool(tokens & _I)
    return we > i


def says_my(text: str) -> bool:
    """Whether the writer claims what comes next in so many words: "my" among the last four words
    of the sentence, with no one else's or no place's word after it ("my dentist's", "my hotel"), or
    "me" with nothing after it but words that lead into a value ("send it to me directly at", "call
    me on"), and no one else named after either (:func:`person_cue`).  A place's word that only says
    which of the writer's things it is ("my library card", "my bank account") is no place's:
    :func:`_a_places_word`.

    >>> says_my("Hello Mr. Chen, for the visa paperwork my contact number is"), says_my("My number:")
    (True, True)
    >>> says_my("My colleague's number:"), says_my("My dentist's number is"), says_my("my hotel is at")
    (False, False, False)
    >>> says_my("The number on the back of my library card is"), says_my("my hotel phone number is")
    (True, False)
    >>> says_my("My flight was late, so call me on"), says_my("Please send the receipt to me directly at")
    (True, True)
    >>> says_my("Let me know the address:"), says_my("Tell me her number:")
    (False, False)
    >>> says_my("Feel free to pass my email on to her, it's"), says_my("I gave her number to the courier, it's")
    (True, False)
    >>> says_my("Sure, give my email to your sister, it's"), says_my("Sure, give my sister's email to Tom, it's")
    (True, False)
    """
    segments = _segments(text)
    if _cue(text, segments) != WRITER:
        return False
    tokens = [t for seg in segments for t in seg][-4:]
    pointed = _pointed_at(segments)
    if pointed is not None:           # "pass my email on to her, it's": the clause points back at "my email"
        seg, k, end = pointed
        return seg[k] == "my" and _mine(seg[k + 1: end])
    if "me" in tokens and all(t in _LEADS_TO_VALUE for t in tokens[len(tokens) - tokens[::-1].index("me"):]):
        return True
    return "my" in tokens and _mine(tokens[len(tokens) - tokens[::-1].index("my"):])


def _mine(after: list[str]) -> bool:
    """Whether the words *after* a "my" leave what they name the writer's: no one else's or no place's
    word among them ("my dentist's", "my sister", "my hotel"; but "my library card": :func:`_a_places_word`)."""
    return not any(t.endswith(("'s", "s'")) or t in _RELATIONS or _a_places_word(after, i)
                   for i, t in enumerate(after))


# What a writer holds from a place, named after it: a card, an account, a booking... (the words that name a
# number people keep, slots.OTHER_NUMBER_WORDS, and a card).
_HELD = OTHER_NUMBER_WORDS | {"card"}
# Words after a thing named that say where it goes, not what it is: "my email on to her", "my number to your sister".
_GOES_TO = {"to", "on", "with", "for", "over"}
# What may stand between "me" and the writer's value: a preposition, or an adverb of how to reach them.
_LEADS_TO_VALUE = {"at", "on", "via", "by", "through", "to", "directly", "instead", "here", "anytime"}


def _a_places_word(words_: list[str], i: int) -> bool:
    """Whether *words_*[i] names a place (_PLACES) that owns what comes next: unless a word for a thing
    the writer holds from it follows (_HELD: "my library card", "my bank account", "my hotel booking"),
    it does ("my hotel is at", "my hotel phone number", "my hotel directly", "my hotel front desk")."""
    following = words_[i + 1] if i + 1 < len(words_) else None
    return words_[i] in _PLACES and following not in _HELD


def names_a_place(text: str) -> bool:
    """Whether the sentence being written names a place or an organisation nearer the cursor than
    any word for the writer ("I'm", "me", "our"), and not as the writer's own ("my bank", "our
    clinic"): then a phone number, email, web or street address that comes next is the place's.
    (Other people are :func:`person_cue`'s.)

    >>> names_a_place("Hotel address:"), names_a_place("I'm staying at the Grand Hotel this week, the address is")
    (True, True)
    >>> names_a_place("Our clinic is located at"), names_a_place("At the hotel, ring me on"), names_a_place("Address:")
    (False, False, False)
    """
    tokens = _tokens(lead_in(text))
    for i in range(len(tokens) - 1, -1, -1):
        if tokens[i] in _PLACES:
            return not any(b in ("my", "our") for b in tokens[max(0, i - _RELATION_SPAN): i])
        if tokens[i] in _FIRST_PERSON:
            return False
    return False


# The details a place or an organisation has that the user has too: where the words name the hotel,
# its phone, email, address or website is the hotel's.
PLACE_CONTACTS = frozenset({"phone", "email", "address", "website"})


def a_places_detail(text: str, field: str | None, value: str) -> bool:
    """Whether the user's *value* (of *field*, the chunk's typed field, or None for a chunk with no
    field: then its shape decides) would go where the words name a place as the owner of a contact
    detail (:func:`names_a_place`).  "Bank details:" still takes the user's IBAN, "Hotel
    confirmation:" their booking reference.

    >>> a_places_detail("Hotel front desk:", "phone", "+49 30 1234"), a_places_detail("Bank details:", "iban", "DE85 1007")
    (True, False)
    >>> a_places_detail("Hotel address:", None, "12 Baker Street"), a_places_detail("My address:", "address", "12 Baker Street")
    (True, False)
    """
    if not names_a_place(text):
        return False
    return field in PLACE_CONTACTS if field is not None else bool(find_details(value))


# Words that name an owner other than the writer anywhere in a block of label lines ("Her details",
# "Client site:", "Tom's mobile:", "Your case ID:"), besides third persons, relations and places: the reader.
_READER = {"you", "your", "yours", "you're", "you've"}
# Labels for someone else's part in an arrangement ("Emergency contact", "Meeting point:", "Next of
# kin"), and a salutation ("Dear Mr. Smith:"), which names the reader.
_OTHER_ROLES = {"emergency", "recipient", "meeting", "pickup", "pick-up", "drop-off", "dropoff", "destination",
                "kin", "referee", "guarantor", "payee", "beneficiary", "guest", "attendee", "passenger", "host",
                "contact", "hr", "dear", "hi", "hello"}
# A line of the block already filled in ("Account name: Greenway Lettings", "Mobile: +49 ...", or the
# value on the line below, "Address:\nLindenstraße 42"): a form being filled, for the writer or anyone,
# so whose the next line is is left to the probe.  An empty label with another label below it
# ("Name:\nEmail:\nPhone:") is not filled in.
_FILLED = re.compile(r"^[^:\n]{1,40}:(?:[ \t]*[^\s]|[ \t]*\n[ \t]*[^\s:][^:\n]*$)", re.MULTILINE)


def form_label(text: str) -> bool:
    """Whether the text ends in a bare form label: a line of a few words ending in ":" whose last
    word names a contact field (``slots.label_fields``: "Billing address:", a "Website:" under a
    heading; not "Ship to:" or "Plumber:"), in a block of lines that names nobody but the writer
    -- no third person, relation, place, reader, possessive, salutation or someone else's role
    ("Emergency contact", "Meeting point:") -- and has no line above it filled in already
    ("Account name: Greenway Lettings" above "IBAN:").

    The writer probe is no witness there: after "Billing address: (that is" (the probe before
    " — that's") the model expected " your", as in a form, though in the user's own email the label is
    theirs (bench/personal.py dev: "Billing address:" read address 0.93, probe -2.18).  The probe now
    reads the bare label alone -1.05, near its bar (bench/out/probes-quoted.txt), so whose it is still
    rests on the words and the slot classifier's someone-else's reading (:func:`writer_owns`).

    >>> form_label("Hi,\\n\\nBilling address:"), form_label("Links\\nWebsite: ")
    (True, True)
    >>> form_label("Client details\\nPhone:"), form_label("Account name: Greenway\\nIBAN:"), form_label("Dear Sam:")
    (False, False, False)
    """
    if label_fields(text) is None or names_a_number(text):     # "PO number:" names no contact field
        return False
    block = text.rstrip(" \t").split("\n\n")[-1]
    above = block.rsplit("\n", 1)[0] if "\n" in block else ""      # the lines above the label
    if _FILLED.search(above):
        return False
    owners = _THIRD_PERSON | _RELATIONS | _PLACES | _READER | _OTHER_ROLES
    return not any(t in owners or t.endswith(("'s", "s'")) and t[:-2] not in _NOT_POSSESSIVE
                   for t in _tokens(block))


# A name straight after a greeting or a thanks, on the same line, is the reader's ("Thanks Sam",
# "Hi Priya", "Thank you"): the user's own name comes after a sign-off's line break instead.
_GREETINGS = r"hi|hello|hey|dear"         # the words that greet the reader, here and in _SALUTATION
_ADDRESSING = re.compile(rf"(?:^|[^\w'])(?:thanks|thank(?: you)?|thx|{_GREETINGS}|welcome|congrats|"
                         r"congratulations)(?: (?:again|so much|a lot|in advance))?[ \t]*\Z", re.IGNORECASE)


def addresses_reader(text: str) -> bool:
    """Whether the text ends with a greeting or a thanks, so that a name next on this line is the reader's.

    >>> addresses_reader("Hi Mum,\\n\\nThank you"), addresses_reader("Thanks in advance"), addresses_reader("Thanks,\\n")
    (True, True, False)
    >>> addresses_reader("Thanks\\n")      # a sign-off: the name goes on the next line
    False
    """
    return bool(_ADDRESSING.search(text))


# A salutation line ("Hi Claire,", "Dear Sir or Madam,", "Good morning all,") opens the email to its reader.
# Not "Greetings": "Greetings from Lisbon," is a place for the writer's name in the slot training corpus.
_SALUTATION = re.compile(rf"[ \t]*(?:{_GREETINGS}|good (?:morning|afternoon|evening))(?=[\s,!:.]|$)", re.IGNORECASE)


def after_salutation(text: str) -> bool:
    """Whether the last line with words in *text* is a salutation: a name on it, or on the line below
    it, is the reader's or the body's, never the writer's signature ("Hi all," + "\\nMara Lindqvist").

    >>> after_salutation("Hi Claire,"), after_salutation("Hi all,\\n"), after_salutation("Hi Claire,\\n\\nI'm")
    (True, True, False)
    >>> after_salutation("Thanks,\\n"), after_salutation("Hi-res photos:"), after_salutation("Hello, my name is")
    (False, False, False)
    >>> after_salutation("Hey, quick one: can you send it by Friday? Thanks\\n")     # a body line, not a salutation
    False
    """
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines or _SALUTATION.match(lines[-1]) is None:
        return False
    line = lines[-1].rstrip()             # a short line, done ("Hi all,", or "Hi all" and a line break)
    return len(line.split()) <= 5 and (line[-1] in ",!:" or text.rstrip(" \t").endswith("\n"))


def writer_owns(cue: str | None, evidence: Callable[[], float], bar: float | None = None,
                label: bool = False) -> bool:
    """The gate: words that name someone else keep the user's value out; at a bare form *label*
    (:func:`form_label`) the value is the writer's; otherwise the model's log-odds (*evidence*,
    asked only then: it costs a peek) must clear *bar* (None: :data:`OWNER_MIN` as it is when asked)."""
    return cue != OTHERS and (label or evidence() > (OWNER_MIN if bar is None else bar))


def writer_evidence(rt: LlamaRuntime, group: bool = False, probe: str | None = None) -> float:
    """Log-odds that the detail after the cached text is the writer's own rather than someone else's;
    with *group*, "our" counts as the writer's as "my" does (a value the user speaks of as their
    group's, :func:`speaks_as_we`).  *probe*: another what-if than OWNER_PROBE (bench/probes.py
    compares them).

    One peek of the probe's few tokens; the cache is left as it was.
    """
    lp = rt.peek(rt.tokenize(OWNER_PROBE if probe is None else probe, add_special=False))
    mine = lp[rt.tokenize(PROBE_WRITER, add_special=False)[0]]
    if group:
        mine = np.logaddexp(mine, lp[rt.tokenize(PROBE_GROUP, add_special=False)[0]])
    others = [lp[rt.tokenize(w, add_special=False)[0]] for w in PROBE_OTHERS]
    return float(mine - np.logaddexp.reduce(others))
