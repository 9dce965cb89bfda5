"""Spell checking for the email's Subject and body: red wavy underlines and suggestions.

Uses pyspellchecker (a maintained, pure-Python checker that ships its English word-frequency
dictionary, so nothing needs a system package).  Its English list is American; a British
spelling is accepted where the American form is known (colour, organise, centre, travelled),
so both kinds of writer are left in peace.  Words the user adds are kept in ``words.txt`` in
the data directory (owner-only: names in it are the user's).  Only the document is checked,
never the ghost text, which is painted over the viewport and not part of it.

>>> s = Speller(None); s.misspelled("recieve"), s.misspelled("colour"), s.misspelled("ISBN")
(True, False, False)
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QSyntaxHighlighter, QTextCharFormat

from chunkwise.core.paths import atomic_write

from .qtext import py_index, qt_len

WORD = re.compile(r"[A-Za-z][A-Za-z']*[A-Za-z]|[A-Za-z]")
_BRITISH = ((r"our(s?)$", r"or\1"), (r"ise(s|d)?$", r"ize\1"), (r"ising$", r"izing"), (r"isation(s?)$", r"ization\1"),
            (r"yse(s|d)?$", r"yze\1"), (r"tre(s?)$", r"ter\1"), (r"ll(ed|ing|er)$", r"l\1"), (r"ogue(s?)$", r"og\1"),
            (r"ence(s?)$", r"ense\1"))


def default_words_file() -> Path:
    from chunkwise.core.paths import data_dir

    return data_dir() / "words.txt"


class Speller:
    """Which words look misspelled, and what to offer instead."""

    def __init__(self, words_file: Path | None = None):
        self.words_file = words_file
        self._checker = None
        self.personal: set[str] = set()
        # Words of the user's library values (their name, street, company): theirs, so not flagged.
        # Kept in memory only, from the library as it is now (set_library), never written to words.txt.
        self.library: set[str] = set()
        if words_file is not None:
            try:
                self.personal = {w.strip().lower() for w in words_file.read_text(encoding="utf-8").splitlines()
                                 if w.strip()}
            except (OSError, UnicodeDecodeError):
                pass

    @property
    def checker(self):
        if self._checker is None:             # 0.15 s to load: on first use, not at start-up
            from spellchecker import SpellChecker

            self._checker = SpellChecker(language="en")
        return self._checker

    def misspelled(self, word: str) -> bool:
        if len(word) < 2 or word.isupper() or word.lower() in self.personal or word.lower() in self.library:
            return False                      # initials, acronyms, the user's own words and library values
        return not self._known(word.lower().strip("'"))

    @lru_cache(maxsize=20000)
    def _known(self, word: str) -> bool:
        if not word or word in self.checker or word.endswith("'s") and word[:-2] in self.checker:
            return True
        return any(re.search(pattern, word) and re.sub(pattern, us, word) in self.checker
                   for pattern, us in _BRITISH)

    def suggestions(self, word: str, limit: int = 5) -> list[str]:
        """The likeliest corrections first, in the word's own capitalisation."""
        lower = word.lower()
        found = sorted(self.checker.candidates(lower) or [], key=lambda w: -self.checker.word_usage_frequency(w))
        found = [w for w in found if w != lower][:limit]
        if word[:1].isupper():
            found = [w[:1].upper() + w[1:] for w in found]
        return found

    def set_library(self, values) -> bool:
        """Take the words of the user's library *values* as theirs; whether that changed anything.

        >>> s = Speller(None); s.set_library(["Mara Lindqvist", "Nordhavn Properties"]), s.misspelled("Lindqvist")
        (True, False)
        """
        words = {w.lower() for value in values for w in WORD.findall(value)}
        changed, self.library = words != self.library, words
        return changed

    def add(self, word: str) -> None:
        """Never flag *word* again (kept across sessions)."""
        self.personal.add(word.lower())
        if self.words_file is not None:
            self.words_file.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.words_file, "\n".join(sorted(self.personal)) + "\n")


class SpellHighlighter(QSyntaxHighlighter):
    """Red wavy underlines under misspelled words; a layout format, so the text and undo are untouched."""

    def __init__(self, document, speller: Speller):
        super().__init__(document)
        self.speller = speller
        self.enabled = True
        self.underline = QTextCharFormat()
        self.underline.setUnderlineStyle(QTextCharFormat.SpellCheckUnderline)
        self.underline.setUnderlineColor(QColor(Qt.red))
        # The word the user is typing: (block number, Qt position in it) of a cursor right after a word.
        # It is not flagged until the cursor leaves it ("Could you ple" is no misspelling yet), as word
        # processors and browsers do; the pause inside a word now brings its rest as a suggestion.
        self.typing_at: tuple[int, int] | None = None

    def set_enabled(self, enabled: bool) -> None:
        self.enabled = enabled
        self.rehighlight()

    def follow_cursor(self, cursor) -> None:
        """The cursor moved: the word it was typing is checked now, the one it types from here is not."""
        block = cursor.block()
        at = (block.blockNumber(), cursor.positionInBlock()) if not cursor.hasSelection() else None
        if at == self.typing_at:
            return
        before, self.typing_at = self.typing_at, at
        if before is not None and before[0] != block.blockNumber():
            old = self.document().findBlockByNumber(before[0])
            if old.isValid():
                self.rehighlightBlock(old)
        self.rehighlightBlock(block)

    def highlightBlock(self, text: str) -> None:
        if not self.enabled:
            return
        block = self.currentBlock().blockNumber()
        typing = py_index(text, self.typing_at[1]) if self.typing_at and self.typing_at[0] == block else -1
        for m in WORD.finditer(text):
            if m.end() == typing:
                continue                      # the word being typed: not judged before it is finished
            before = text[m.start() - 1] if m.start() else " "
            after = text[m.end()] if m.end() < len(text) else " "
            if before in "@./_-:" or after in "@/_" or (after == "." and m.end() + 1 < len(text)
                                                         and text[m.end() + 1].isalnum()):
                continue                      # part of an address, a URL or a file name
            if self.speller.misspelled(m.group()):
                start = qt_len(text[:m.start()])         # Qt's positions (app/qtext.py)
                self.setFormat(start, qt_len(m.group()), self.underline)

    def misspelled_at(self, text: str, position: int) -> tuple[int, int] | None:
        """(start, end) of the misspelled word of *text* around *position*, if any."""
        for m in WORD.finditer(text):
            if m.start() <= position <= m.end() and self.speller.misspelled(m.group()):
                return m.start(), m.end()
        return None
