"""Words and sentences of a draft, defined once for matching and the slot classifier.

>>> words("Emails: see my GitHub"), current_sentence("Thanks. Call me at"), current_sentence("Thanks. Ask Dr. Wolff on")
(['email', 'see', 'my', 'github'], 'Call me at', 'Ask Dr. Wolff on')
"""
from __future__ import annotations

import re

_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?\n]\s")
# A full stop after these ends no sentence ("my colleague Dr. Wolff on" is one sentence).
_ABBREVIATIONS = {"dr", "mr", "mrs", "ms", "prof", "st", "no", "nr", "e.g", "i.e", "etc", "approx", "dept", "jr", "sr"}


def words(text: str) -> list[str]:
    """Lower-cased words with a crude plural strip ("emails" -> "email")."""
    out = []
    for w in _WORD_RE.findall(text.lower()):
        out.append(w[:-1] if len(w) > 3 and w.endswith("s") else w)
    return out


def written_words(text: str) -> list[str]:
    """Words as the user wrote them: lower-cased, split at whitespace, punctuation kept, a part with no
    letter or digit left out. What learning and dismissal count and compare ("I'm" is one word, and
    "Mobile:" a label, not the "mobile" of "I lost my mobile"); :func:`words` is for word overlap
    with the model's vocabulary of fields, where "emails" and "email" are one.

    >>> written_words("I'm now — at Mobile:")
    ["i'm", 'now', 'at', 'mobile:']
    """
    return [part for part in text.lower().split() if _is_word(part)]


def _is_word(part: str) -> bool:
    """A whitespace-separated part that is a word as written: it has a letter or digit ("—" has none)."""
    return any(ch.isalnum() for ch in part)


def inside_word(text: str, next_piece: bytes) -> bool:
    """Whether *next_piece* (a token's bytes) would continue the word *text* ends with: no library
    value, snippet or learned phrase starts there (a mined chunk may: it was cut at any token).

    Only for scripts that put spaces between words: in Chinese or Japanese a phone number
    follows "我的电话是" directly, so there nothing counts as inside a word.

    >>> inside_word("I have at", b"tached"), inside_word("Call me at", b" ("), inside_word("me@", b"home")
    (True, False, False)
    >>> inside_word("caf", "é".encode()), inside_word("Tel", "：".encode()), inside_word("我的电话是", b"1")
    (True, False, False)
    """
    if not text or not next_piece or not _spaced_word_char(text[-1]):
        return False
    if 0x80 <= next_piece[0] < 0xC0:
        return True                         # the rest of a character the last token began
    head = next_piece[:4].decode("utf-8", errors="ignore")[:1]
    return bool(head) and _spaced_word_char(head)


def _spaced_word_char(ch: str) -> bool:
    """A letter or digit of a script that separates words with spaces (below the CJK blocks)."""
    return ch.isalnum() and ord(ch) < 0x2E80


def current_sentence(text: str, limit: int = 300) -> str:
    """The sentence being written: the text after the last sentence end (within *limit* characters)."""
    tail = text[-limit:]
    ends = [m for m in _SENTENCE_END.finditer(tail)
            if not (m.group()[0] == "." and _word_before(tail, m.start()) in _ABBREVIATIONS)]
    return tail[ends[-1].end():] if ends else tail


# What ends a clause inside a sentence: a comma, semicolon, colon or dash (an en or em dash, a spaced
# hyphen, a double hyphen).  One definition for every reader of clauses (current_clause, whose._segments).
CLAUSE_MARK = re.compile(r"[,;:\u2013\u2014]|\s-\s|--")
_BRACKETED = re.compile(r"\([^()]*\)")
SHORT_NOTE = 2            # words of a bracketed note that names what the clause speaks of


def current_clause(text: str, notes: bool = False) -> str:
    r"""The clause being written: :func:`current_sentence` after its last comma, semicolon, colon or dash,
    with a bracketed note left out and the marks it ends with set aside (the words that lead into
    what comes next).  With *notes*, a note of a word or two (SHORT_NOTE) that are content words keeps
    them: it says which thing the clause speaks of ("ID document (passport) number:"), where a longer
    one, or one with a function word ("(per passport)", "(not passport)"), is an aside.

    >>> current_clause("Our office line, in case email is slow, is"), current_clause("Hi,\n\nCall me:")
    (' is', 'Call me')
    >>> current_clause("My phone (mobile) --"), current_clause("ID (passport) number:", notes=True)
    ('My phone', 'ID  passport  number')
    >>> current_clause("Our line (in case email is slow) is", notes=True), current_clause("Name (per passport):", notes=True)
    ('Our line   is', 'Name')
    """
    body, before = current_sentence(text), None

    def note(m: re.Match) -> str:
        inner = m.group(0)[1:-1]              # (_BRACKETED: no bracket inside)
        kept = (notes and len(inner.split()) <= SHORT_NOTE
                and not any(w in FUNCTION_WORDS for w in _WORD_RE.findall(inner.lower())))
        return f" {inner} " if kept else " "

    while body != before:                       # inner notes first: "x (a (b) c) is" -> "x   is"
        body, before = _BRACKETED.sub(note, body), body
    body = body.rstrip(" \t\n:,;(\u2013\u2014-")
    marks = list(CLAUSE_MARK.finditer(body))
    return body[marks[-1].end():].rstrip() if marks else body.rstrip()


def sentence_opening(text: str) -> str:
    r"""The text before the sentence being written (:func:`current_sentence`, however long the sentence).

    >>> sentence_opening("Hi Jo,\nThanks. It now connects to")
    'Hi Jo,\nThanks. '
    """
    return text[: len(text) - len(current_sentence(text, limit=len(text)))]


def _word_before(text: str, end: int) -> str:
    start = end
    while start > 0 and (text[start - 1].isalpha() or text[start - 1] == "."):
        start -= 1
    return text[start:end].lower()


def ends_sentence(text: str) -> bool:
    r"""Whether *text* ends a sentence: ". ! ?" after a word or number, not after a list number or an abbreviation.

    >>> ends_sentence("Thanks for the files."), ends_sentence("Call me on 555-0147."), ends_sentence("Really?!")
    (True, True, True)
    >>> ends_sentence("Steps:\n1."), ends_sentence("Ask Dr."), ends_sentence("e.g."), ends_sentence("at 3.")
    (False, False, False, True)
    """
    tail = text.rstrip(" \t")
    body = tail.rstrip(".!?")
    if not body or body == tail or not (body[-1].isalnum() or body[-1] in ")\"'\u2019\u201d"):
        return False
    if body.rsplit("\n", 1)[-1].strip().isdigit():
        return False                                   # "1." opens a list item
    return not (tail[len(body)] == "." and _word_before(body, len(body)) in _ABBREVIATIONS)


def is_sentence(text: str) -> bool:
    """A whole sentence (a snippet), as opposed to a value: capitalised, four words or more, ends like a sentence.

    >>> is_sentence("I am available Monday to Thursday."), is_sentence("Lindenstraße 42, Berlin")
    (True, False)
    """
    text = text.strip()
    return bool(text) and text[0].isupper() and text[-1] in ".!?" and len(text.split()) >= 4


def at_clause_start(text: str) -> bool:
    """Whether the next word would begin a sentence or a clause (after . ! ? : ; , or a line break,
    or at the very start): where a snippet sentence may go ("As for timing, I am free on Mondays.").

    >>> at_clause_start("Thanks for the files."), at_clause_start("As for timing,"), at_clause_start("a meeting with")
    (True, True, False)
    """
    tail = text.rstrip(" \t")
    return not tail or tail[-1] in ".!?:;,\n"


def at_line_start(text: str) -> bool:
    r"""Whether the next word would begin a line (a paragraph, after a greeting line, a list item):
    where any clause may start, so being at a clause start says nothing there.

    >>> at_line_start("Hi Tom,\n\n"), at_line_start("Hi Tom,\n"), at_line_start("Thanks.  "), at_line_start("")
    (True, True, False, False)
    """
    return text.rstrip(" \t").endswith("\n")


def opens_paragraph(text: str) -> bool:
    """Whether a continuation of *text* may open with a blank line: after a sentence, a greeting
    line ("Hi Oskar,"), or at the start of a line; not after "Call me:" or mid-sentence.

    >>> opens_paragraph("Thanks for your help."), opens_paragraph("Hi Oskar,"), opens_paragraph("Ship to:")
    (True, True, False)
    """
    tail = text.rstrip(" \t")
    if not tail or tail.endswith("\n") or tail[-1] in ".!?":
        return True
    line = tail.rsplit("\n", 1)[-1]
    return tail[-1] == "," and len(line.split()) <= 4


# Words that open a noun phrase: after one, a phone number, an email or a name cannot come next
# ("...sends new subscribers a", "...a pre-order page to the"); after an article, a job title can
# ("I'm a", "I'm the").
ARTICLES = frozenset({"a", "an", "the"})
DETERMINERS = ARTICLES | {"my", "your", "our", "his", "her", "their", "its", "this", "these", "those",
                          "each", "every", "some", "any"}

# English closed-class words (pronouns, prepositions, auxiliaries, conjunctions, the determiners above)
# and the stems :func:`words`-style splitting leaves of a contraction ("number's" -> "number", "s";
# "don't" -> "don", "t"): they say how a sentence is built, not what it asks for.  A short list
# written here rather than a dependency (NLTK's list needs its data downloaded; this is all
# :func:`content_words` needs).
FUNCTION_WORDS = DETERMINERS | frozenset("""
no all i me we us you he him she it they them myself mine yours ours who whom whose which what that how
where why at on to in of for with by from via as about into onto over under after before up out off
through per around until without is are was were be been being am do does did done have has had can
could will would shall should may might must and or but so if when while than then because though also
just not yes here there please more other only very
s m re ll ve d t don won isn aren wasn weren didn doesn haven hasn couldn wouldn shouldn
""".split())


def content_words(text: str) -> set[str]:
    """The words of *text* (as :func:`words` writes them) but :data:`FUNCTION_WORDS`: what it speaks of.

    >>> sorted(content_words("My number's below, don't call me at"))
    ['below', 'call', 'number']
    """
    return set(content_word_list(text))


def content_word_list(text: str) -> list[str]:
    """:func:`content_words` in the order written, repeats kept: where in a clause a word was said.

    >>> content_word_list("I renewed my passport and my mobile is")
    ['renewed', 'passport', 'mobile']
    """
    return [w for raw in _WORD_RE.findall(text.lower()) if raw not in FUNCTION_WORDS for w in words(raw)]


def last_determiner(text: str) -> str | None:
    """The determiner the text ends with, nothing after it but spaces; None otherwise.

    >>> last_determiner("sends new subscribers a "), last_determiner("I'm on my"), last_determiner("Ship to the.")
    ('a', 'my', None)
    >>> last_determiner("Ship to the\\n")     # a line ended after it

    """
    m = re.search(r"(?:^|\s)([^\W\d_]+)[ \t]*\Z", text)
    word = m.group(1).lower() if m else None
    return word if word in DETERMINERS else None


PHRASE_WORDS = 12    # at most this many words before a value make a learned context


LABEL_WORDS = 4          # "Billing address:", "Name for the reservation:": a label, not a sentence


def label_line(text: str) -> str | None:
    """The form label the text ends in: its last line, of at most LABEL_WORDS words ending in ":"
    ("Delivery address:", "Tel:" under a signature); None where the text ends otherwise.

    >>> label_line("Kind regards,\\nAna\\nMobile: "), label_line("Please send it to this address:")
    ('Mobile:', None)
    """
    line = text.rstrip(" \t").rsplit("\n", 1)[-1].strip()
    return line if line.endswith(":") and len(line.split()) <= LABEL_WORDS else None


def learnable(phrase: str) -> bool:
    """A lead-in specific enough to learn a value after (core/feedback.py): two words or more ("ring
    me on"), or a label ("Mobile:"); never a lone word or a finished sentence ("Thanks.").

    >>> learnable("ring me on"), learnable("Mobile:"), learnable("I'm"), learnable("Thanks.")
    (True, True, False, False)
    """
    # Words as written, not the pieces words() splits them into: "I'm" is one word, and learned alone
    # it put the email after every "I'm" (bench/personal.py --feedback: a name's place on the test split).
    n = len(written_words(phrase))
    return n >= 2 or (n == 1 and phrase.rstrip().endswith(":"))


def lead_in(text: str) -> str:
    """The phrase that leads into what comes next: the sentence being written, or, at the start
    of a line, the line before it ("Kind regards," before a name); at most PHRASE_WORDS words.

    >>> lead_in("Thanks. For anything urgent, ring me on "), lead_in("Hi,\\n\\nKind regards,\\n")
    ('For anything urgent, ring me on', 'Kind regards,')
    """
    sentence = current_sentence(text).strip()
    if not sentence:
        lines = [line.strip() for line in text[-300:].splitlines() if line.strip()]
        sentence = current_sentence(lines[-1]).strip() if lines else ""
    parts = sentence.split()
    at = [i for i, part in enumerate(parts) if _is_word(part)]    # PHRASE_WORDS counts words as written
    return " ".join(parts[at[-PHRASE_WORDS] if len(at) > PHRASE_WORDS else 0:])
