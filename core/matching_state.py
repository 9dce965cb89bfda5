"""The matcher's in-memory state, built from the store and kept current one edit at a time.

:class:`MatchingState` is the part of :class:`chunkwise.core.matching.ChunkMatcher` that
reads the store; the rest proposes chunks from it (core/matching.py), the user's words
deciding which value is named (core/naming.py).  ``load`` reads every
valid encoding (start, learning, unlock); ``update`` follows an edit of a few
chunks (the library dialog, a phrase learned while typing, a dismissal) in
milliseconds at 100k contexts instead of reloading everything (seconds):

* rows of the edited chunks are retired (their index labels deleted; the
  arrays keep the dead rows, which no query reaches, until the next ``load``)
  and their current encodings appended;
* each edited chunk's words, dismissals, learned phrases and field type are
  read again; nothing of the other chunks is;
* the background level (:meth:`MatchingState._calibrate`) keeps each
  background query's nearest contexts, so an edit re-queries only the
  queries whose neighbours it removed and merges the added contexts into the
  rest by exact cosine.

``docs/benchmarks.md`` (bench/library_update.py) has the timings;
tests/test_library_update.py checks that an updated matcher proposes what a
freshly loaded one does.
"""
from __future__ import annotations

import re
from typing import Callable, Sequence

import numpy as np

from .index import VectorIndex
from . import naming
from .slots import features as slot_features, shape_fields
from .store import DISMISSED, LEARNED, ChunkStore
from .text import content_words, is_sentence, words, written_words
from .whose import speaks_as_we

CALIBRATION_QUERIES = 1000   # background rows whose best match sets the background level
CALIBRATION_K = 8            # nearest contexts each of them looks at
SHAPE_SHARE = 0.25           # of a value's field reading that must fall on fields its shape allows (_within_shape)
TYPED = 0.5                  # a chunk whose contexts the slot classifier reads as one field type this surely is "typed"
# A personal value whose stored contexts the slot classifier reads, on average, under this surely as any one
# field each is of a kind it was not trained on (a passport, staff or library card number): its reading
# is borrowed from the fields it looks like.  Each context, then the mean: "My full name is" (name 0.96)
# and "Sign my emails as" (email 0.84) are each read surely, a name that is no kind of its own, where
# their mean reading splits 0.48 / 0.42 (scratch probes).  The passport, staff, membership and customer
# numbers of bench/data/fields average 0.22 to 0.42 (one, an energy "account number", 0.64, as an IBAN);
# the values of bench/data/personal, the paper's profile and the personas 0.598 or more (a review's probe; bench/own_kinds.py
# lists which are of their own kind).  A majority reading is the line.
KNOWN_READING = 0.5
OWN_KIND = "own kind: "      # typed_field of such a value: its own label, a field of its own


class MatchingState:
    """Rows (one per encoded context), the HNSW index over them, and what each chunk is.

    Row arrays grow by appending; a retired row keeps its place with chunk id -1
    and no label maps to it.  The subclass provides ``stats``, ``dim`` and ``slots``."""

    def _reset(self) -> None:
        self.index = VectorIndex(self.dim)
        self._row_of: dict[int, int] = {}                # label -> row in the arrays below
        self._label_at = np.empty(0, dtype=np.int64)     # row -> label
        self._chunk_of = np.empty(0, dtype=np.int64)     # row -> chunk id
        self._local = np.empty((0, self.dim), dtype=np.float16)  # row -> whitened local vector (rows to spare)
        self._tokens: dict[int, tuple[int, ...]] = {}    # label -> chunk tokens after that context
        self._entry = np.empty(0, dtype=np.int64)        # row -> entry token of that context
        self._repeatable = np.empty(0, dtype=bool)       # row -> chunk of a repeatable (mined) kind, live or not
        self._is_self = np.empty(0, dtype=bool)          # row -> self-distilled chunk, live or not
        self._learned = np.empty(0, dtype=bool)          # row -> a context learned from what the user typed
        self._chunks: dict[int, dict] = {}               # chunk id -> kind, label, text, words
        self._own: dict[int, str] = {}                   # chunk id -> value, of the user's own chunks (not mined)
        self._avoid: dict[int, list[set[str]]] = {}      # chunk id -> last words before each dismissed place
        self._chunk_phrases: dict[int, list[tuple[str, int]]] = {}   # chunk id -> its learned phrases, labels
        self._type_of: dict[int, tuple[np.ndarray, int, str | None]] = {}  # typed chunk id -> (type row, a label,
                                                         # its own kind's name if the classifier knows none)
        self._bg_labels = np.empty((0, CALIBRATION_K), dtype=np.int64)   # background query -> nearest labels
        self._bg_sims = np.empty((0, CALIBRATION_K), dtype=np.float32)   # ... and their cosines
        self._bg_scores = np.empty((0, CALIBRATION_K), dtype=np.float32)   # ... and match scores
        self._mined_entries: dict[int, int] = {}         # entry token -> live mined rows after it (> 0 only)
        self._derive()
        self._phrases = self._phrase_map()
        self._index_types()

    # ------------------------------------------------------------ whole store

    def load(self, store: ChunkStore, model_id: int, model_identity: str, index_path=None,
             progress: Callable[[int, int], None] | None = None) -> str:
        """Build the in-memory state from the store; returns the index status."""
        self._reset()
        rows = [r for r in store.valid_encodings(model_id) if r.origin != DISMISSED]   # dismissed: words only
        wanted = {r.label: r.source_hash for r in rows}

        def fetch(part: Sequence[int]) -> np.ndarray:
            return self.stats.transform(store.encoding_vectors(part, "vector"))

        self.index, status = VectorIndex.load_or_build(index_path, model_identity, self.dim, wanted, fetch,
                                                       progress, key=store.key)
        if index_path is not None and status != "loaded":
            self.index.save(index_path, model_identity, key=store.key)
        chunks = store.list_chunks(ids=sorted({r.chunk_id for r in rows})) if rows else []
        self._append_rows(store, rows, {c.id: c.kind for c in chunks})
        self._read_chunks(store, chunks, rows)
        self._calibrate()
        return status

    # ------------------------------------------------------------ a few chunks

    def update(self, store: ChunkStore, model_id: int, chunk_ids: Sequence[int]) -> None:
        """Follow an edit of *chunk_ids* (added, changed or deleted; contexts learned or removed)."""
        ids = sorted(set(int(c) for c in chunk_ids))
        if not ids:
            return
        rows = [r for r in store.valid_encodings(model_id, ids) if r.origin != DISMISSED]
        chunks = store.list_chunks(ids=sorted({r.chunk_id for r in rows})) if rows else []
        kind_of = {c.id: c.kind for c in chunks}
        mine = np.flatnonzero(np.isin(self._chunk_of, ids))
        # A row is kept if encoded as before and its chunk's kind still reads the same (a mined phrase
        # made a snippet in the library must leave the mined rows' flags and entry tokens).
        kept = {int(self._label_at[i]) for i in mine
                if (bool(self._repeatable[i]), bool(self._is_self[i]))
                == _kind_flags(kind_of.get(int(self._chunk_of[i])))}
        kept &= {r.label for r in rows if self.index.hashes.get(r.label) == r.source_hash}   # encoded as before
        gone = self._retire(ids, keep=kept)
        fresh = [r for r in rows if r.label not in kept]
        for cid in ids:
            for d in (self._chunks, self._own, self._avoid, self._chunk_phrases, self._type_of):
                d.pop(cid, None)
        keys = self.stats.transform(store.encoding_vectors([r.label for r in fresh], "vector")) if fresh else None
        if fresh:
            self.index.upsert([r.label for r in fresh], keys, [r.source_hash for r in fresh])
        first = len(self._label_at)
        self._append_rows(store, fresh, kind_of)
        self._read_chunks(store, chunks, rows)
        if gone or fresh:
            self._recalibrate(gone, np.arange(first, len(self._label_at)), keys)

    def _retire(self, chunk_ids: Sequence[int], keep: set[int] = frozenset()) -> list[int]:
        """Drop the rows of these chunks (but those labelled in *keep*) from the index and the label
        map; returns their labels."""
        dead = np.isin(self._chunk_of, chunk_ids) & ~np.isin(self._label_at, list(keep))   # (retired rows hold -1)
        self._count_entries(self._entry[dead & self._repeatable], -1)
        labels = self._label_at[dead].tolist()
        self.index.remove(labels)
        for lab in labels:
            del self._row_of[lab]
            del self._tokens[lab]
        self._chunk_of = np.where(dead, -1, self._chunk_of)     # a retired row belongs to no chunk
        return labels

    # ------------------------------------------------------------ rows and chunks

    def _append_rows(self, store: ChunkStore, rows, kinds: dict[int, str]) -> None:
        """Rows for these encodings, after the existing ones (local vectors whitened, float16)."""
        n0, m = len(self._label_at), len(rows)
        if m == 0:
            self._derive()
            return
        labels = [r.label for r in rows]
        local = self.stats.transform(store.encoding_vectors(labels, "vector_local")).astype(np.float16)
        if n0 + m > len(self._local):
            # Rows to spare after a load: the local vectors are the one large array (100k x 576 float16
            # = 115 MB), copied when the spare rows run out, not at every edit.
            grown = np.empty((n0 + m + (n0 + m) // 4 + 64, self.dim), np.float16)
            grown[:n0] = self._local[:n0]
            self._local = grown
        self._local[n0:n0 + m] = local
        self._label_at = np.concatenate([self._label_at, np.asarray(labels, dtype=np.int64)])
        self._chunk_of = np.concatenate([self._chunk_of, np.asarray([r.chunk_id for r in rows], dtype=np.int64)])
        self._entry = np.concatenate([self._entry, np.asarray([r.entry_token for r in rows], dtype=np.int64)])
        flags = [_kind_flags(kinds.get(r.chunk_id)) for r in rows]
        self._repeatable = np.concatenate([self._repeatable, [f[0] for f in flags]])
        self._is_self = np.concatenate([self._is_self, [f[1] for f in flags]])
        self._learned = np.concatenate([self._learned, np.asarray([r.origin == LEARNED for r in rows], bool)])
        for i, r in enumerate(rows):
            self._row_of[r.label] = n0 + i
            self._tokens[r.label] = r.chunk_tokens
        self._count_entries(self._entry[n0:][self._repeatable[n0:]], +1)
        self._derive()

    def _count_entries(self, tokens: np.ndarray, sign: int) -> None:
        """Follow the entry tokens of mined rows added (+1) or retired (-1), so that an edit touches only
        its own rows (rebuilding the set from 100k rows took 4 ms of every edit)."""
        values, counts = np.unique(tokens, return_counts=True)
        entries = self._mined_entries
        for token, n in zip(values.tolist(), counts.tolist()):
            left = entries.get(token, 0) + sign * n
            if left > 0:
                entries[token] = left
            else:
                entries.pop(token, None)

    def _derive(self) -> None:
        """Per-row flags and totals that follow from the rows (after any change to them); the entry
        tokens of mined rows (``_mined_entries``) are counted as rows come and go (``_count_entries``)."""
        live = self._chunk_of >= 0
        self._mined = self._repeatable & live            # row -> chunk of a repeatable (mined) kind
        self._self = self._is_self & live                # row -> self-distilled (the model's own phrase)
        self._experts = int((live & ~self._mined).sum())  # rows of pii / snippet / phrase chunks

    def _read_chunks(self, store: ChunkStore, chunks, rows) -> None:
        """What matching keeps of each chunk (words, dismissed places, learned phrases, field type)."""
        m = _matching()
        label_of_context = {r.context_id: r.label for r in rows}
        context_text: dict[int, str] = {}
        for chunk in chunks:
            context_text.update((c.id, c.text) for c in chunk.contexts)
            if chunk.avoid:
                self._avoid[chunk.id] = [m.tail_words(c.text) for c in chunk.avoid]
            learned = [(m.phrase_key(c.text), label_of_context[c.id]) for c in chunk.contexts
                       if c.origin == LEARNED and written_words(c.text) and c.id in label_of_context]
            if learned:             # only chunks with some: the map is rebuilt from them at every edit
                self._chunk_phrases[chunk.id] = learned
            bag = naming.chunk_words((c.text for c in chunk.contexts), chunk.label)
            # "own": the words the user gave this chunk in the library (its lead-ins, label and value; unlike
            # "words", not its field's usual words, nor learned contexts: a value taken once after "my personal
            # email is" must not make "personal" the work email's too): what sets it apart from another value
            # of its field (ChunkMatcher.which_of).  "leads": the content words of its lead-ins and label, not its
            # value: which of two of the user's fields a clause asks for (ChunkMatcher.named_by_lead_ins).  Two
            # sets because the questions differ: between two values of one field the value's own words tell
            # ("gmail"), and words common in email say nothing; between fields the value's words would
            # mislead ("product" in "Product Designer"), and common words like "email" name the field.
            stored = " ".join(c.text for c in chunk.contexts if c.origin != LEARNED)
            own = set(words(f"{stored} {chunk.label or ''} {chunk.text}"))
            leads = content_words(f"{stored} {chunk.label or ''}")
            # "kin": its lead words with the other names of the kinds of record they name (naming.kin_words),
            # read once here rather than at each step that asks which value a clause names.
            self._chunks[chunk.id] = {"kind": chunk.kind, "label": chunk.label, "text": chunk.text, "words": bag,
                                      "own": own, "leads": leads, "kin": naming.kin_words(leads),
                                      "group": speaks_as_we(c.text for c in chunk.contexts)}
            if chunk.kind not in m.REPEATABLE_KINDS:
                self._own[chunk.id] = chunk.text.strip()
        self._phrases = self._phrase_map()
        self._type_chunks(store, rows, context_text)

    def _phrase_map(self) -> dict[str, tuple[int, int] | None]:
        """A learned context's last words -> (chunk id, its encoding label); None where two chunks share them."""
        phrases: dict[str, tuple[int, int] | None] = {}
        for chunk_id in sorted(self._chunk_phrases):
            for key, label in self._chunk_phrases[chunk_id]:
                known = phrases.get(key, (chunk_id, label))
                phrases[key] = known if known is not None and known[0] == chunk_id else None
        return phrases

    def _type_chunks(self, store: ChunkStore, rows, context_text: dict[int, str]) -> None:
        """Each expert chunk's field type: the slot classifier's reading of its own stored contexts."""
        repeatable = _matching().REPEATABLE_KINDS
        expert = [r for r in rows if self.slots is not None and r.chunk_id in self._chunks
                  and self._chunks[r.chunk_id]["kind"] not in repeatable]
        # The type is what the user's own library contexts say, as "own" words are (_read_chunks): a name
        # typed by hand after "Invoices go to" and "Our company is" would otherwise read part company and
        # come wherever an employer goes ("I work for", "Company:"; tests/test_feedback.py).  A learned
        # phrase still brings its value back where it is written again (the phrase map) and near it (the
        # index).  A chunk with no library context is typed by all it has.
        said = {r.chunk_id for r in expert if r.origin != LEARNED}
        expert = [r for r in expert if r.origin != LEARNED or r.chunk_id not in said]
        if expert:
            labels = [r.label for r in expert]
            x = slot_features(self.stats, store.encoding_vectors(labels, "vector"),
                              store.encoding_vectors(labels, "vector_local"),
                              [context_text.get(r.context_id, "") for r in expert])
            probs = self.slots.predict(x)[:, : len(self.slots.fields)]          # (n contexts, fields)
            rows_of: dict[int, list[int]] = {}
            for i, r in enumerate(expert):
                rows_of.setdefault(r.chunk_id, []).append(i)
            fields = self.slots.fields
            for chunk_id, mine in rows_of.items():
                t = probs[mine].mean(axis=0)
                if t.sum() >= TYPED:
                    info = self._chunks[chunk_id]
                    own_kind = _own_kind(chunk_id, info, float(probs[mine].max(axis=1).mean()),
                                         fields[int(np.argmax(t))])
                    t = _within_shape(t, fields, info["text"], info["kind"])
                    # Scaled so its own type counts 1: agreement is then the classifier's belief in that
                    # type here, however spread the chunk's own contexts read (an address whose contexts
                    # also read as a postcode lost to a cleanly typed email where an address went;
                    # dev split, scratch replay: 3 wrong fields instead of 5 at 69 of 87 right).  The
                    # price: a chunk read half as one type and half as another counts fully for both.
                    self._type_of[chunk_id] = (t / t.max(), expert[mine[0]].label, own_kind)
        self._index_types()

    def typed_field(self, chunk_id: int) -> str | None:
        """The field a typed chunk reads as most (its stored contexts' reading, within its value's
        shape); for a value of a kind the classifier does not know, a field of its own (``OWN_KIND`` and
        its label: :meth:`of_own_kind`); None for a chunk that is not typed (a mined phrase, an untyped
        snippet)."""
        found = self._type_of.get(chunk_id)
        if found is None or self.slots is None:
            return None
        return found[2] or self.slots.fields[int(np.argmax(found[0]))]

    def of_own_kind(self, chunk_id: int) -> bool:
        """Whether a typed chunk is a value of a kind the slot classifier does not know (KNOWN_READING):
        its typed field is its own (``OWN_KIND`` and its label), and only the user's words for it
        bring it (ChunkMatcher.named_alone)."""
        found = self._type_of.get(chunk_id)
        return found is not None and found[2] is not None

    def type_reading(self, chunk_id: int) -> dict[str, float]:
        """How much a typed chunk reads as each field, its own field 1 (what agreement at a place is
        weighed by; for a value of its own kind, the field it reads most, whose reading it borrows);
        empty for a chunk that is not typed."""
        found = self._type_of.get(chunk_id)
        if found is None or self.slots is None:
            return {}
        return {f: float(w) for f, w in zip(self.slots.fields, found[0])}

    def _index_types(self) -> None:
        """The typed chunks as arrays, in chunk id order, from ``_type_of``."""
        ids = sorted(self._type_of)
        self._alone: dict[int, frozenset[str]] = {}      # typed chunk id -> its words no other field has
        fields = len(self.slots.fields) if self.slots is not None else 0
        self._typed_ids = np.asarray(ids, dtype=np.int64)
        self._types = (np.asarray([self._type_of[c][0] for c in ids], dtype=np.float32) if ids
                       else np.empty((0, fields), np.float32))                      # (n typed, fields)
        self._typed_label = {c: self._type_of[c][1] for c in ids}

    # ------------------------------------------------------------ the background level

    def _calibrate(self) -> None:
        """Background level: the best match score of ordinary text positions (no shared words).

        Only the user's own entries (PII, snippets, phrases) count: mined
        chunks come from ordinary text, so ordinary text matches their
        contexts by construction -- for them the entry token (the paper's
        trie) and the threshold decide.  Each background query keeps its
        nearest contexts with their scores, so that an edit need not ask
        them all again.
        """
        bg = self.stats.background[:CALIBRATION_QUERIES]                      # (B, 2d): key, local
        shape = (len(bg), CALIBRATION_K)
        self._bg_labels = np.full(shape, -1, dtype=np.int64)                   # nearest labels (-1: none)
        self._bg_sims = np.full(shape, -np.inf, dtype=np.float32)              # ... their cosines
        self._bg_scores = np.full(shape, -np.inf, dtype=np.float32)            # ... match scores (-inf: mined)
        self._bg_unit = bg[:, : self.dim] / np.maximum(np.linalg.norm(bg[:, : self.dim], axis=1, keepdims=True),
                                                       1e-12)
        if len(self.index):
            self._requery(np.arange(len(bg)))
        self.calibration = self._background_level()

    def _scores(self, which: np.ndarray, rows: np.ndarray, sims: np.ndarray) -> np.ndarray:
        """Match scores (n, j) of background queries *which* (n,) against matcher rows (n, j): -inf
        for mined rows, which are not scored at all.  (Scoring every pair first, an (n, j, d) array,
        took 43 GB when a Learn's 20,000 mined rows met the 1,000 queries in _recalibrate.)"""
        m = _matching()
        out = np.full(rows.shape, -np.inf, np.float32)
        q, c = np.nonzero(~self._mined[rows])                                  # the user's own rows
        if q.size:
            out[q, c] = m.match_score(sims[q, c], self._local_cosines(which[q], rows[q, c]), 0.0)
        return out

    def _local_cosines(self, queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Local-vector cosine of background query ``queries[i]`` with matcher row ``rows[i]``: both
        (p,), the result (p,).

        Where the pairs fill the grid of their distinct queries and rows (an edit's added rows meet
        every query in _recalibrate), one product (Q, d) @ (d, U) and a pick: gathered pair by pair,
        800 own contexts added in place made two (800,000, d) arrays, 1.8 GB each.  Where they are
        sparse (a requery of many queries over their own neighbours: at most CALIBRATION_QUERIES x
        CALIBRATION_K pairs, 18 MB gathered) the pairs are gathered."""
        qs, qi = np.unique(queries, return_inverse=True)
        rs, ri = np.unique(rows, return_inverse=True)
        if qs.size * rs.size <= 4 * queries.size:
            grid = self.stats.background[qs, self.dim:] @ self._local[rs].astype(np.float32).T   # (Q, U)
            return grid[qi, ri]
        return np.einsum("pd,pd->p", self._local[rows].astype(np.float32), self.stats.background[queries, self.dim:])

    def _requery(self, which: np.ndarray) -> None:
        bg = self.stats.background
        for b in which.tolist():
            labels, sims = self.index.query(bg[b, : self.dim], k=CALIBRATION_K)
            self._bg_labels[b], self._bg_sims[b] = -1, -np.inf
            self._bg_labels[b, : len(labels)], self._bg_sims[b, : len(sims)] = labels, sims
        rows = np.asarray([[self._row_of.get(lab, 0) for lab in line] for line in self._bg_labels[which].tolist()],
                          dtype=np.int64).reshape(len(which), CALIBRATION_K)
        scores = self._scores(which, rows, self._bg_sims[which])
        self._bg_scores[which] = np.where(self._bg_labels[which] >= 0, scores, -np.inf)

    def _recalibrate(self, removed: Sequence[int], added_rows: np.ndarray, keys: np.ndarray | None) -> None:
        """The background level after an edit: queries that lost a neighbour ask the index again;
        the others take the added rows (whitened *keys*) into their nearest by exact cosine."""
        lost = np.isin(self._bg_labels, list(removed)).any(axis=1)            # (B,)
        if len(added_rows):
            unit = keys / np.maximum(np.linalg.norm(keys, axis=1, keepdims=True), 1e-12)
            sims = (self._bg_unit @ unit.T.astype(np.float32)).astype(np.float32)        # (B, m)
            every = np.arange(len(sims))
            scores = self._scores(every, np.broadcast_to(added_rows, sims.shape), sims)  # (B, m)
            labels = np.broadcast_to(self._label_at[added_rows], sims.shape)
            sims = np.concatenate([self._bg_sims, sims], axis=1)
            best = np.argsort(-sims, axis=1, kind="stable")[:, :CALIBRATION_K]
            keep = ~lost
            for mine, new in ((self._bg_labels, labels), (self._bg_scores, scores)):
                mine[keep] = np.take_along_axis(np.concatenate([mine, new], axis=1), best, 1)[keep]
            self._bg_sims[keep] = np.take_along_axis(sims, best, 1)[keep]
        if lost.any():
            self._requery(np.flatnonzero(lost))
        self.calibration = self._background_level()

    def _background_level(self):
        m = _matching()
        best = self._bg_scores.max(axis=1) if len(self._bg_scores) else np.empty(0)
        best = best[np.isfinite(best)]
        if len(self.index) == 0 or self._experts == 0 or best.size == 0:
            return m.Calibration(background=m.DEFAULT_BACKGROUND)
        return m.Calibration(background=float(np.quantile(best, 0.995)))


def _matching():
    """core.matching, the proposing part: what kinds repeat, what scores mean (imported
    here, not at the top, because it imports this module)."""
    from . import matching

    return matching


def _kind_flags(kind: str | None) -> tuple[bool, bool]:
    """(repeatable, self-distilled) for a chunk of *kind*: the two per-row flags a row's kind sets."""
    return kind in _matching().REPEATABLE_KINDS, kind == "self"


def _own_kind(chunk_id: int, info: dict, reading: float, best_field: str | None = None) -> str | None:
    """The name of a field of its own for a personal value whose contexts read under KNOWN_READING as any
    one field (*reading*: the slot classifier's best reading of each, on average): its label, or its id where it has none, so
    that two values under one label ("membership number") are values of one field.  None for a value
    of a kind the classifier knows, and for a snippet or a sentence, which the classifier's sentence
    kinds and their lower bar cover.  Nor for a number written as a phone number is (a country code,
    an area code in brackets, grouped digits) whose contexts read a phone first (*best_field*): a
    phone stored after terse lead-ins ("Office:", "Reach the office on" read 0.23 and 0.27 as a phone),
    where a passport, staff or library card number is a bare run of digits or letters.

    >>> _own_kind(7, {"kind": "pii", "label": "Passport number", "text": "NWR8F4KJ2"}, 0.41)
    'own kind: passport number'
    >>> _own_kind(7, {"kind": "pii", "label": "VAT", "text": "NL002187456B63"}, 0.80) is None
    True
    >>> _own_kind(7, {"kind": "pii", "label": "office", "text": "+1 415 555 0100"}, 0.25, "phone") is None
    True
    >>> _own_kind(7, {"kind": "pii", "label": "staff number", "text": "1048273"}, 0.35, "phone")
    'own kind: staff number'
    """
    if (info["kind"] != "pii" or is_sentence(info["text"]) or reading >= KNOWN_READING
            or (best_field == "phone" and written_as_phone(info["text"]))):
        return None
    return OWN_KIND + (" ".join((info["label"] or "").lower().split()) or f"#{chunk_id}")


_PHONE_WRITTEN = re.compile(r"^(?:\+\d|\(\d)[\d\s().-]*\d$|^\d+(?:[\s.-]\d+){2,}$")


def written_as_phone(value: str) -> bool:
    """Whether *value* is written as phone numbers are: a country code or an area code in brackets first,
    or three or more groups of digits.  A bare run of digits is not (an ID may be one).

    >>> [written_as_phone(v) for v in ("+44 7700 900418", "(312) 555-0147", "030 1234 5678", "1048273", "93-2718465")]
    [True, True, True, False, False]
    """
    value = value.strip()
    return bool(_PHONE_WRITTEN.match(value)) and 6 <= sum(c.isdigit() for c in value) <= 15


def _within_shape(reading: np.ndarray, fields: Sequence[str], text: str, kind: str = "pii") -> np.ndarray:
    """A personal value's field reading (fields,) with the fields its shape cannot fill set to zero
    (core/slots.py shape_fields).  A snippet, a value with nothing its shape says, and a value whose
    reading hardly falls on the fields its shape allows (under a quarter of it: the contexts say
    something else) keep the reading as it was.

    >>> r = np.array([0.6, 0.4], np.float32)                       # fields: phone, calendar_link
    >>> _within_shape(r, ["phone", "calendar_link"], "(312) 555-0147").tolist()
    [0.6000000238418579, 0.0]
    >>> _within_shape(r, ["phone", "calendar_link"], "Ana Marín").tolist()
    [0.6000000238418579, 0.4000000059604645]
    >>> _within_shape(r, ["phone", "calendar_link"], "(312) 555-0147", kind="snippet").tolist()
    [0.6000000238418579, 0.4000000059604645]
    >>> _within_shape(np.array([0.1, 0.9], np.float32), ["phone", "calendar_link"], "(312) 555-0147").tolist()
    [0.10000000149011612, 0.8999999761581421]
    """
    allowed = shape_fields(text) if kind == "pii" and not is_sentence(text) else None
    if allowed is None:
        return reading
    kept = reading * np.asarray([f in allowed for f in fields], dtype=reading.dtype)
    return kept if kept.sum() >= SHAPE_SHARE * reading.sum() else reading
