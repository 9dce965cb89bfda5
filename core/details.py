"""What a personal detail looks like: phone numbers, email addresses, web addresses, street addresses.

One definition of each shape, used twice: by the decoder's guard, which stops a
suggestion before the model *invents* such a detail (a made-up phone number is
worse than no suggestion), and by the benchmarks that count invented details.

The shapes are about values, not about the words that lead into them, so they
hold for any phrasing.

>>> find_details("Call me at 555-123-4567 or write to jo@ex.com.")
[('phone', 11, 23), ('email', 36, 45)]
>>> find_details("The meeting is at 10:30 on 12 May 2026.")
[]
>>> find_details("We are at 221 Baker Street, London.")
[('address', 10, 26)]
>>> [f[0] for f in find_details("Ship to 1234 Elmstead, Boston")], find_details("See you 5 May, Tom. At 2 PM, Joe.")
(['address'], [])
>>> find_details("Write to [email\xa0protected] or call [phone number].")
[('email', 9, 26), ('phone', 35, 49)]
>>> [shape for shape, _s, _e in find_details("[Cell Phone], [Your Work Email], [Mobile Phone Number]")]
['phone', 'email', 'phone']
"""
from __future__ import annotations

import re

# A phone number: at least 7 digits, with the separators people write between them.
_PHONE = re.compile(r"(?<![\w@/.])\+?\(?\d[\d \t().\-/]{5,}\d(?![\w@])")
_EMAIL = re.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")
# A stand-in where the detail goes: the web pages small models learn from print "[email protected]" for
# every address a CDN hid, and templates "[phone number]", "[email_address]" or "[address]".  Tab would put that in the email,
# so it counts as the detail it stands for (the model wrote it where the user's own belongs).
# Web stand-ins also name a profile: "[Your LinkedIn Profile URL]", "[GitHub username]", "[Link to your portfolio]";
# phone and email ones a kind: "[Cell Phone]", "[Your Work Email]".
_STAND_IN = re.compile(r"\[\s*(?:link[\s_]+to[\s_]+)?(?:your[\s_]+|my[\s_]+)?(?:(?:work|personal|business|office)[\s_]+)?"
                       r"(?:(?P<email>e-?mail)"
                       r"|(?P<phone>phone|mobile|telephone|cell)"
                       r"|(?P<web>website|web\s?site|url|linked\s?in|github|portfolio|twitter)"
                       r"|(?P<address>(?:postal[\s_]+|street[\s_]+|home[\s_]+)?address))"
                       r"(?:[\s_]+(?:address|number|protected|url|link|profile|page|handle|username|website|phone)){0,2}"
                       r"\s*\]", re.IGNORECASE)
_URL = re.compile(r"(?:https?://|www\.)[^\s,;]+|\b[\w\-]+(?:\.[\w\-]+)*\.(?:com|org|net|io|dev|de|uk|fr|eu)"
                  r"(?:/[^\s,;]*)?", re.IGNORECASE)
# Capitalised words after a number that are not a place: times, months, days, units.
_NOT_PLACE = (r"(?:AM|PM|January|February|March|April|May|June|July|August|September|October|November|December|"
              r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|Monday|Tuesday|Wednesday|Thursday|Friday|"
              r"Saturday|Sunday|Mon|Tue|Tues|Wed|Thu|Thurs|Fri|Sat|Sun|Euros?|Dollars?|Pounds?|Percent|Hours?|"
              r"Minutes?|Days?|Weeks?|Months?|Years?|Pages?|People|Items?|Users?)")
# A street address: a house number, capitalised words, a street-type word (any order of the two
# conventions: "221 Baker Street", "Hauptstraße 5").
_STREET_TYPES = (r"Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|Way|Court|Ct|Place|Pl|"
                 r"Square|Sq|Terrace|Close|Crescent|Parkway|Highway|Hwy|Row|Gardens|Rue|Straße|Strasse|str|"
                 r"Weg|Platz|Allee|Gasse|Via|Calle|Avenida")
# The US states' codes, for "Boston, MA 02110" (not "Hi Jo, PO 45678 was approved", "Dear Sam, PR 12345").
_US_STATES = ("AL|AK|AZ|AR|CA|CO|CT|DE|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|"
              "NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|DC")
# A house number: up to six digits ("123456 St. Martin's" was shown whole at five) and a letter ("4B").
_HOUSE = r"\b\d{1,6}[A-Za-z]?"
_ADDRESS = re.compile(rf"{_HOUSE}\s+(?:[A-Z][\w'\-]*\.?\s+){{0,3}}(?:{_STREET_TYPES})\b\.?"
                      rf"|\b[A-Z][\w\-]*(?:straße|strasse|weg|platz|allee|gasse)\s+\d{{1,5}}[A-Za-z]?\b"
                      # the parts of an address that need no street word: "Suite 100", "Apt 4B", "PO Box 12"
                      # (not "Unit" or "Flat": "Unit 12 ships", "Flat 20% off"),
                      r"|\b(?:Suite|Ste|Apt|Apartment|P\.?\s?O\.?\s?Box)\.?\s+#?\d{1,5}[A-Za-z]?\b(?!%)"
                      # "Boston, MA 02110" (the comma: not "Order ID 12345"), "London SW1A 1AA" (not "Q4 9AM"),
                      rf"|\b[A-Z][a-z]+,\s+(?:{_US_STATES})\s+\d{{5}}(?:-\d{{4}})?\b|\b[A-Z]{{1,2}}\d[A-Z\d]?\s+\d(?!AM|PM)[A-Z]{{2}}\b"
                      # and a house number of three digits or more, a name and a comma ("1234 Elmstead, Boston"),
                      # not "Windows 11 Pro, ", "2 PM, ", "5 May, " or "in 2026 Paris, ".
                      rf"|\b(?!(?:19|20)\d\d\b)\d{{3,5}}\s+(?!{_NOT_PLACE}\b)[A-Z][a-z]{{2,}}(?:\s+[A-Z][a-z]{{2,}}){{0,2}},\s+[A-Z][a-z]")


# Dates, year ranges and time ranges have phone-like digit counts.
_NOT_PHONE = re.compile(r"\d{1,2}[./-]\d{1,2}[./-]\d{2,4}|\d{4}[./-]\d{1,2}[./-]\d{1,2}|\d{4}\s*[-/]\s*\d{2,4}"
                        r"|\d{1,2}[.:]\d{2}\s*-\s*\d{1,2}[.:]\d{2}")


def _digits(text: str) -> int:
    return sum(ch.isdigit() for ch in text)


def find_details(text: str) -> list[tuple[str, int, int]]:
    """(shape, start, end) of each phone number, email, web or street address in *text*, in order."""
    found: list[tuple[str, int, int]] = []
    for m in _STAND_IN.finditer(text):
        found.append((m.lastgroup, m.start(), m.end()))
    for m in _EMAIL.finditer(text):
        found.append(("email", m.start(), m.end()))
    for m in _URL.finditer(text):
        if not any(s <= m.start() < e for _, s, e in found):
            found.append(("web", m.start(), m.end()))
    for m in _PHONE.finditer(text):
        span = m.group(0).strip()
        if _digits(span) >= 7 and not _NOT_PHONE.fullmatch(span):
            if not any(s <= m.start() < e for _, s, e in found):
                found.append(("phone", m.start(), m.start() + len(m.group(0).rstrip())))
    for m in _ADDRESS.finditer(text):
        if not any(s <= m.start() < e for _, s, e in found):
            found.append(("address", m.start(), m.end()))
    return sorted(found, key=lambda f: f[1])


SHAPE_NAMES = {"phone": "phone number", "email": "email address", "web": "web address", "address": "street address",
               # kinds of value the slot classifier reads at a line the model would write (Decoder.own_line_ahead)
               "iban": "IBAN", "linkedin": "LinkedIn link", "github": "GitHub link", "website": "web address",
               "calendar_link": "calendar link", "social_handle": "social media handle"}


def shape_name(shape: str) -> str:
    """A detail's shape (find_details), or the kind of value the slot classifier read, in words, for
    saying what a suggestion stopped before.

    >>> shape_name("phone"), shape_name("web"), shape_name("job_title"), shape_name("")
    ('phone number', 'web address', 'job title', 'personal detail')
    """
    return SHAPE_NAMES.get(shape, shape.replace("_", " ") or "personal detail")


def held_from(text: str) -> int:
    """Where the part of *text* that may still grow into a detail begins (len(text): nothing).

    The guard holds that part back instead of showing it: an unfinished word
    ("jo.smith" may become an email address), a digit run ("555-12" may become
    a phone number), a house number with capitalised words ("221 Baker" or
    "1234 Elmstead, " may become a street address).

    >>> [held_from(t) for t in ("call me at 555-12", "call me at ", "at 221 Baker", "write to jo", "at [email ")]
    [11, 11, 3, 9, 3]
    """
    start = len(text)
    if text and not text[-1].isspace():
        start = len(text.rstrip()) - len(text.rstrip().split()[-1]) if text.strip() else 0
    m = re.search(r"\+?\(?\d[\d \t().\-/]*$", text)
    if m:
        start = min(start, m.start())
    m = re.search(_HOUSE + r"[ \t]+(?:[A-Z][\w'\-]*\.?,?[ \t]*){0,3}$", text)
    if m:
        start = min(start, m.start())
    m = re.search(r"\[[^\]\n]{0,24}$", text)          # an open bracket may be a stand-in ("[email protected]")
    if m:
        start = min(start, m.start())
    return start


# How much of the model's text already shown the guard reads with what comes: the longest start of a detail
# that can be shown whole before its number ("221 Baker Street Upper Flat" is held; "P.O. Box", "Apartment",
# "Springfield, IL" are not).
SHOWN_CONTEXT = 48


class DetailGuard:
    """Streams model text, holding back what may become a detail; stops before an invented one.

    >>> g = DetailGuard()
    >>> g.feed(" call me at"), g.feed(" 555"), g.feed("-123-4567."), g.stopped
    (' call me ', 'at ', '', True)
    """

    def __init__(self) -> None:
        self.held = ""
        self.stopped = False
        self.found: str | None = None   # the shape of the invented detail it stopped before ("phone", ...)
        self.shown_space = False   # the text shown so far ends in whitespace
        self.shown = ""            # the end of the model's text shown since the last chunk (SHOWN_CONTEXT)

    def feed(self, text: str) -> str:
        """The text that is safe to show now (never an invented detail).  The model's text shown just
        before counts: "P.O. Box" shown, then " 1100" makes an address (and "Suite" + " 100", "Boston,
        MA" + " 02110"), so the number is not shown.  A detail that reaches the end of the text is held,
        not stopped at: the next piece may say it is none ("Suite 20" + "% off").

        >>> g = DetailGuard()
        >>> g.feed("\\n\\nP.O. Box"), g.feed(" 1100"), g.feed("\\n"), g.stopped
        ('\\n\\nP.O. ', '', '', True)
        """
        if self.stopped:
            return ""
        buf = self.held + text
        context = self.shown + buf
        found = [d for d in find_details(context) if d[2] > len(self.shown)]    # reaching into buf
        done = [d for d in found if d[2] < len(context) or context[d[2] - 1] == "]"]     # a stand-in is whole
        if done:
            self.stopped, self.held, self.found = True, "", done[0][0]
            return buf[: max(0, done[0][1] - len(self.shown))].rstrip(" ")
        cut = held_from(buf)
        if found:       # a detail up to the end may still not be one ("Suite 20" + "% off"): held, not stopped
            cut = min(cut, max(0, found[0][1] - len(self.shown)))
        self.held = buf[cut:]
        if cut:
            self.shown_space = buf[cut - 1].isspace()
        self.shown = (self.shown + buf[:cut])[-SHOWN_CONTEXT:]
        return buf[:cut]

    def release(self, phrase: str | None = None) -> str:
        """Before text that is not the model's (a chunk): a held word goes out ("at"), but the start of
        a number or address the model began ("1" before the user's "(555) 123-4567") is dropped.
        Before a *phrase* mined from the user's writing that goes on from a short number the model
        wrote ("at £1,150" + " pcm.": dropped, "at £1,pcm." was shown), the number goes out too
        (:meth:`_leads_into`); the start of a phone number, an email or a stand-in still does not.

        >>> g = DetailGuard()
        >>> g.feed(" at £1,150"), g.release(" pcm.")
        (' at ', '£1,150')
        >>> g.feed(" call me on 07700"), g.release(" if you have any questions.")
        (' call me on ', '')
        """
        out, self.held, self.shown = self.held, "", ""      # the chunk's text is the user's, not the model's
        if phrase is not None and self._leads_into(out, phrase):
            return out
        return "" if any(ch.isdigit() for ch in out) or "@" in out or "[" in out else out

    @staticmethod
    def _leads_into(held: str, phrase: str) -> bool:
        """Whether *held* is a short number that the mined *phrase* goes on from: what :meth:`flush` would
        show at the end (under five digits, no "@" or "["), the phrase not itself starting a number, and
        the two making no detail together."""
        first = phrase.lstrip()[:1]
        return ("@" not in held and "[" not in held and sum(ch.isdigit() for ch in held) < 5
                and not (first.isdigit() or first in "+(")
                and not any(start < len(held) for _shape, start, _end in find_details(held + phrase)))

    def flush(self) -> str:
        """At the end: what is held, unless it may be the start of an invented detail."""
        held, self.held = self.held, ""
        if self.stopped or any(end > len(self.shown) for _shape, _start, end in find_details(self.shown + held)):
            return ""
        digits = sum(ch.isdigit() for ch in held)
        if digits >= 5 or "@" in held or "[" in held:
            return ""          # "555-123" at the length limit: the start of an invented number ("10:30" stays),
                               # or of a stand-in ("[email")
        return held
