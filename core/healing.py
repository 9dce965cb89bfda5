"""The word the user is in the middle of: finish it as the model would spell it (token healing).

A pause inside a word ("Thanks for the upd") leaves the prompt's last tokens cut where the
tokenizer cut the typed letters (" up" + "d"), which is not how the model writes the word it
means (" update"): continued from there, the bundled model wrote "ater." after "upd", "i-" after
"I will sen" and "uckle down" after "Let me kn" (bench/midword.py).  So the tokens that spell the
unfinished word are taken back out of the prompt, and the suggestion's first steps choose among the
tokens that agree with the typed letters: one that begins with all of them (" update", " updated"),
or the tokenizer's own next token of them (" up", after which "d" is left to agree with).  Any
shorter part is not offered: given " from" to spell, the model preferred a lone " " and went on
"f", "ro", "m", " 2014-01-22", a path no text it learned from takes.  What the user typed is not
shown again; the rest of the word is the suggestion's start.

The idea is llama.cpp's and Microsoft guidance's "token healing"; here it is one mask on the
decoder's choice while typed letters are left over (core/decoding.py ``Decoder.heal``).

>>> vocab = Vocabulary([b" up", b"d", b" update", b" updated", b"date", b" the", b""])
>>> sorted(vocab.beginning_with(b" upd").tolist()), sorted(vocab.beginning_with(b"d").tolist())
([2, 3], [1, 4])
"""
from __future__ import annotations

import bisect
import re
from typing import Callable, Sequence

import numpy as np

MAX_TOKENS = 3        # an unfinished word spelled by more tokens than this is left as it is
MAX_LETTERS = 24      # and so is a "word" longer than any a person is in the middle of
# The word the text ends in the middle of: letters only, with the one space before it, as the tokenizer
# joins them (" upd").  Digits and signs are left alone: the rest of a phone number the user began is
# the library's to finish, by its own exact characters (Decoder.rest_of_value).
_WORD_END = re.compile(r" ?[^\W\d_]{1,%d}\Z" % MAX_LETTERS)


class Vocabulary:
    """Every token's bytes, sorted, to find the tokens that agree with some typed letters.

    Built once per model (:func:`vocabulary`): 49,152 pieces for the bundled model.
    """

    def __init__(self, pieces: Sequence[bytes]):
        order = sorted((p, i) for i, p in enumerate(pieces) if p)         # special tokens spell nothing
        self._pieces = [p for p, _ in order]
        self._ids = np.array([i for _, i in order], dtype=np.int64)

    def beginning_with(self, typed: bytes) -> np.ndarray:
        """Ids of the tokens that begin with *typed* (itself included)."""
        lo = bisect.bisect_left(self._pieces, typed)
        hi = lo
        while hi < len(self._pieces) and self._pieces[hi].startswith(typed):
            hi += 1
        return self._ids[lo:hi]


def vocabulary(rt) -> Vocabulary:
    """The runtime's :class:`Vocabulary`, made on first use and kept with the model."""
    vocab = getattr(rt, "_healing_vocabulary", None)
    if vocab is None:
        vocab = Vocabulary([rt.piece(t) for t in range(rt.n_vocab)])
        rt._healing_vocabulary = vocab
    return vocab


def unfinished_word(tokens: Sequence[int], text: str, piece: Callable[[int], bytes]) -> int:
    """How many of the prompt's last *tokens* spell the word *text* ends in the middle of (0: none
    to finish, or not one the tokens spell apart from what comes before it).

    >>> pieces = {1: b"Thanks", 2: b" for", 3: b" the", 4: b" up", 5: b"d", 6: b":"}
    >>> unfinished_word([1, 2, 3, 4, 5], "Thanks for the upd", pieces.get)
    2
    >>> unfinished_word([1, 2, 6], "Thanks for:", pieces.get), unfinished_word([1, 2, 3], "Thanks for the", pieces.get)
    (0, 1)
    """
    word = _WORD_END.search(text)
    if word is None:
        return 0
    spelled = b""
    for n in range(1, min(MAX_TOKENS, len(tokens)) + 1):
        spelled = piece(tokens[-n]) + spelled
        if len(spelled) >= len(word.group().lstrip(" ").encode("utf-8")):
            try:
                typed = spelled.decode("utf-8")
            except UnicodeDecodeError:
                continue
            # The tokens spell the word (and the space before it) and nothing before that.
            return n if _WORD_END.fullmatch(typed) and text.endswith(typed) else 0
    return 0
