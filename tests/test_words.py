"""Where a word goes on: the decoder looks for the user's own values only where a word can start."""
import pytest

from chunkwise.core import slots, text
from chunkwise.core.text import inside_word


@pytest.mark.parametrize("before, piece, inside", [
    ("Please find it at", b"tached", True),          # "attached": the word goes on
    ("You can reach me at", b" (", False),            # a phone number starts here
    ("You can reach me at", b" +", False),
    ("Mail me:", b" ana", False),                     # after punctuation a value may start
    ("ana.marin@", b"example", False),                # inside an address a mined chunk may go on; "@" ends no word
    ("caf", "é".encode(), True),                      # a letter outside ASCII goes on too
    ("caf", "é".encode()[1:], True),                  # the rest of a character the last token began
    ("Phone", "—".encode(), False),                   # a dash, a colon, quotes start nothing of the word
    ("Tel", "：".encode(), False),
    ("我的电话是", b"1", False),                        # no spaces between words: never "inside"
    ("我的电话是", "：".encode(), False),
    ("", b"word", False),
    ("word", b"", False),
])
def test_only_a_piece_that_goes_on_with_the_word_is_inside_it(before, piece, inside):
    """Catches: a gate that blocks the user's values after a colon or dash, or in a language
    written without spaces (all counted "inside a word" by a test on the first byte alone)."""
    assert inside_word(before, piece) is inside


def test_the_words_hash_is_the_one_the_shipped_classifier_was_trained_with():
    """word_slots is where the shipped slot classifier's word weights are read: a changed hash,
    plural rule or 'last three words' marker would silently read other columns."""
    assert slots.word_slots("Should you need me, my mobile is") == [632, 663, 706, 992, 1264, 2070, 2282, 3140, 3652, 3725]
    assert slots.word_slots("") == []


def test_a_learned_phrase_counts_words_as_written():
    """The phrase before a value that learning stores and dismissal remembers (text.lead_in) holds
    PHRASE_WORDS words as written: a dash between them is no word.  Catches: marks counted as
    words, which cut a long lead-in short by as many words as it had dashes."""
    words = [f"w{i}" for i in range(text.PHRASE_WORDS + 3)]
    sentence = " — ".join(words[:6]) + " " + " ".join(words[6:]) + " on"
    phrase = text.lead_in(f"Hi Jo,\n\nThanks. {sentence}")
    assert text.written_words(phrase) == text.written_words(sentence)[-text.PHRASE_WORDS:]
    assert phrase.endswith(" on") and " — " in phrase
    assert text.lead_in("Thanks. Ring me on ") == "Ring me on"                 # short: the sentence whole
