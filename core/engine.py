"""The engine's front door: a model, a chunk store, and generation over both.

>>> from chunkwise.core import Engine, GenerationRequest                    # doctest: +SKIP
>>> engine = Engine(store="/tmp/chunks.db")                                # doctest: +SKIP
>>> engine.store.add_chunk("(555) 123-4567", kind="pii", label="phone",
...                        contexts=["You can call me at"])                # doctest: +SKIP
>>> engine.refresh()                                     # doctest: +SKIP
>>> out = engine.generate(GenerationRequest("Any questions? Just call me at"))   # doctest: +SKIP
>>> out.spans[0].kind                                    # doctest: +SKIP
'pii'

One engine belongs to one thread at a time (the editor's model worker, the
command line, a test); it never imports Qt.
"""
from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterator, Sequence

from .decoding import Decoder, DecodeSettings, Stats
from .pieces import Piece
from .drafting import NGramDrafter
from .encoding import ContextStates, Encoder, ModelStats
from .errors import ChunkwiseError
from .healing import unfinished_word, vocabulary
from .knn import KnnLM, KnnSettings
from .library_notes import where_entries_come
from .llama_runtime import LlamaRuntime
from .matching import DEFAULT_THRESHOLD, REPEATABLE_KINDS, ChunkMatcher
from .paths import resolve_model_path
from . import slots
from .sampling import Sampler
from .slots import SlotClassifier
from .store import ChunkStore

MODES = ("complete", "chat")
ENCODE_BATCH = 64
# An edit of more chunks than this is read whole (Engine.refresh): one sent email touches a handful, a
# Learn of many emails thousands (a whole read at 100k contexts: 8.61 s, bench/learn_latency.py).
IN_PLACE_MAX = 200
_stats_cache: dict[str, tuple[ModelStats, bool]] = {}   # key -> (statistics, shipped with Chunkwise)
_slots_cache: dict[str, SlotClassifier] = {}
_stats_lock = threading.Lock()

Progress = Callable[[int, int], None]


@dataclass
class GenerationRequest:
    """What to generate.

    ``mode``: ``"complete"`` continues *prompt* as plain text, tokenized as
    llama-cpp-python's ``create_completion`` does; ``"chat"`` treats it as an
    instruction through the model's chat template (with ``system`` if given).
    """

    prompt: str
    mode: str = "complete"
    max_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 0.95
    top_k: int = 40
    seed: int | None = None
    stop: Sequence[str] = ()
    use_chunks: bool = True
    sample_acceptance: bool = False
    system: str | None = None
    draft: bool = False         # drafts checked in one batch, never longer than this build decodes exactly,
                                # so output stays plain decoding's (docs/benchmarks.md: when it pays)
    anchor_reduction: bool = False  # drop earlier sentences' KV at sentence ends (costs quality; long documents)
    anchor_keep: int | None = None  # leading prompt tokens kept whole; default: the whole chat prompt, or BOS
    draft_cap: int | None = None  # longest draft; None: the longest this build checks bit-exactly
    knn: bool = False           # mix in the kNN-LM distribution of the user's mined writing (Engine.knn_settings),
                                # once there is some: before anything is learned, plain suggestions and a notice
    guard_details: bool = True  # stop before a phone number, email, web or street address the model invents
    first_rank: int | None = None  # an alternative suggestion: start with the model's n-th likeliest token
                                   # (0 = its own top choice, no library chunk first); the editor's Alt+]
    natural_end: float | None = None  # end after a sentence, or before a word the model gives less than this
                                      # probability (the editor: Settings.unsure_below); None: run on
    leave_out: Sequence[int] = ()     # chunk ids not to insert: those the user typed over in this sentence
                                      # (text.PassedOver); the rest of a value they begin by hand still comes
    instead_of: Sequence[int] = ()    # the detail alternative to the library entries a suggestion brings: only
                                      # another value of their field may come (the other of two emails; readier())
    threshold: float | None = None    # this request's similarity threshold instead of the engine's (0..1);
                                      # the editor's detail alternative asks at READY_THRESHOLD (readier())
    finish_word: bool = False         # the prompt may end inside a word the user is typing ("Thanks for the upd"):
                                      # the suggestion finishes it as the model spells it (core/healing.py);
                                      # the editor asks so unless a space was typed last

    def readier(self, threshold: float, shown: Sequence[Piece] = ()) -> "GenerationRequest | None":
        """The same request at READY_THRESHOLD, the model's own first choice, and at most READY_TOKENS
        long (the detail alternative: a value comes in one step, after a lead-in word or two at most);
        None where there is nothing readier to ask: chunks off, or *threshold* (the engine's, which
        this request runs at unless it names its own) at READY_THRESHOLD or below already.  Where the
        suggestion *shown* starts with a library entry (after a lead-in word at most), the alternative
        asks instead for another value of its field, as sure as it was: the same request at its own
        threshold with it left out and only its field open (``instead_of``: the other of two emails after
        "my personal email is").

        >>> r = GenerationRequest("Ship to:", first_rank=1).readier(0.3)
        >>> r.threshold, r.first_rank, r.prompt, GenerationRequest("Ship to:").readier(0.1)
        (0.1, None, 'Ship to:', None)
        >>> r = GenerationRequest("Ship to:").readier(0.3, [Piece(" 1 Main St", "chunk", 4, "pii")])
        >>> r.threshold, r.leave_out, r.instead_of
        (None, (4,), (4,))
        >>> GenerationRequest("Hi").readier(0.3, [Piece(" Sam, call me or"), Piece(" 1 Main St", "chunk", 4, "pii")]).threshold
        0.1
        """
        if not self.use_chunks or (self.threshold if self.threshold is not None else threshold) <= READY_THRESHOLD:
            return None
        short = min(self.max_tokens, READY_TOKENS)
        # Only an entry the suggestion starts with: one further on leaves the cursor's place to the
        # detail alternative as before.
        first = entry_at_start(shown)
        entries = (shown[first].chunk_id,) if first is not None else ()
        if entries:
            return replace(self, first_rank=None, max_tokens=short, instead_of=entries,
                           leave_out=(*self.leave_out, *(e for e in entries if e not in self.leave_out)))
        return replace(self, threshold=READY_THRESHOLD, first_rank=None, max_tokens=short)


# The editor's detail alternative (Alt+]): where the suggestion at the user's threshold brings none of their
# library entries, the same request at this threshold may.  The slot classifier reads the right field of a
# detail it missed at 0.17-0.34 for most misses on the personal dev split (docs/benchmarks.md), where ordinary
# prose reads as often: too eager to insert unasked, one key away it costs nothing (bench/personal.py
# "one Alt+] away").  0.1 is a type cut of about 0.18 (matching.type_cutoff).
READY_THRESHOLD = 0.1
READY_TOKENS = 6          # the detail alternative's length: a lead-in word or two, the value, a little after it


def entry_at_start(pieces: Sequence[Piece]) -> int | None:
    """The index in *pieces* of the library entry (not a phrase mined from the user's mail) a suggestion
    starts with, after a lead-in word at most; None where it starts with none.

    >>> phone = Piece(" +49 151", "chunk", 7, "pii", "Phone")
    >>> entry_at_start([Piece(" at"), phone]), entry_at_start([Piece(" Sam, call me on"), phone]), entry_at_start([])
    (1, None, None)
    """
    first = next((i for i, p in enumerate(pieces) if p.from_chunk and p.kind not in REPEATABLE_KINDS), None)
    if first is None or len("".join(p.text for p in pieces[:first]).split()) > 1:
        return None
    return first


def detail_offered(ready: Sequence[Piece], best: Sequence[Piece]) -> Piece | None:
    """The first of the user's library entries (not a phrase mined from their mail) in *ready*, unless
    *best* brings it too; where *best* starts with an entry of its own (:func:`entry_at_start`, when
    ``GenerationRequest.readier`` asked for another value of its field), only one that stands in its
    place (after the same text): the other of two emails, not an entry further on.

    >>> phone = Piece(" +49 151", "chunk", 7, "pii", "Phone")
    >>> mined = Piece(" Thanks,", "chunk", 9, "self")
    >>> detail_offered([mined, Piece(" me at"), phone], [Piece(" me soon")]).chunk_id
    7
    >>> detail_offered([phone], [Piece(" Call"), phone]) is None, detail_offered([mined], []) is None
    (True, True)
    >>> mobile = Piece(" +44 7700", "chunk", 8, "pii", "mobile")
    >>> detail_offered([mobile], [phone]).chunk_id, detail_offered([Piece(" and"), mobile], [phone])
    (8, None)
    >>> detail_offered([mobile], [Piece(" Sam, call me or write to"), phone]).chunk_id   # an entry further on
    8
    """
    have = {p.chunk_id for p in best if p.from_chunk}
    first = next((p for p in ready if p.from_chunk and p.kind not in REPEATABLE_KINDS), None)
    if first is None or first.chunk_id in have:
        return None
    shown = entry_at_start(best)
    if shown is not None:         # another value for that place, not an entry further on
        before = lambda pieces, i: "".join(p.text for p in pieces[:i])
        if before(ready, list(ready).index(first)) != before(best, shown):
            return None
    return first


@dataclass(frozen=True)
class Span:
    """Character range of *text* that came from a chunk."""

    start: int
    end: int
    chunk_id: int
    kind: str
    match: float               # how well it matched (Proposal.match)
    label: str | None = None

    def as_dict(self) -> dict:
        # "similarity": the same value under its old name, kept for scripts written against 0.1; drop in 0.3.
        return {"start": self.start, "end": self.end, "chunk_id": self.chunk_id, "kind": self.kind,
                "match": self.match, "similarity": self.match, "label": self.label}


@dataclass
class Completion:
    text: str
    spans: list[Span]
    stats: Stats
    notices: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"text": self.text, "spans": [s.as_dict() for s in self.spans],
                "stats": self.stats.as_dict(), "notices": self.notices}


class Generation:
    """A running generation: iterate for pieces; ``completion()`` when done."""

    def __init__(self, decoder: Decoder, tokens: list[int], prompt_text: str, notices: list[str]):
        self._decoder = decoder
        self._iter = decoder.run(tokens, prompt_text)
        self.notices = notices
        self.pieces: list[Piece] = []

    def __iter__(self) -> Iterator[Piece]:
        for piece in self._iter:
            self.pieces.append(piece)
            yield piece

    @property
    def stats(self) -> Stats:
        return self._decoder.stats

    def completion(self) -> Completion:
        for _ in self:  # drain what is left
            pass
        text, spans = "", []
        for p in self.pieces:
            if p.source == "chunk":
                if spans and spans[-1].chunk_id == p.chunk_id and spans[-1].end == len(text):
                    last = spans.pop()
                    spans.append(Span(last.start, len(text) + len(p.text), last.chunk_id, last.kind,
                                      last.match, last.label))
                else:
                    spans.append(Span(len(text), len(text) + len(p.text), p.chunk_id, p.kind,
                                      p.match, p.label))
            text += p.text
        return Completion(text, spans, self.stats, self.notices)


def check_threshold(value: float) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ChunkwiseError(f"The threshold must be a number between 0 and 1 (got {value!r}).") from None
    if not 0.0 <= value <= 1.0:
        raise ChunkwiseError(f"The threshold must be between 0 and 1 (got {value}).")
    return value


class Engine:
    """A loaded model plus a chunk store, ready to generate."""

    def __init__(self, model_path: str | os.PathLike | None = None,
                 store: ChunkStore | str | os.PathLike | None = None, *, n_ctx: int = 2048,
                 n_threads: int | None = None, threshold: float = DEFAULT_THRESHOLD, verbose: bool = False,
                 runtime: LlamaRuntime | None = None, progress: Progress | None = None):
        self.runtime = runtime or LlamaRuntime(resolve_model_path(model_path), n_ctx=n_ctx,
                                               n_threads=n_threads, verbose=verbose)
        if isinstance(store, ChunkStore):
            self.store = store
        else:
            self.store = ChunkStore(store if store is not None else ":memory:")
        rt = self.runtime
        self.model_id = self.store.model_id(rt.identity, rt.name, rt.n_embd)
        self._progress = progress
        self._threshold = threshold
        self._matcher: ChunkMatcher | None = None   # built on first need (measures the model once)
        self._chunk_drafts = NGramDrafter()          # n-grams of the chunk texts, rebuilt on refresh
        self._refreshed = False
        self._read_ahead = ContextStates()           # contexts read while typed (prepare_contexts) or by an edit
        self.index_status = ""
        self.knn_settings = KnnSettings()
        self._knn: KnnLM | None = None
        self._catching_up = False           # catch_up_knn is adding learned rows (has_knn)

    @property
    def matcher(self) -> ChunkMatcher:
        if self._matcher is None:
            matcher = ChunkMatcher(self._model_stats(self._progress), self._threshold)
            matcher.slots = self._slot_classifier(matcher.stats, self._progress)
            self._matcher = matcher
        return self._matcher

    # ------------------------------------------------------------ set-up

    def _model_stats(self, progress: Progress | None) -> ModelStats:
        """The model's whitening statistics: cached in this process, shipped (bundled model), kept in
        the store, or measured once (seconds) and kept there."""
        source = ModelStats.source_id()
        key = f"{self.runtime.identity}|{source}"
        with _stats_lock:
            if key not in _stats_cache:
                stats = ModelStats.shipped(self.runtime.identity)
                if stats is not None:
                    _stats_cache[key] = (stats, True)
                else:
                    saved = self.store.model_stats(self.model_id, source)
                    _stats_cache[key] = (ModelStats(*saved) if saved else ModelStats.compute(self.runtime, progress),
                                         False)
            stats, shipped = _stats_cache[key]
            # Measured here, perhaps for another store in this process (a locked library's stand-in,
            # before the unlock): keep it in this one too, or its next start measures again.
            if not shipped and self.store.path != ":memory:" and not self.store.has_model_stats(self.model_id, source):
                self.store.save_model_stats(self.model_id, source, stats.mean, stats.whitener, stats.background)
            return stats

    def _slot_classifier(self, stats: ModelStats, progress: Progress | None) -> SlotClassifier | None:
        """The slot classifier for this model: cached, saved in the store, shipped (bundled model), or trained once."""
        source = f"{slots.source_id()}|{ModelStats.source_id()}"
        key = f"{self.runtime.identity}|{source}"
        with _stats_lock:
            if key in _slots_cache:
                return _slots_cache[key]
            in_store = self.store.slot_model(self.model_id, source)
            saved = in_store or slots.shipped(self.runtime.identity, source)
            if saved is not None:
                clf = SlotClassifier.from_bytes(*saved)
            elif not any(path.exists() for path in slots.TRAINING_FILES):
                return None
            else:
                clf = slots.train(self.runtime, stats, progress)
            if in_store is None:        # read back from the store: nothing to write again
                self.store.save_slot_model(self.model_id, source, *clf.to_bytes())
            _slots_cache[key] = clf
            return clf

    @property
    def index_path(self) -> Path | None:
        if self.store.path == ":memory:":
            return None
        slug = hashlib.sha1(self.runtime.identity.encode()).hexdigest()[:12]
        return Path(f"{self.store.path}.{slug}.hnsw")

    def refresh(self, progress: Progress | None = None, cancelled: Callable[[], bool] | None = None,
                chunk_ids: Sequence[int] | None = None) -> int:
        """Encode contexts that are new or changed for this model, then bring matching up to date.

        With *chunk_ids* (an edit of those chunks: added, changed, deleted,
        contexts learned or removed) only their contexts are encoded and
        matching follows them in place (core/matching_state.py), in
        milliseconds at 100k contexts; without, or before matching was first
        loaded, everything is read again.  Work is saved in batches, each in
        one transaction, so an interrupted refresh keeps what it finished and
        resumes from there.  Returns the number of contexts encoded.

        An edit of more than IN_PLACE_MAX chunks (a Learn of many emails) is read whole, as learning
        did before it followed its chunks in place: at that size in place saves nothing.

        Incremental edits do not rewrite the persisted index (seconds at 100k):
        the next load brings it up to date from the store's hashes.  Deleted
        chunks' n-grams stay in the drafter until then: drafts are verified,
        so they cost at most a rejected guess, never a wrong word.
        """
        incremental = chunk_ids is not None and self._refreshed and len(set(chunk_ids)) <= IN_PLACE_MAX
        pending = self.store.pending_encodings(self.model_id, chunk_ids if incremental else None)
        encoder = Encoder(self.runtime, self._read_ahead, remember=incremental)
        done = 0
        for start in range(0, len(pending), ENCODE_BATCH):
            if cancelled and cancelled():
                break
            batch = pending[start:start + ENCODE_BATCH]
            encoded = encoder.encode_many(batch)
            self.store.save_encodings(self.model_id, encoded)
            done += len(encoded)
            if progress:
                progress(done, len(pending))
        if incremental:
            self.matcher.update(self.store, self.model_id, chunk_ids)
            for tokens in self.matcher.chunk_token_lists(chunk_ids):
                self._chunk_drafts.add_document(tokens)
            return done
        self.index_status = self.matcher.load(self.store, self.model_id, self.runtime.identity, self.index_path)
        self._chunk_drafts = NGramDrafter()
        for tokens in self.matcher.chunk_token_lists():
            self._chunk_drafts.add_document(tokens)
        self._refreshed = True
        return done

    def prepare_contexts(self, contexts: Sequence[str]) -> int:
        """Read contexts the user is typing into a library entry, before it is saved; returns how
        many the model read.  The save's refresh then finds them read (one forward pass each, the
        larger part of an edit's time), so the next suggestion sees the entry sooner.

        >>> engine.prepare_contexts(["The company I work for is"])          # doctest: +SKIP
        1
        """
        return Encoder(self.runtime, self._read_ahead).read_ahead_of_save(contexts)

    def matcher_ready(self) -> ChunkMatcher | None:
        """The matcher over an up-to-date store, or None when the store is empty."""
        if self.store.count()[0] == 0:
            return None
        if not self._refreshed:
            self.refresh(self._progress)
        return self.matcher

    def where_entries_come(self, chunk_ids: Sequence[int]) -> dict[int, str]:
        """chunk id -> where matching inserts that library entry (core/library_notes.py), as it knows the
        library now: an entry it has not read yet gets "" (the refresh after an edit brings it)."""
        return where_entries_come(self._matcher, chunk_ids)

    def runtime_states(self, tokens: Sequence[int]):
        """One pass over *tokens* from an empty cache: logits (n, V) and hidden states (n, d), row i after token i."""
        self.runtime.reset()
        return self.runtime.eval(list(tokens), outputs="all", hidden=True)

    @property
    def knn(self) -> KnnLM:
        """The kNN-LM datastore of the mined corpus (loaded on first use), with ``knn_settings``.

        Its HNSW graph is kept beside the store (:attr:`knn_index_path`, sealed with the store's
        key), grown when learning adds rows (core/learning.mine, :meth:`catch_up_knn`) and read back
        on later starts."""
        if self._knn is None:
            self._knn = self._datastore()
        self._knn.settings = self.knn_settings.check()
        return self._knn

    @property
    def knn_index_path(self) -> Path | None:
        """Where the kNN-LM's graph is kept (None for an in-memory store); a re-key removes it with
        the chunk index (both match ``<store>.*.hnsw*``)."""
        index = self.index_path
        return index.with_name(index.name[: -len(".hnsw")] + ".knn.hnsw") if index is not None else None

    def _knn_signature(self) -> str:
        from .knn import signature

        return signature(self._knn_source(), self.store.knn_extent(self.model_id))

    def _knn_source(self) -> str:
        return f"{self.runtime.identity}|{ModelStats.source_id()}"

    def _datastore(self, held: KnnLM | None = None, progress: Progress | None = None) -> KnnLM:
        from .knn import datastore

        return datastore(self.store, self.model_id, self._knn_source(), self.matcher.stats, self.knn_settings,
                         self.knn_index_path, self.store.key, held=held, progress=progress)

    def catch_up_knn(self, progress: Progress | None = None) -> None:
        """After learning added rows to the kNN datastore: the one in memory grown by them, or the graph
        kept before (core/knn.py datastore), and kept again; built whole only where neither is there.
        Building it whole after every learned email held the lane 92 s at 100k rows
        (bench/learn_latency.py).  *progress* comes between slices of rows added, where the caller may
        answer a suggestion: from the datastore in memory, whole at that point, or without the
        kNN-LM while the first one is built (:attr:`has_knn`)."""
        if not self.store.knn_count(self.model_id):
            self._knn = None
            return
        self._catching_up = True
        try:
            self._knn = self._datastore(held=self._knn, progress=progress)
        finally:
            self._catching_up = False

    def warm(self) -> None:
        """Make now what the first request would otherwise wait for: the table of every token's
        spelling that finishing a word the user is typing reads (core/healing.py; its time is in
        docs/benchmarks.md, bench/first_token.py).  The editor's worker calls it once the model has loaded."""
        vocabulary(self.runtime)

    @property
    def model_name(self) -> str:
        """The loaded model file's name, for a status line."""
        return self.runtime.name

    @property
    def contexts(self) -> int:
        """How many stored chunk contexts matching can use now (0 while the library is locked or empty)."""
        return len(self.matcher)

    @property
    def library_entries(self) -> int:
        """How many of the user's own library entries matching can use now (0 while locked or empty)."""
        return self.matcher.library_entries

    @property
    def detail_values(self) -> tuple[str, ...]:
        """The values of the user's personal details matching can use now (none while locked or
        empty): the editor's spelling check takes their words as the user's (a name, a street)."""
        return self.matcher.detail_values

    @property
    def has_knn(self) -> bool:
        if self._knn is None and self._catching_up:
            return False                     # being built by catch_up_knn: not built again for a suggestion
        return self._knn is not None or self.store.knn_count(self.model_id) > 0

    def forget_knn(self, kept_too: bool = False) -> None:
        """Drop the in-memory datastore; *kept_too*: its kept graph as well (after forgetting what was
        learned: the graph holds states of the user's writing)."""
        self._knn = None
        path = self.knn_index_path
        if kept_too and path is not None:
            path.unlink(missing_ok=True)

    @property
    def threshold(self) -> float:
        return self._threshold

    @threshold.setter
    def threshold(self, value: float) -> None:
        self._threshold = check_threshold(value)
        if self._matcher is not None:
            self._matcher.threshold = self._threshold

    # ------------------------------------------------------------ generation

    def prompt_tokens(self, request: GenerationRequest) -> tuple[list[int], str]:
        """Token ids for the request's framing, and the text they stand for."""
        rt = self.runtime
        if request.mode == "complete":
            return rt.tokenize(request.prompt, add_special=True, parse_special=True), request.prompt
        if request.mode == "chat":
            messages = ([{"role": "system", "content": request.system}] if request.system else [])
            messages.append({"role": "user", "content": request.prompt})
            text = rt.chat_prompt(messages)
            return rt.tokenize(text, add_special=False, parse_special=True), ""
        raise ChunkwiseError(f"Unknown mode {request.mode!r}: use one of {', '.join(MODES)}.")

    def stream(self, request: GenerationRequest, cancelled: Callable[[], bool] | None = None) -> Generation:
        """Start a generation; iterate the result for :class:`Piece` events."""
        if request.max_tokens < 1:
            raise ChunkwiseError("max_tokens must be at least 1.")
        if request.first_rank is not None and not 0 <= request.first_rank < self.runtime.n_vocab:
            raise ChunkwiseError(f"first_rank must be between 0 and {self.runtime.n_vocab - 1}.")
        if request.threshold is not None:
            request = replace(request, threshold=check_threshold(request.threshold))     # "0.3" -> 0.3
        tokens, text = self.prompt_tokens(request)
        notices, dropped = [], 0
        room = self.runtime.n_ctx - request.max_tokens - 64  # slack for a chunk past max_tokens
        if room < 8:
            raise ChunkwiseError(f"max_tokens {request.max_tokens} leaves no room in the context window "
                                 f"of {self.runtime.n_ctx} tokens.")
        if len(tokens) > room:
            dropped = len(tokens) - room
            keep_bos = tokens[:1] if tokens and tokens[0] == self.runtime.bos else []
            tokens = keep_bos + tokens[dropped + len(keep_bos):]
            notices.append(f"The prompt is {len(tokens) + dropped} tokens; the context window holds "
                           f"{self.runtime.n_ctx}. The first {dropped} tokens were left out.")
        if not tokens:
            tokens = [self.runtime.bos]
        sampler = Sampler(request.temperature, request.top_p, request.top_k, request.seed)
        keep = None
        if request.anchor_reduction:
            keep = request.anchor_keep if request.anchor_keep is not None else (
                len(tokens) if request.mode == "chat" else 1)
        heal = unfinished_word(tokens, text, self.runtime.piece) if request.finish_word and request.mode == "complete" else 0
        heal = heal if heal < len(tokens) else 0          # something must stay to prefill
        settings = DecodeSettings(request.max_tokens, sampler, tuple(request.stop), request.use_chunks,
                                  request.sample_acceptance, request.draft, keep, draft_cap=request.draft_cap,
                                  guard_details=request.guard_details, first_rank=request.first_rank,
                                  natural_end=request.natural_end, leave_out=frozenset(request.leave_out),
                                  instead_of=frozenset(request.instead_of), heal=heal)
        matcher = None      # none without chunks: the plain path of the bit-exactness contract (core/llama_runtime.py)
        if request.use_chunks and self.store.count()[0] > 0:
            if not self._refreshed:
                self.refresh(self._progress)
            matcher = self.matcher
            if request.threshold is not None:
                matcher = matcher.at_threshold(request.threshold)
        drafter = self._chunk_drafts.fork() if (request.use_chunks and matcher is not None) else NGramDrafter()
        knn = None
        if request.knn and self.has_knn:
            knn = self.knn
        elif request.knn and not self._catching_up:   # (while the first graph is built, it sits out silently)
            # the one place this is decided: the editor, the CLI and the benches ask alike
            notices.append("Nothing has been learned from your writing yet (Tools → Learn from my writing, or "
                           "'chunkwise mine --knn --corpus ...'): suggestions come from the model alone.")
        decoder = Decoder(self.runtime, matcher, settings, cancelled, drafter, knn=knn)
        generation = Generation(decoder, tokens, text, notices)
        generation.stats.truncated_tokens = dropped
        return generation

    def generate(self, request: GenerationRequest, record_use: bool = True) -> Completion:
        """Generate to the end and return the text with its chunk spans and stats."""
        completion = self.stream(request).completion()
        if record_use:
            for chunk_id in {s.chunk_id for s in completion.spans}:
                self.store.record_use(chunk_id)
        return completion

    # ------------------------------------------------------------ learning while writing (core/feedback.py)

    def learn_typed(self, text: str, inserted: Sequence[tuple[int, int]] = ()) -> list:
        """The phrase before each library value typed by hand in *text* becomes a learned context."""
        from .feedback import learn_typed

        return learn_typed(self, text, inserted)

    def prepare_typed(self, text: str, inserted: Sequence[tuple[int, int]] = ()) -> int:
        """Read ahead the phrase before a library value the user has begun to type by hand (its first
        characters end *text*), so that learning it when the value is complete runs no forward pass;
        returns how many phrases the model read.

        >>> engine.prepare_typed("For anything urgent, ring me on +49 15")     # doctest: +SKIP
        1
        """
        from .feedback import library_values, values_being_typed

        typing = values_being_typed(library_values(self.store), text, inserted)
        if not typing:
            return 0
        known = {(c.id, ctx.text) for c in self.store.list_chunks(ids=sorted({cid for cid, _ in typing}))
                 for ctx in c.contexts}                   # already stored there: learning adds nothing
        return self.prepare_contexts(list(dict.fromkeys(p for cid, p in typing if (cid, p) not in known)))

    def dismiss(self, chunk_id: int, text_before: str):
        """The user dismissed *chunk_id* suggested after *text_before*: not offered there again."""
        from .feedback import dismiss

        return dismiss(self, chunk_id, text_before)

    def confirm(self, chunk_id: int, text_before: str):
        """The user took *chunk_id*, offered one Alt+] away after *text_before*: learned there."""
        from .feedback import confirm

        return confirm(self, chunk_id, text_before)

    def forget_learned(self) -> dict[str, int]:
        """Forget everything learned from the user's writing (contexts, mined chunks, kNN data)."""
        counts = self.store.forget_learned()
        self.forget_knn(kept_too=True)
        self.refresh()
        return counts

    def use_store(self, store: ChunkStore, progress: Progress | None = None,
                  cancelled: Callable[[], bool] | None = None) -> int:
        """Match against *store* from now on (a library unlocked after start), closing the one used
        so far; the model stays loaded.  Returns the number of contexts encoded for it."""
        old, self.store = self.store, store
        self._read_ahead.clear()           # one library's typing is not kept for another
        rt = self.runtime
        self.model_id = store.model_id(rt.identity, rt.name, rt.n_embd)
        self._refreshed, self._knn = False, None
        if self._matcher is not None:      # measured for the store used so far: kept in this one too
            self._slot_classifier(self._model_stats(None), None)     # (cached: this only saves them)
        if old is not store:
            old.close()
        return self.refresh(progress, cancelled)

    def keep_knn(self) -> None:
        """Write the kNN-LM's graph beside the store if rows were learned since it was last kept
        (learning writes it only every KEEP_AFTER_ROWS rows: core/knn.py datastore)."""
        if self._knn is not None:
            from .knn import keep_datastore

            keep_datastore(self._knn, self.knn_index_path, self.store.key)

    def close(self) -> None:
        self.keep_knn()
        self._read_ahead.clear()
        self.runtime.close()
        self.store.close()
