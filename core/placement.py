"""Where one of the user's own chunks may go: the gates a proposal passes before it is inserted.

A part of :class:`core.decoding.Decoder` (its base class), kept apart because it is a concern of its own:
the decode loop asks :meth:`Placement.fits_here` once per proposal and reads on.  The gates read the
decoder's text so far and its notes on this suggestion: ``_text`` (prompt tail + generated text),
``_prompt_chars`` (where the generated part begins), ``_lead_word``, ``_line_break``,
``_someone_elses_here``, and its ``matcher`` and ``rt``.  Each bar below was chosen on the dev sets
(docs/benchmarks.md names the run).
"""
from __future__ import annotations

import numpy as np

from . import whose
from .matching import Proposal
from .sampling import token_probability
from .text import ARTICLES, DETERMINERS, at_clause_start, is_sentence, last_determiner

LEAD_IN_WORDS = 0         # words the model may write before one of the user's values: none (but see LEAD_WORDS). After words the model
                          # added (" the", "'m"), the probe and classifier judge the model's sentence, not the
                          # user's (dev split, bench/personal.py: 2 -> 0 gave right 46 -> 42, wrong 6 -> 4,
                          # third party 2 -> 1, neutral 1 -> 0; keystrokes 32.6% -> 32.8%)

# Where the model is this sure of the next word, and that word could not stand where a value goes, the
# phrase is not finished and none of the user's values goes here ("Kind" -> " regards", "Thanks" ->
# " for", "As part" -> " of": bench/prose.py, the user's name and role inserted there before).  Words
# that can stand in a value's place (a determiner, a pronoun, "here", a capitalised word: a name or a
# place) do not count: "...and sent to" -> " the" is where the user's email goes too, "Hi Maria,\n\nMy
# name is" -> " Maria" where the user's name does.  Chosen on the dev sets (docs/benchmarks.md).
GOES_ON = 0.35
STAND_INS = DETERMINERS | frozenset("that me us him them you it i we he she they here there".split())
# Marks that end a phrase: where the model is as sure (GOES_ON) of one right after the user's word
# ("Kind regards" -> ",", "Phone" -> ":"), the mark comes before any value ("Kind regards John Doe,"
# read as one line: Decoder.mark_first).  A comma or colon then leads into the value kept out for it,
# as a lead word does (LEAD_WORDS).
PHRASE_MARKS = frozenset(",;:.!?")
LEADING_MARKS = frozenset(",:")
# Words that lead into what follows them, a value among others ("reached by phone" -> " at", "My number"
# -> " is"): a preposition or a form of "be".  Only such a word of the model's, when it was sure of it
# (words_go_on), may stand before one of the user's values (Decoder.value_after_lead_word): after "Kind"
# -> " regards" the phrase the model goes on with is the sentence, not a lead-in (bench/prose.py dev: 13
# more values misplaced when any sure word could lead in, 12 of them "Kind regards Mara Lindqvist").
LEAD_WORDS = frozenset("at on to via by from under as in of for with is are was be".split())


class Placement:
    """The gates of :meth:`fits_here` and the lead word a value may follow; the Decoder's base class."""

    def fits_here(self, proposal: Proposal, logits: np.ndarray | None = None) -> bool:
        """One of the user's own chunks goes here only where the text can take it, and it is theirs.

        - where the user's text leads into it: at the cursor (LEAD_IN_WORDS), or
          at the start of a line the model breaks there, never after words the
          model made up, except the one lead-in word the model was sure of before a value proposed
          at the cursor, and then only that value, or the lead word the model chose where none was
          proposed (:meth:`lead_word_ahead`; :meth:`value_after_lead_word`), or the comma or colon it
          was sure of first (:meth:`mark_first`: "Kind regards" -> "," and then the name);
        - a whole sentence (a snippet) starts a sentence or a clause, never the middle of one;
        - whose: not where the slot classifier reads someone else's detail about as likely
          (:attr:`Proposal.reads_as_someone_elses`) unless the writer says "my" in the last words
          (whose.says_my: "...my contact number is"), not a place's contact detail
          (:meth:`a_places_detail`), then :meth:`writer_owns_slot`; none asked
          where the user typed this value after these very words before (a learned context says
          it is theirs).  Judged someone else's once, the place stays so for the user's values
          while the model writes only spaces (own_chunks_fit ends it at the first word anyway); a
          snippet sentence is still judged by its own reading there;
        - not where the user has begun typing the chunk ("Facilities" -> " Facilities Coordinator",
          :meth:`begun_by_hand`, any chunk of the user's, learned or not);
        - for a value (not a learned one, not a snippet sentence): not after a determiner
          (:meth:`after_determiner`), not the user's name after a greeting on its line or on or
          below a salutation line (:meth:`reader_named_here`), and not where the model (*logits*,
          this step's) is sure the words go on (:meth:`words_go_on`).
        """
        if not self.own_chunks_fit() or self.begun_by_hand(proposal):
            return False
        if self.at_lead_word() and not self.value_after_lead_word(proposal, logits):
            return False                             # after the model's word: that one value, or nothing
        sentence = is_sentence(proposal.text)
        if proposal.learned:                         # the user's own words before this value: theirs
            return not sentence or at_clause_start(self._text)
        if proposal.reads_as_someone_elses and not whose.says_my(self._text):   # the typed route's reading
            self._someone_elses_here = True
            return False
        if sentence:
            return at_clause_start(self._text)       # the writer's own sentence: no what-if probe asked
        if self.after_determiner(proposal) or self.reader_named_here(proposal):
            return False
        if logits is not None and not self.at_lead_word() and self.mark_first(logits):
            mark = self.top_word(logits)
            if not self.past_cursor() and set(mark) <= LEADING_MARKS:
                self._lead_word = (proposal.chunk_id, mark)  # the value may come after the model's comma instead
            return False
        if logits is not None and self.words_go_on(logits, proposal):
            word = self.top_word(logits)
            if not self.past_cursor() and word.strip().lower() in LEAD_WORDS:
                self._lead_word = (proposal.chunk_id, word)  # the value may come after the model's word instead
            return False
        if self.a_places_detail(proposal):
            return False                             # the words, not a reading: the next value is judged afresh
        if self._someone_elses_here or not self.writer_owns_slot(proposal):
            self._someone_elses_here = True          # a value: judged once at the cursor, not after each space
            return False
        return True

    def lead_word_ahead(self, logits: np.ndarray) -> bool:
        """At the cursor, where nothing at all was proposed (no value of the user's, no mined phrase), and
        the model's own next word is a lead word (:data:`LEAD_WORDS`), after which one may come ("Quick
        intro: I'm on the product team" -> " at" -> the company; the classifier read company 0.99 after " at" and below its cut before
        it).  Not where the place was judged someone else's, and only after a word of the user's, as
        :meth:`words_go_on`.  Past that word :meth:`value_after_lead_word` still asks that the model
        expect no ordinary word next, and every gate of :meth:`fits_here` judges the value."""
        if self.past_cursor() or self._lead_word is not None or self._someone_elses_here or not self.own_chunks_fit():
            return False
        word = self.top_word(logits)
        return word[:1] == " " and word.strip().lower() in LEAD_WORDS and self.after_word()

    def value_after_lead_word(self, proposal: Proposal, logits: np.ndarray | None) -> bool:
        """After the lead word (:data:`LEAD_WORDS`) the model was sure of where a value was first
        proposed ("I can be reached by phone" -> " at"): only that value (any of the user's after a lead
        word noted where none was proposed, :meth:`lead_word_ahead`), and only where the model itself
        now expects no ordinary word (its top next token is not a lower-case word: "As part" -> " of" ->
        " the" is prose, "by phone at" -> " " or "(" is a value).  The model wrote that word, so its own
        next token is asked as well."""
        if logits is None or self._lead_word[0] is not None and proposal.chunk_id != self._lead_word[0]:
            return False
        word = self.top_word(logits).strip()
        return not (word[:1].islower() and word.isalpha())

    def at_lead_word(self) -> bool:
        """Whether all the model has written so far is the lead-in word or mark it was sure of before a
        value at the cursor (``_lead_word``, recorded in :meth:`fits_here`)."""
        return self._lead_word is not None and self._text[self._prompt_chars:] == self._lead_word[1]

    def own_chunks_fit(self) -> bool:
        """Whether the text written so far still leads into one of the user's own chunks: no more
        than LEAD_IN_WORDS words of the model's and no sentence or line ended since the cursor, or
        just the lead-in word or mark the model was sure of (:meth:`at_lead_word`; fits_here then lets only
        that word's value through)."""
        lead_in = self._text[self._prompt_chars:]
        if self.at_lead_word():
            return True
        return len(lead_in.split()) <= LEAD_IN_WORDS and not any(ch in lead_in for ch in ".!?\n")

    def past_cursor(self) -> bool:
        """Whether the model has written anything in this suggestion yet."""
        return len(self._text) > self._prompt_chars

    def words_go_on(self, logits: np.ndarray, proposal: Proposal) -> bool:
        """Right after a letter or digit, the model's most likely next token (a word or a word piece,
        "Kind" -> "ly") has at least :data:`GOES_ON`, and it is neither the start of the value nor a
        word that could stand where a value goes (:data:`STAND_INS`, or a capitalised word): the phrase is not finished
        ("Kind" -> " regards").  Not after punctuation, where a value may stand apart ("see my
        personal website," -> " and" 0.35 or more, bench/entities.py)."""
        if not self.after_word():
            return False
        word = self.top_word(logits).strip()
        if (not word.isalpha() or word[0].isupper() or word.lower() in STAND_INS
                or proposal.text.lstrip().lower().startswith(word.lower())):
            return False
        return self.model_sure(logits)

    def mark_first(self, logits: np.ndarray) -> bool:
        """Right after a letter or digit, the model's most likely next token is a mark that ends a phrase
        (:data:`PHRASE_MARKS`) with at least :data:`GOES_ON`: "...\n\nKind regards" -> "," and "Phone" -> ":"
        come before the user's value, not after it ("Kind regards John Doe,").  A comma or colon is then
        noted as a lead word (:data:`LEADING_MARKS`, ``_lead_word``): right after the model writes it,
        that value may still come (:meth:`value_after_lead_word`), where a line the model breaks
        ("Kind regards," + "\n") starts with the name."""
        mark = self.top_word(logits).strip()
        return self.after_word() and bool(mark) and set(mark) <= PHRASE_MARKS and self.model_sure(logits)

    def after_word(self) -> bool:
        """Whether the text ends in a letter or digit (spaces aside): the user's word, not punctuation."""
        return self._text.rstrip(" \t")[-1:].isalnum()

    def model_sure(self, logits: np.ndarray) -> bool:
        """Whether the model's most likely next token (*logits*, (V,)) has at least :data:`GOES_ON`."""
        return token_probability(logits, int(np.argmax(logits))) >= GOES_ON

    def top_word(self, logits: np.ndarray) -> str:
        """The text of the model's most likely next token (*logits*, (V,)), as it would be written."""
        return self.rt.piece(int(np.argmax(logits))).decode("utf-8", "replace")

    def after_determiner(self, proposal: Proposal) -> bool:
        """The text ends with a determiner (text.last_determiner): no value of the user's goes next,
        but a job title may follow an article ("I'm a", "I'm the")."""
        word = last_determiner(self._text)
        return word is not None and not (self.field_of(proposal) == "job_title" and word in ARTICLES)

    def reader_named_here(self, proposal: Proposal) -> bool:
        """The user's name where the text greets or thanks someone on this line ("Thanks" + name,
        whose.addresses_reader): the name there is the reader's.  Not where the model would break the
        line first: "Thanks" then the name below it is a sign-off -- but the line below a salutation
        ("Hi all," + "\\nMara Lindqvist", whose.after_salutation) is the email's body."""
        if self.field_of(proposal) != "name":
            return False
        return whose.after_salutation(self._text) or not self._line_break and whose.addresses_reader(self._text)

    def begun_by_hand(self, proposal: Proposal) -> bool:
        """The text ends with the first words of the chunk ("...Lindqvist\nFacilities" before
        "Facilities Coordinator"): the user is typing it, and inserting it whole would repeat them."""
        mine, chunk = self._text.lower().split(), proposal.text.lower().split()
        return any(mine[-k:] == chunk[:k] for k in range(1, min(len(mine), len(chunk)) + 1))

    def a_places_detail(self, proposal: Proposal) -> bool:
        """A phone number, email, web or street address where the words name a place or an
        organisation as its owner ("Hotel address:", "the school website at"): whose.a_places_detail,
        with the chunk's typed field (none for a phrase mined from the user's mail)."""
        return whose.a_places_detail(self._text, self.field_of(proposal), proposal.text)

    def writer_owns_slot(self, proposal: Proposal | None = None) -> bool:
        """The user's own detail, not a colleague's or the hotel's (core/whose.py).

        Words that name someone else ("her mobile's", "Sam's portfolio")
        decide; a bare form label ("Billing address:") is the writer's
        (whose.form_label); otherwise the model's what-if continuation does: one peek of
        three tokens (the cache is left as it was), only at steps where one of
        the user's own chunks was about to be proposed.  For a *proposal* whose stored lead-ins
        speak for a group ("Our office is located at", whose.speaks_as_we), "our" is the writer's too.
        """
        group = proposal is not None and self.matcher is not None and self.matcher.chunk_info(proposal.chunk_id)["group"]
        return whose.writer_owns(whose.person_cue(self._text), lambda: whose.writer_evidence(self.rt, group),
                                 label=whose.form_label(self._text))

    def field_of(self, proposal: Proposal) -> str | None:
        """The proposed chunk's typed field (ChunkMatcher.typed_field): None for a mined phrase or an untyped snippet."""
        return self.matcher.typed_field(proposal.chunk_id) if self.matcher is not None else None
