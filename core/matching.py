"""Chunk proposal: which stored chunk, if any, fits the text at this step.

The paper (section 4.2, Eq. 3) takes the hidden state that predicted the
newest token as query, confines candidates to that token's entry trie, and
maps the best cosine to an acceptance probability.  With a 135M model that
alone picks the right chunk on about half of the phrasings users really
type (docs/matching.md has the numbers), so matching here works in three
measured steps:

1. **Slot gate** -- is this a place where some stored chunk goes?  The query
   is the state *after* the newest token (it predicts the next one), whitened
   with the model's statistics of ordinary text; an HNSW index over the
   stored contexts' whitened vectors returns the nearest 16.  No entry
   token filter: "call me at", "call me on" and "my number:" all lead into
   the same chunk.
2. **Chunk choice** -- which chunk?  Among the candidates, the one whose
   contexts agree best with the newest state, with the last few tokens
   (local vectors) and with the words of the current sentence (IDF-weighted
   overlap with the chunk's contexts and label: "email", "GitHub",
   "office").  Its match score ``s = (cosine + 0.6 local + 0.4 words) / 2``
   is what the acceptance function sees.
3. **Acceptance** -- ``q = 0`` below eta, ``(s - eta) / (1 - eta)`` above
   (appendix D.4); greedy acceptance takes the chunk when ``q >= 0.5``.  Eta
   comes from a threshold on a calibrated 0..1 scale (:class:`Calibration`),
   so the same setting means the same across models and stores.

>>> Calibration(background=0.4).raw_cutoff(0.5)
0.7
"""
from __future__ import annotations

import copy
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from .encoding import BACKGROUND_FILE, ModelStats
from .matching_state import MatchingState
from .naming import NamingRules
from .slots import NONE, SENTENCE_KINDS, THIRD_PARTY, SlotClassifier
from .text import at_line_start, current_sentence, is_sentence, lead_in, words, written_words

CANDIDATES = 16          # nearest contexts fetched per step
COMMON_SHARE = 0.05      # a word in 1 of 20 background paragraphs or more is common (_Lexicon.common)
LEXICAL_WEIGHT = 0.3     # weight of word overlap in the chunk choice
LOCAL_GATE = 0.6         # weight of local agreement in the match score
LEXICAL_GATE = 0.4       # weight of word overlap in the match score
DEFAULT_THRESHOLD = 0.3   # on the calibrated scale; docs/matching.md, docs/benchmarks.md (dev split)
DEFAULT_BACKGROUND = 0.4  # calibration floor when the store has no entries of the user's own
SHORT_SENTENCE = 3       # word overlap of shorter sentences counts for less
# Mined phrases ("I hope this email finds you well") recur naturally; a
# person's phone number or a snippet written twice in one email does not.
REPEATABLE_KINDS = frozenset({"self", "teacher"})
REPEAT_WINDOW = 200      # characters in which even a mined phrase is not offered again
# A typed snippet sentence needs this share of the type cut (chosen on the dev split of
# bench/personal.py, right / wrong-field: 1.0 -> 58 / 3, 0.6 -> 59 / 4, 0.4 -> 61 / 4, 0.25 -> 62 / 6 of 87).
SENTENCE_CUT = 0.4
TYPE_FLOOR = 0.1         # type agreement at threshold 0 (dev split, bench/personal.py)
# ... rising to 1 (nothing, short of certainty) at threshold 1, on a curve through 0.35 at the default
# 0.3 (the cut chosen on dev, in a scratch replay of bench/personal.py's decision: 0.28 / 0.32 / 0.35 /
# 0.45 -> 72 / 70 / 69 / 65 of 87 right, 6 / 4 / 3 / 3 wrong field, 2 / 0 / 0 / 0 of 38 someone else's).
# A straight line to 0.7 let a confident classifier insert at 1.0, the slider's "never" end.
TYPE_POWER = 1.064       # (1 - TYPE_FLOOR) * 0.3 ** TYPE_POWER = 0.25
# The user's field must read this many times as likely as someone else's detail (the classifier's
# third-party class) for a typed chunk -- a value or a snippet -- to be the user's here
# (Proposal.reads_as_someone_elses, asked in Decoder.fits_here): where the two are close, the text is
# as much about another party ("The clinic is located at" read address 0.52, someone else's 0.47 in a
# scratch run).  Chosen on bench/data/entities (organisations' and places' details), in a scratch
# replay at the cursor (off / 1 / 1.4 / 2 / 2.5 / 3.3 -> 12 / 10 / 9 / 9 / 7 / 7 of 100 inserted, the
# user's own 49 / 49 / 49 / 49 / 49 / 48 of 60), then through the editor's request (bench/entities.py:
# 16 -> 9 of 100, own 47 of 60 kept); bench/personal.py dev unchanged.  With the writer probe
# " — that's" (core/whose.py) 2.0 gained three right values on the paper dev set, but let the user's
# address in after "The garage is located at" (tests/test_slots.py), so it stays at 2.5
# (bench/out/*-dev-probe-*.txt; docs/benchmarks.md "A better writer probe").
OWN_OVER_OTHERS = 2.5
# Where the classifier reads two of the user's own fields nearly alike ("Our office line, in case email
# is slow, is" -> email 0.53, phone 0.29), it cannot tell which goes here, and a phone number where the
# email belongs is worse than nothing (issue 10): the best must read this many times the best of another
# field at the default threshold, 1 (no rule) at 0 (rival_ratio).  Chosen on the dev splits of
# bench/personal.py and bench/cli_profile.py (bench/slot_reading.py --rival); docs/benchmarks.md.
RIVAL_OVER = 2.0
VALUE_BEGUN_CHARS = 4     # characters of a value typed (spaces aside) before its rest is offered
# What a value's start has and a word does not: a digit, "@", "+", "/", "#", "_", or a dot inside a word
# ("mara.lind").  Not a comma, a dash or a full stop after a word: "Thanks," begins a snippet and a sentence alike.
_VALUE_SIGN = re.compile(r"[\d@+/#_]|\S\.\S")
AVOID_WORDS = 6          # the last words before a place compared with where the user dismissed a chunk
AVOID_OVERLAP = 0.5      # ... and the share of them in common (Jaccard) that counts as the same place


@dataclass(frozen=True)
class Proposal:
    """A chunk proposed at one step, with its acceptance probability ``q``."""

    chunk_id: int
    kind: str
    label: str | None
    text: str
    tokens: tuple[int, ...]
    match: float        # the match score (match_score of cosine, local and words; for a typed chunk the slot
                        # classifier's agreement); "similarity" means only the whitened cosine (Candidate)
    score: float        # the match on the calibrated 0..1 scale
    q: float            # acceptance probability (appendix D.4)
    learned: bool = False   # the user typed this value after these very words (learned_proposal)
    rest_of: bool = False   # the rest of a value the user has begun typing (ChunkMatcher.value_begun)
    # The slot classifier's reading that someone else's detail comes here; only the typed route
    # (typed_proposal) reads it, so None on every other proposal.
    someone_elses: float | None = None

    @property
    def reads_as_someone_elses(self) -> bool:
        """The classifier finds someone else's detail about as likely here as the user's field
        (:data:`OWN_OVER_OTHERS`): whose it is, judged with the words and the writer probe.

        >>> typed = lambda others: Proposal(1, "pii", "phone", "+49 30 1234", (), 0.52, 0.52, 1.0, someone_elses=others)
        >>> typed(0.47).reads_as_someone_elses, typed(0.05).reads_as_someone_elses
        (True, False)
        >>> typed(None).reads_as_someone_elses    # not read: a proposal of the retrieval path or a learned one
        False
        """
        return self.someone_elses is not None and someone_elses_here(self.match, self.someone_elses)


def someone_elses_here(agreement: float, someone_elses: float) -> bool:
    """The user's field (*agreement*) reads less than :data:`OWN_OVER_OTHERS` times someone else's
    detail (*someone_elses*): the place is as much another party's.

    >>> someone_elses_here(0.52, 0.47), someone_elses_here(0.75, 0.20)
    (True, False)
    """
    return agreement < OWN_OVER_OTHERS * someone_elses


def type_cutoff(threshold: float) -> float:
    """The classifier's agreement a typed chunk needs at *threshold* (0..1 -> TYPE_FLOOR..1).

    >>> round(type_cutoff(0.3), 2), type_cutoff(1.0)
    (0.35, 1.0)
    """
    return TYPE_FLOOR + (1.0 - TYPE_FLOOR) * min(max(threshold, 0.0), 1.0) ** TYPE_POWER


def rival_ratio(threshold: float) -> float:
    """How many times the best reading of another of the user's fields a typed chunk's agreement must
    be at *threshold*: 1 at 0 (no rule: the best reading wins, however near the next), RIVAL_OVER at
    the default (DEFAULT_THRESHOLD), rising in a straight line.

    >>> rival_ratio(0.0), rival_ratio(0.3), round(rival_ratio(0.1), 2)
    (1.0, 2.0, 1.33)
    """
    return 1.0 + (RIVAL_OVER - 1.0) * min(max(threshold, 0.0), 1.0) / DEFAULT_THRESHOLD


def threshold_reaching(agreement: float, rival: float = 0.0) -> float:
    """The highest threshold at which *agreement* still passes: the inverse of :func:`type_cutoff`, and
    of :func:`rival_ratio` against *rival*, the best reading of another of the user's fields.

    >>> round(threshold_reaching(0.35), 2), round(threshold_reaching(0.6, rival=0.3), 2)
    (0.3, 0.3)
    """
    x = (agreement - TYPE_FLOOR) / (1.0 - TYPE_FLOOR)
    reach = x ** (1.0 / TYPE_POWER) if x > 0 else x
    if rival > 0 and RIVAL_OVER > 1:
        reach = min(reach, DEFAULT_THRESHOLD * (agreement / rival - 1.0) / (RIVAL_OVER - 1.0))
    return reach


@dataclass
class Calibration:
    """Maps match scores to a 0..1 scale that means the same across models.

    0 is ``background``: how similar ordinary text positions get to the
    stored contexts (the 99.5th percentile of their best match, measured on
    the model's own states over ``core/data/background_emails.txt``).  1 is
    an exact match with a stored context (cosine 1).  Raw cosines differ a
    lot between models (docs/matching.md); distances above the background
    level are comparable.
    """

    background: float

    def raw_cutoff(self, threshold: float) -> float:
        return round(self.background + threshold * (1.0 - self.background), 6)

    def to_scale(self, score: float) -> float:
        return (score - self.background) / max(1.0 - self.background, 1e-6)

    def eta(self, threshold: float) -> float:
        """The paper's eta such that greedy acceptance (q >= 0.5) starts at the cutoff."""
        return 2.0 * self.raw_cutoff(threshold) - 1.0


def match_score(similarity, local, lexical):
    """Whether a chunk goes here, in [-1, 1]: its contexts' cosine, local agreement and words.

    Weights measured on held-out phrasings (docs/matching.md).
    """
    return (similarity + LOCAL_GATE * local + LEXICAL_GATE * lexical) / 2.0


def acceptance(similarity: float, eta: float) -> float:
    """Appendix D.4: q = 0 below eta, (s - eta) / (1 - eta) above."""
    if similarity < eta:
        return 0.0
    return min(1.0, (similarity - eta) / max(1.0 - eta, 1e-6))


class _Lexicon:
    """IDF weights from the background text; word sets per chunk."""

    def __init__(self) -> None:
        text = BACKGROUND_FILE.read_text(encoding="utf-8") if BACKGROUND_FILE.exists() else ""
        docs = [set(words(p)) for p in text.split("\n\n") if p.strip()]
        df = Counter(w for d in docs for w in d)
        self._n = len(docs)
        self._df = df

        self._idf: dict[str, float] = {}
        self._last: tuple[str, dict[str, float], float] = ("", {}, 0.0)

    def idf(self, word: str) -> float:
        value = self._idf.get(word)
        if value is None:
            value = self._idf[word] = math.log((self._n + 1) / (self._df.get(word, 0) + 0.5))
        return value

    def weigh(self, sentence: str) -> tuple[dict[str, float], float]:
        """IDF weights of a sentence's words and the total to normalise by (cached for the last sentence).

        A sentence of one or two words ("The number") says little about what
        follows, yet one shared word would count as full overlap: the total
        is padded as if the sentence had at least SHORT_SENTENCE words.
        """
        if sentence != self._last[0]:
            found = words(sentence)
            weights = {w: self.idf(w) for w in set(found)}
            total = sum(weights.values())
            if found and len(found) < SHORT_SENTENCE:
                total *= SHORT_SENTENCE / len(found)
            self._last = (sentence, weights, total)
        return self._last[1], self._last[2]

    def common(self, word: str) -> bool:
        """Whether *word* is in at least COMMON_SHARE of the background emails' paragraphs ("my", "me",
        "at", "the", "for"): a word any email may say, which tells no entry of the user's from another."""
        return self._df.get(word, 0) >= COMMON_SHARE * self._n

    def overlap(self, weights: dict[str, float], total: float, chunk_words: set[str]) -> float:
        if total <= 0:
            return 0.0
        return sum(v for w, v in weights.items() if w in chunk_words) / total


class ChunkMatcher(MatchingState, NamingRules):
    """Proposes chunks for one model from the in-memory state :class:`MatchingState` keeps current;
    which of the user's values their words name is :class:`NamingRules`' (core/naming.py)."""

    def __init__(self, stats: ModelStats, threshold: float = DEFAULT_THRESHOLD):
        self.stats = stats
        self.dim = stats.mean.shape[0]
        self.threshold = threshold
        self.agreement_gate = True
        self.lexicon = _Lexicon()
        self.calibration = Calibration(background=DEFAULT_BACKGROUND)
        self.slots: SlotClassifier | None = None    # what kind of detail comes next (core/slots.py)
        self._reset()                               # rows, index, chunks: core/matching_state.py

    def __len__(self) -> int:
        return len(self.index)

    @property
    def library_entries(self) -> int:
        """How many of the user's own library entries (not phrases mined from their mail) matching can
        propose: the only kind the editor's readier detail alternative can bring (engine.detail_offered)."""
        return len(self._own)

    @property
    def detail_values(self) -> tuple[str, ...]:
        """The values of the user's personal details (kind "pii": a name, a street, a company), not their
        snippets (a typo in one is no word to accept) nor phrases mined from their mail."""
        return tuple(v for chunk_id, v in self._own.items() if self._chunks[chunk_id]["kind"] == "pii")

    def at_threshold(self, threshold: float) -> "ChunkMatcher":
        """This matcher at another threshold, for one request: the same index, chunks and classifier
        (nothing copied but the attributes' references; the threshold is read only while proposing)."""
        view = copy.copy(self)
        view.threshold = threshold
        return view

    def chunk_token_lists(self, chunk_ids: Iterable[int] | None = None) -> list[tuple[int, ...]]:
        """Each distinct chunk tokenization once (documents for n-gram drafts), of *chunk_ids* only when given."""
        if chunk_ids is None:
            return sorted(set(self._tokens.values()))
        ids = list(chunk_ids)
        rows = np.flatnonzero(np.isin(self._chunk_of, ids))
        return sorted({self._tokens[int(lab)] for lab in self._label_at[rows].tolist()})

    def avoided(self, chunk_id: int, text: str) -> bool:
        """Whether the text so far ends like a place where the user dismissed this chunk.

        Words, not states: a context encoded on its own and the same words
        deep in a draft have whitened states too far apart to recognise
        (cosine 0.28 measured), while another phrase ending in "on" came out
        closer (0.70).
        """
        places = self._avoid.get(chunk_id)
        if not places:
            return False
        here = tail_words(lead_in(text))
        return any(len(here & p) >= AVOID_OVERLAP * len(here | p) for p in places if here | p)

    def is_typed(self, chunk_id: int) -> bool:
        return chunk_id in self._typed_label

    def whiten(self, hidden: np.ndarray, hidden_local: np.ndarray) -> np.ndarray:
        """One step's state and local mean, whitened and unit-norm: (d,), (d,) -> (2, d).  Done once per
        step: the slot classifier and the context search both read it (*whitened* below, a
        :class:`Once` that whitens on the first call, so a step that stops at a cheap gate reads
        none of the whitener)."""
        return self.stats.transform(np.stack([hidden, hidden_local]))

    def type_agreement(self, hidden: np.ndarray, hidden_local: np.ndarray, text: str,
                       whitened: "Once | None" = None) -> dict[int, float]:
        """For each typed chunk: how surely the next thing is a detail of its type (0..1)."""
        return self.type_readings(hidden, hidden_local, text, whitened)[0]

    def type_readings(self, hidden: np.ndarray, hidden_local: np.ndarray, text: str,
                      whitened: "Once | None" = None) -> tuple[dict[int, float], float]:
        """:meth:`type_agreement`, and how surely someone else's detail comes next instead (the
        classifier's third-party class, 0..1): whose it is, which :class:`Proposal` carries on."""
        if self.slots is None or len(self._typed_ids) == 0:
            return {}, 0.0
        rows = self.whiten(hidden, hidden_local) if whitened is None else whitened()         # (2, d)
        probs = self.slots.predict_one(rows, text)                               # (classes,)
        scores = self._types @ probs[: len(self.slots.fields)]                   # (n typed,)
        agreement = dict(zip(self._typed_ids.tolist(), scores.tolist()))
        named = [k for k in agreement if self.of_own_kind(k) and self.named_alone(k, text)
                 and self.named_against(k, [r for r in agreement if self.typed_field(r) != self.typed_field(k)], text)]
        if named:
            # A value of a kind the classifier does not know, named here by the user's own words (and no
            # other value named after it: "My passport expired and my new phone is"): how surely
            # a value of the writer's comes here at all, whichever field the classifier would call it
            # ("...on the back of my library card is" reads as a phone, a booking code and a tax ID at once).
            value = float(probs[self._value_fields].sum())
            for k in named:
                agreement[k] = max(agreement[k], value)
        return agreement, self._someone_elses(probs)

    @property
    def _value_fields(self) -> np.ndarray:
        """The indices (fields,) of the classifier's fields that are values, not kinds of snippet sentence."""
        found = getattr(self, "_value_fields_cache", None)
        if found is None or found[0] is not self.slots:
            found = (self.slots, np.asarray([i for i, f in enumerate(self.slots.fields) if f not in SENTENCE_KINDS]))
            self._value_fields_cache = found
        return found[1]

    def _someone_elses(self, probs: np.ndarray) -> float:
        """The slot classifier's someone-else's reading (its third-party class) in *probs* (classes,)."""
        classes = self.slots.classes
        return float(probs[classes.index(THIRD_PARTY)]) if THIRD_PARTY in classes else 0.0

    def value_ahead(self, hidden: np.ndarray, hidden_local: np.ndarray, text: str) -> str | None:
        """The kind of value of the writer's own that the slot classifier reads as the next thing
        ("Best,\n" -> "name"), as sure as a typed chunk must be (:attr:`type_cutoff`), whether or not the
        library holds one; None where it reads ordinary text, someone else's detail about as much
        (:func:`someone_elses_here`), or a kind of snippet sentence (slots.SENTENCE_KINDS)."""
        if self.slots is None:
            return None
        probs = self.slots.predict_one(self.whiten(hidden, hidden_local), text)     # (classes,)
        top = int(np.argmax(probs))
        kind, p = self.slots.classes[top], float(probs[top])
        if (kind in (NONE, THIRD_PARTY) or kind in SENTENCE_KINDS or p < self.type_cutoff
                or someone_elses_here(p, self._someone_elses(probs))):
            return None
        return kind

    @property
    def type_cutoff(self) -> float:
        return type_cutoff(self.threshold)

    def chunk_info(self, chunk_id: int) -> dict:
        """kind, label, text and words of a chunk matching knows; "own": the words the user gave it
        (lead-ins, label, value; :meth:`which_of`); "group": whether its stored lead-ins speak for a
        group (whose.speaks_as_we)."""
        return self._chunks[chunk_id]

    # ------------------------------------------------------------ proposing

    @property
    def eta(self) -> float:
        return self.calibration.eta(self.threshold)

    def candidates(self, hidden: np.ndarray, hidden_local: np.ndarray, text: str,
                   exclude: Iterable[int] = (), min_match: float | None = None,
                   last_token: int | None = None, model_choice: int | None = None,
                   gate_mined: bool = False, whitened: "Once | None" = None,
                   experts: bool = True) -> list["Candidate"]:
        """Scored candidate chunks for the state after the newest token, best choice first.

        *hidden*: (d,) state after the newest token; *hidden_local*: (d,)
        mean of the last few states; *text*: the text so far (for words and
        to skip chunks already written there).  With *min_match*, returns
        nothing as soon as no candidate could reach it even with every word
        shared -- most steps of ordinary text end there, cheaply.  With
        *last_token*, mined chunks are only offered after their own entry
        token (the paper's entry-token trie), and a store of mined chunks
        alone skips every step whose token starts none of them.  With
        *model_choice* (the model's own next token) and ``agreement_gate``,
        a self-distilled chunk must also start with that token: those chunks
        are the model's confident phrases, and this keeps them from starting
        where the model would not (docs/benchmarks.md measures with and
        without).  Teacher chunks are exempt: the teacher knows better --
        unless *gate_mined*, when *model_choice* is the teacher's own choice
        (the kNN-LM mixture at decode time).
        """
        if len(self.index) == 0:
            return []
        if not experts and not self._mined_entries:
            return []
        if last_token is not None and (self._experts == 0 or not experts) and last_token not in self._mined_entries:
            return []
        query = self.whiten(hidden, hidden_local) if whitened is None else whitened()  # (2, d)
        labels, sims = self.index.query(query[0], k=CANDIDATES)                # (k,), (k,)
        if sims.size == 0:
            return []
        rows = np.fromiter((self._row_of[int(l)] for l in labels), dtype=np.int64, count=len(labels))
        local = self._local[rows].astype(np.float32) @ query[1]                # (k,)
        if min_match is not None and float(match_score(sims, local, 1.0).max()) < min_match:
            return []
        weights, total = self.lexicon.weigh(current_sentence(text))
        skip, recent = set(exclude), text[-2000:]
        gate = model_choice if self.agreement_gate else None
        by_chunk: dict[int, Candidate] = {}
        for i, row in enumerate(rows.tolist()):
            chunk_id = int(self._chunk_of[row])
            if chunk_id in skip:
                continue
            if not self._mined[row] and not experts:
                continue
            if self._mined[row]:
                if last_token is not None and self._entry[row] != last_token:
                    continue
                if (gate is not None and (self._self[row] or gate_mined)
                        and self._tokens[int(labels[i])][:1] != (gate,)):
                    continue
            info = self._chunks[chunk_id]
            # Already written: a PII value or snippet is not repeated; a mined
            # phrase may recur, but not right after itself.
            if info["text"] in (recent if info["kind"] not in REPEATABLE_KINDS else recent[-REPEAT_WINDOW:]):
                skip.add(chunk_id)
                continue
            seen = by_chunk.get(chunk_id)
            if seen is None:
                lex = self.lexicon.overlap(weights, total, info["words"])
                by_chunk[chunk_id] = Candidate(chunk_id, int(labels[i]), float(sims[i]), float(local[i]), lex)
            else:
                seen.similarity = max(seen.similarity, float(sims[i]))
                seen.local = max(seen.local, float(local[i]))
        ranked = sorted(by_chunk.values(), key=lambda c: c.choice, reverse=True)
        return ranked

    def propose(self, hidden: np.ndarray, hidden_local: np.ndarray, text: str,
                exclude: Iterable[int] = (), greedy: bool = True, last_token: int | None = None,
                model_choice: int | None = None, gate_mined: bool = False, typed: bool = True,
                word_start: bool = True, own: bool = True, like: Iterable[int] = ()) -> Proposal | None:
        """The chunk to offer at this step with its acceptance probability, or None.

        *greedy*: the caller accepts only when q >= 0.5, so weaker matches are
        not worth scoring; with sampled acceptance any q > 0 counts.  *typed*
        False: the user's typed chunks were ruled out here (Decoder.fits_here),
        so only the retrieval path is asked.  *word_start* False: the next token goes on with
        the word the text ends in (``text.inside_word``), where none of the user's own values
        or phrases starts, so only mined chunks after their entry token are looked for -- on most
        such steps nothing is, and the step costs no search at all.  *own* False: none of the user's
        own chunks (values, snippets) can go here (Decoder.own_chunks_fit), the same search as mid-word.
        *like*: only a chunk of these chunks' field, by the typed route (a learned context of one, or
        :meth:`typed_proposal`), nothing else (the detail alternative in place of a value shown).
        """
        if not word_start or not own:
            if last_token is not None and last_token not in self._mined_entries:
                return None
            typed = False
        whitened = Once(lambda: self.whiten(hidden, hidden_local))
        if like:                          # another value in place of one shown: that field's, by the typed route only
            if not typed:
                return None
            learned = self.learned_proposal(text, exclude)
            if learned is not None and self.typed_field(learned.chunk_id) in self.fields_of(like):
                return learned
            return self.typed_proposal(hidden, hidden_local, text, exclude, whitened=whitened, like=like)
        typed_here = None
        if typed:
            typed_here = (self.learned_proposal(text, exclude)
                          or self.typed_proposal(hidden, hidden_local, text, exclude, whitened=whitened))
            if typed_here is not None and (typed_here.learned or typed_here.kind != "snippet"
                                           or not is_sentence(typed_here.text)):
                return typed_here
        floor = self.calibration.raw_cutoff(self.threshold) if greedy else max(self.eta, self.calibration.background)
        ranked = self.candidates(hidden, hidden_local, text, exclude, min_match=floor, last_token=last_token,
                                 model_choice=model_choice, gate_mined=gate_mined, whitened=whitened,
                                 experts=word_start and own)
        retrieved = self.retrieved(ranked, text)
        if typed_here is None:
            return retrieved
        # Which of the user's snippet sentences: the classifier reads only what kind of sentence comes (an
        # availability, a closing line...), and a snippet of another kind is typed as the nearest one or not
        # at all; where another snippet's stored contexts match this place past the threshold, better than
        # the typed one's own do, that one (bench/data/fields dev f082: "On the food front:" read as
        # availability, the office hours, while the dietary note's "About food:" matched past the threshold).
        if (typed_here.kind == "snippet" and retrieved is not None and retrieved.kind == "snippet"
                and is_sentence(retrieved.text) and retrieved.match >= self.calibration.raw_cutoff(self.threshold)
                and retrieved.match > max((c.match for c in ranked if c.chunk_id == typed_here.chunk_id), default=-1.0)):
            return retrieved
        return typed_here

    def retrieved(self, ranked: list["Candidate"], text: str) -> Proposal | None:
        """The retrieval route of :meth:`propose` (the paper's context matching): the best of *ranked*
        (:meth:`candidates`, past the floor asked) that the typed route does not bring, if accepted."""
        # A typed chunk comes only where the slot classifier agrees (the typed route above);
        # context similarity alone put phone numbers where email addresses go.  Except
        # after a phrase the user themself typed the value after (a learned context).
        if self.slots is not None:
            ranked = [c for c in ranked if not self.is_typed(c.chunk_id) or self._learned[self._row_of[c.label]]]
        ranked = [c for c in ranked if not self.avoided(c.chunk_id, text)]
        if not ranked:
            return None
        best = ranked[0]
        match = best.match
        q = acceptance(match, self.eta)
        if q <= 0.0 or match < self.calibration.background:
            return None
        info = self._chunks[best.chunk_id]
        return Proposal(chunk_id=best.chunk_id, kind=info["kind"], label=info["label"], text=info["text"],
                        tokens=self._tokens[best.label], match=round(match, 4),
                        score=self.calibration.to_scale(match), q=q)

    def learned_proposal(self, text: str, exclude: Iterable[int] = ()) -> Proposal | None:
        """The chunk whose value the user typed by hand after the very words the text ends with.

        The user's own evidence, so no model score is needed: a context
        encoded on its own sits too far from the same words deep in a draft
        for the vector match to find it reliably.
        """
        if not self._phrases:
            return None
        tail = phrase_key(text[-300:], limit=None)
        for phrase, entry in self._phrases.items():
            if entry is None or entry[0] in exclude or not (tail == phrase or tail.endswith(" " + phrase)):
                continue
            chunk_id, label = entry
            info = self._chunks[chunk_id]
            if info["text"] in text[-2000:] or self.avoided(chunk_id, text):
                continue
            return Proposal(chunk_id=chunk_id, kind=info["kind"], label=info["label"], text=info["text"],
                            tokens=self._tokens[label], match=1.0, score=1.0, q=1.0, learned=True)
        return None

    def value_begun(self, text: str, exclude: Iterable[int] = ()) -> tuple[int, str] | None:
        """(chunk id, the rest of its value) where the text ends with the start of one of the user's
        values, typed with something no word has (:data:`_VALUE_SIGN`): "+44 20" -> " 7946 0321",
        "hello@" -> "teookafor.dev".  Words alone ("Mara", "Product", "Thanks,") are what the user
        writes for other reasons, so they are not completed; nor is a start that is part of a longer word.

        >>> m.value_begun("Call me on +44 20")                          # doctest: +SKIP
        (3, ' 7946 0321')
        """
        skip = set(exclude)
        for chunk_id, value in self._own.items():        # the user's own chunks only: a learned store has thousands more
            if chunk_id in skip:
                continue
            for n in range(len(value) - 1, 0, -1):
                head = value[:n]
                if len(head.replace(" ", "")) < VALUE_BEGUN_CHARS:
                    break
                start = len(text) - n
                if not text.endswith(head) or start > 0 and text[start - 1].isalnum():
                    continue
                if not _VALUE_SIGN.search(head):
                    break
                return chunk_id, value[n:]
        return None

    def typed_proposal(self, hidden: np.ndarray, hidden_local: np.ndarray, text: str,
                       exclude: Iterable[int] = (), whitened: "Once | None" = None,
                       like: Iterable[int] = ()) -> Proposal | None:
        """The typed chunk (phone, email, address...) whose field the slot classifier expects here, if sure
        enough; None also where another field of the user's reads nearly as well (:meth:`rival_near`).
        *like*: only a chunk of the field of these (another value in place of one shown: the detail
        alternative, GenerationRequest.readier)."""
        agreement, others = self.type_readings(hidden, hidden_local, text, whitened)
        agreement = self.labelled(agreement, text)
        if not agreement:
            return None
        skip, recent = set(exclude), text[-2000:]
        # What may come here at all: not excluded, not written lately, not turned down at these words.
        open_ = {k: v for k, v in agreement.items()
                 if k not in skip and self._chunks[k]["text"] not in recent and not self.avoided(k, text)}
        if like:                          # another value in place of one shown: its field only
            fields = self.fields_of(like)
            open_ = {k: v for k, v in open_.items() if self.typed_field(k) in fields}
        for chunk_id, score in sorted(open_.items(), key=lambda kv: kv[1], reverse=True):
            if score < self.type_cutoff * SENTENCE_CUT:
                return None
            if score < self.cut_for(chunk_id, text):
                continue
            if self.of_own_kind(chunk_id) and not self.named_alone(chunk_id, text):
                continue                  # its reading is borrowed: only the user's words for it bring it
            if self.rival_near(chunk_id, score, open_, text):
                return None               # two of the user's fields read alike: neither (nor a weaker one)
            # Two values of this field (a work and a personal email), each sure enough for its own cut:
            # which one.  The field was decided above, by its best reading (the rival rule included).
            chunk_id = self.which_here(chunk_id, {k: v for k, v in open_.items() if v >= self.cut_for(k, text)}, text)
            info, score = self._chunks[chunk_id], open_[chunk_id]
            return Proposal(chunk_id=chunk_id, kind=info["kind"], label=info["label"], text=info["text"],
                            tokens=self._tokens[self._typed_label[chunk_id]], match=round(score, 4),
                            score=score, q=1.0, someone_elses=others)
        return None

    def cut_for(self, chunk_id: int, text: str) -> float:
        """The reading *chunk_id* needs here: the type cut, or a share of it (SENTENCE_CUT) for a snippet
        sentence.  A snippet sentence goes only where a sentence or clause starts (Decoder.fits_here),
        a gate that ordinary text mostly fails already; the classifier need be less sure there.  Not at
        the start of a line, which every paragraph passes: after "Hi Oskar," the closing line came with
        the lower bar (bench/paragraphs.py)."""
        lowered = is_sentence(self._chunks[chunk_id]["text"]) and not at_line_start(text)
        return self.type_cutoff * (SENTENCE_CUT if lowered else 1.0)

    def fields_of(self, chunk_ids: Iterable[int]) -> set[str]:
        """The typed fields of *chunk_ids* (none for a chunk that is not typed)."""
        return {self.typed_field(k) for k in chunk_ids if self.is_typed(k)}

    def rival_near(self, chunk_id: int, score: float, agreement: dict[int, float], text: str) -> bool:
        """Whether another field of the user's reads nearly as well as *chunk_id*'s (*score*) in
        *agreement* (chunk id -> reading, the chunks that may come here): under :func:`rival_ratio`
        times the best such reading, unless the user's own words settle it (:meth:`settled_by_words`).
        A value excluded or already written is no rival: it is not asked for here."""
        ratio = rival_ratio(self.threshold)
        if ratio <= 1.0:
            return False
        field = self.typed_field(chunk_id)
        rivals = [k for k, a in agreement.items() if self.typed_field(k) != field and score < ratio * a]
        return bool(rivals) and not self.settled_by_words(chunk_id, score, rivals, agreement, text)

    def settled_by_words(self, chunk_id: int, score: float, rivals: Sequence[int], agreement: dict[int, float],
                         text: str) -> bool:
        """Whether *chunk_id* (its reading *score*) reads at least as well as each of *rivals* (their
        readings in *agreement*) and the clause being written (*text*) says the user's own lead-in
        words for it and none of theirs (:meth:`named_against`).  The words only confirm the best
        reading: letting them put a weaker one first gained one more dev value and put the phone where
        "While I'm travelling, contact me at" may ask for either (tests/test_slots.py).  A rival of a kind
        the classifier does not know (:meth:`of_own_kind`) reads as well as the fields it looks like by
        construction, so against it the words alone decide: "my VAT identification number" names the VAT
        number beside a stored passport number, which reads as a tax ID too."""
        return (all(agreement[k] <= score for k in rivals if not self.of_own_kind(k))
                and self.named_against(chunk_id, rivals, text))

    def rival_of(self, chunk_id: int, agreement: dict[int, float], text: str | None = None) -> float:
        """The best reading in *agreement* (chunk id -> reading) of a typed chunk of another field than
        *chunk_id*'s; with *text*, none (0) where *chunk_id* reads best of all (a value of a kind the
        classifier does not know aside, whose reading is borrowed: :meth:`settled_by_words`) and the
        user's words name it against every other field, by each rule decoding may ask for a few of
        them (:meth:`named_against`, and for a field the classifier knows :meth:`named_by_lead_ins`
        against the others it knows), so that no rival stops it.  Decoding asks the words of the first
        reading past its cut alone, and of the rivals near it, so a value read below another of its
        own field is not settled here either: the profile may report less than decoding takes, never
        more."""
        field = self.typed_field(chunk_id)
        others = [k for k in agreement if self.typed_field(k) != field]
        known = [k for k in others if not self.of_own_kind(k)]
        best = max(a for k, a in agreement.items() if k not in others or not self.of_own_kind(k))
        if (text is not None and others and agreement[chunk_id] >= best
                and self.named_against(chunk_id, others, text)
                and (self.of_own_kind(chunk_id) or not known or self.named_by_lead_ins(chunk_id, known, text))):
            return 0.0
        return max((agreement[k] for k in others), default=0.0)


class Once:
    """A value made on the first call and kept: a step's whitened rows, which the slot classifier
    and the context search share, made only if one of them gets past its cheap gates."""

    def __init__(self, make: Callable[[], np.ndarray]):
        self._make, self._value = make, None

    def __call__(self) -> np.ndarray:
        if self._value is None:
            self._value = self._make()
        return self._value


def phrase_key(text: str, limit: int | None = AVOID_WORDS) -> str:
    """The last *limit* words of *text* as written (:func:`text.written_words`), joined by a space."""
    parts = written_words(text)
    return " ".join(parts if limit is None else parts[-limit:])


def tail_words(phrase: str) -> set[str]:
    """The last AVOID_WORDS words of a phrase as written (:func:`text.written_words`), as a set: "I'm now"
    and "I'm with" share one word of three, not two pieces ("i", "m") of four."""
    return set(written_words(phrase)[-AVOID_WORDS:])


@dataclass
class Candidate:
    """One chunk among the nearest contexts, with the evidence for it."""

    chunk_id: int
    label: int          # the encoding whose chunk tokens to use
    similarity: float   # best whitened cosine of its contexts' vectors
    local: float        # best cosine of its contexts' local vectors
    lexical: float      # IDF-weighted word overlap of the sentence with its contexts and label

    @property
    def choice(self) -> float:
        """Which chunk: its contexts' cosine, local agreement and words."""
        return self.similarity + self.local + LEXICAL_WEIGHT * self.lexical

    @property
    def match(self) -> float:
        return float(match_score(self.similarity, self.local, self.lexical))
