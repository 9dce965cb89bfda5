"""The decode loop: a short story in named steps.

    prefill   the prompt goes into the KV cache (only tokens not cached yet), less the tokens of
              a word the user is in the middle of: the first steps spell it again (heal)
    propose   does a stored chunk start here?  (matching.ChunkMatcher)
    accept    greedy: q >= 0.5; or z ~ Bernoulli(q)
    insert    the chunk's tokens -- or --
    sample    one token from the logits
    (draft    opt-in: n-gram or weak-chunk tokens that may follow it, to check)
    guard     model text that may become a phone number, email, web or street address is held
              back; an invented one ends the suggestion before it (the user's own come as chunks)
    emit      text pieces tagged with where they came from
    decode    the step's one llama_decode: the chunk's tokens in one batch, or the sampled
              token (with its draft, verified in the same batch)
    (reduce   opt-in: at a sentence end, drop earlier sentences from the KV cache)

Every step ends in exactly one ``llama_decode`` (a forward pass), whether it
adds one token or a whole chunk; the state it returns (logits, hidden) is
what the next step proposes and samples from.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Generator, Iterator, Sequence

import numpy as np

from .anchors import AnchorReducer
from .details import DetailGuard, find_details
from .drafting import DraftLength, NGramDrafter
from .healing import vocabulary
from .encoding import Encoder, local_mean, local_rows, local_tail
from .llama_runtime import LlamaRuntime, Outputs
from .knn import NEAR, KnnLM
from .matching import REPEATABLE_KINDS, ChunkMatcher, Proposal
from .sampling import Sampler, Utf8Stream, token_probability
from . import whose
from .pieces import AttributedStops, Piece, ValueRepeats
from .placement import Placement
from .text import ends_sentence, inside_word, is_sentence, opens_paragraph

_OPENER = {")": "(", "]": "[", "}": "{"}      # a bracket after a value closes one its line opened, or ends it
# Token healing (core/healing.py): where the typed letters may be a whole word as they stand, that reading
# gets these log-odds over lengthening it: a pause comes after a word as often as inside one.  On the
# personas' dev emails (bench/word_as_typed.py) the model alone (0) lengthened 4 of 116 whole words
# ("Meet at" -> " attack"), with 2.0 one, while keeping the tokenizer's cut at the first step of 10 of 75
# unfinished ones instead of 6 (most are spelled on after it); bench/midword.py dev: 50 / 50 / 49 of
# 78 words finished rightly at 1 / 2 / 3 (bench/out/midword-dev-word-as-typed-*.txt), and
# bench/personal.py dev is as without healing at 2 (at 1, "Meet at" and "are on" were lengthened).
WORD_AS_TYPED = 2.0


@dataclass
class Stats:
    tokens: int = 0            # generated tokens, chunk tokens included
    forward_passes: int = 0    # llama_decode calls while generating (one batch = one pass)
    chunk_tokens: int = 0      # tokens that came from chunks
    chunks: int = 0            # chunks inserted
    seconds: float = 0.0       # wall time of the whole request, prefill included
    prompt_tokens: int = 0
    prompt_reused: int = 0     # prompt tokens found in the KV cache already
    prefill_seconds: float = 0.0
    truncated_tokens: int = 0  # prompt tokens dropped from the left to fit the window
    stop_reason: str = ""      # "length", "eos", "stop", "cancelled", "detail" (an invented detail or a value's end),
                               # "end" (a natural end: a sentence said, or a word the model doubts)
    drafted: int = 0           # draft tokens sent for verification
    draft_accepted: int = 0    # of those, tokens the model confirmed (its own choice)
    chunk_drafted: int = 0     # draft tokens that came from below-threshold chunks
    chunk_draft_accepted: int = 0
    kv_tokens_kept: int = 0    # tokens whose keys and values the cache keeps at the end (anchor reduction drops some)
    kv_positions: int = 0      # positions evaluated (what a full cache would hold)
    withheld: str = ""         # the detail the suggestion stopped before, which the model would have made up:
                               # "phone", "email", "web" or "address" (core/details.py), or the kind of value
                               # the slot classifier read at a line only the user can write ("name",
                               # Decoder.own_line_ahead); "" if none

    @property
    def passes_saved(self) -> int:
        """Forward passes a token-by-token decode would have needed more: a chunk of n tokens costs one."""
        return self.chunk_tokens - self.chunks

    @property
    def steps(self) -> int:
        """Forward passes counted the same way for every configuration: one per step, the last included.

        A run that stops on length never decodes its last token, so ``forward_passes`` is one short
        there, and comparing it would credit plain decoding with a saved pass (1/N).  Plain
        decoding takes exactly ``tokens`` steps; a chunk of n tokens is one; accepted drafts ride along.
        """
        return self.tokens - self.passes_saved - self.draft_accepted

    @property
    def decode_seconds(self) -> float:
        """Wall time after the prompt's prefill: what comparisons of runs that stop at different
        lengths, or start with different cache states, should divide by their tokens."""
        return self.seconds - self.prefill_seconds

    def as_dict(self) -> dict:
        return {"tokens": self.tokens, "forward_passes": self.forward_passes, "steps": self.steps,
                "chunk_tokens": self.chunk_tokens, "chunks": self.chunks,
                "seconds": round(self.seconds, 4), "prompt_tokens": self.prompt_tokens,
                "prompt_reused": self.prompt_reused, "truncated_tokens": self.truncated_tokens,
                "stop_reason": self.stop_reason, "drafted": self.drafted, "draft_accepted": self.draft_accepted,
                "chunk_drafted": self.chunk_drafted, "chunk_draft_accepted": self.chunk_draft_accepted,
                "kv_tokens_kept": self.kv_tokens_kept, "kv_positions": self.kv_positions, "withheld": self.withheld}


@dataclass
class DecodeSettings:
    max_tokens: int = 64
    sampler: Sampler = field(default_factory=Sampler)
    stop: Sequence[str] = ()
    use_chunks: bool = True
    sample_acceptance: bool = False   # z ~ Bernoulli(q) instead of q >= 0.5
    draft: bool = False               # n-gram / chunk drafts verified in one batch (docs/benchmarks.md: opt-in)
    anchor_keep: int | None = None    # anchor KV reduction on, protecting this many leading tokens
    draft_cap: int | None = None      # longest draft; None: the build's exact batch size - 1 (lossless)
    guard_details: bool = True        # never show a phone number, email or address the model made up
    first_rank: int | None = None     # an alternative: start with the model's n-th likeliest token (0 = its top
                                      # choice), no library chunk before it; greedy (or sampled) after that
    natural_end: float | None = None  # end at a natural end: after a sentence, or before a word the model gives
                                      # less than this probability (None: run to max_tokens or a stop)
    leave_out: frozenset[int] = frozenset()   # chunks not proposed (the user typed over them in this sentence)
    instead_of: frozenset[int] = frozenset()  # only another value of these chunks' field (GenerationRequest.readier)
    heal: int = 0                     # the prompt's last tokens that spell a word the user may be in the middle of
                                      # (core/healing.py): taken out, and spelled again by the first steps


@dataclass
class _State:
    """The model's outputs after the newest token: logits (V,), hidden (d,), local (d,)."""

    logits: np.ndarray
    hidden: np.ndarray
    local: np.ndarray
    mixed: bool = False     # logits already hold the kNN-LM mixture (propose did it)


@dataclass
class _Commit:
    """What one step commits, decided before its forward pass: a chunk's tokens, or one sampled
    token, with their piece of text; after a sampled token, maybe a draft of tokens that may follow
    it, checked in the same forward pass (``draft_from_chunk``: a chunk too weak to insert)."""

    tokens: list[int]
    piece: Piece
    draft: list[int] = field(default_factory=list)
    draft_from_chunk: bool = False


class Decoder(Placement):
    """Runs one generation over a runtime; iterate it for :class:`Piece` events.

    Each :meth:`step` reads the same way:

        decide       what it commits (:class:`_Commit`): a chunk, or a sampled token and maybe a draft
        show         the committed text goes out now, before its decode (what the user waits for)
        decode_step  the one forward pass, at one place: the committed tokens, plus the draft after
                     them; :meth:`verify` keeps the draft tokens the model itself would choose
        show         those confirmed draft tokens, through the same bookkeeping

    So between steps, every token committed is in the KV cache and ``state`` is the model's
    outputs after the last of them.  A sampled token goes out before the batch that checks its
    draft; only the draft tokens that batch confirms wait for it.  A step that ends the run (a
    stop, the length, an invented detail) ends it before its decode, which would only have
    prepared a next step.  (The only other decodes are what-ifs that leave the cache as it was:
    :meth:`writer_owns_slot`'s peek.)
    """

    def __init__(self, rt: LlamaRuntime, matcher: ChunkMatcher | None, settings: DecodeSettings,
                 cancelled: Callable[[], bool] | None = None, drafter: NGramDrafter | None = None,
                 knn: KnnLM | None = None):
        self.rt = rt
        self.matcher = matcher if settings.use_chunks else None
        self.s = settings
        self.cancelled = cancelled or (lambda: False)
        self.stats = Stats()
        self._utf8 = Utf8Stream()
        self._stops = AttributedStops(settings.stop)
        self._repeats = ValueRepeats()
        self._guard = DetailGuard() if settings.guard_details else None
        self._prompt_chars = 0     # where the generated part of self._text begins
        # After one of the user's own values (pii / snippet): "value", or "dot" once a lone "." followed
        # it (a sentence end, or the start of "anamarin.design" + "." + "com/"); None otherwise.
        self._after_value: str | None = None
        self._recent_hidden: list[np.ndarray] = []
        self._used_chunks: set[int] = set()     # the user's values inserted once in this suggestion
        self._model_wrote = False          # the model has written a letter or digit of its own in this suggestion
        self._line_kind: str | None = None  # own_line_ahead's reading before the blank lines written since
        self._line_break = False           # the model would break the line before the proposed chunk
        # Whose detail comes next was judged someone else's at the cursor; the spaces the model may write
        # before a word do not change that (the classifier read "The garage is located at " as the user's
        # address where "... at" was someone else's as much; tests/test_slots.py).
        self._someone_elses_here = False
        # At the cursor, a value kept out only because the model was sure of a lead-in word first
        # (words_go_on: "reached by phone" -> " at"; or mark_first: "Kind regards" -> ","): (its chunk id,
        # that word or mark as the model writes it);
        # or, where no value was proposed and the model's next word is a lead word (lead_word_ahead),
        # (None, that word).  Right after the model has written exactly that word (at_lead_word), that
        # value, or with None any of the user's values, may still come.
        self._lead_word: tuple[int | None, str] | None = None
        self._text = ""           # prompt tail + generated text, for matching's words
        self._encoder = Encoder(rt)
        # Without chunks to match (or kNN), no hidden states: the plain path of the
        # bit-exactness contract (core/llama_runtime.py), point 1.
        self._chunks_on = self.matcher is not None and len(self.matcher) > 0
        self.knn = knn                     # kNN-LM mixing of the next-token distribution (PP-KD)
        self._hidden = self._chunks_on or knn is not None
        self.drafter = drafter if settings.draft else None
        self._draft_len = DraftLength(cap=0)   # with drafting: sized by run() (draft_length)
        self._draft_kind = 0          # what the current draft came from: n-gram order, or "chunk"
        self._pending: int | None = None   # the model's choice already sampled during verification
        self._anchors = AnchorReducer(rt, max(1, settings.anchor_keep)) if settings.anchor_keep is not None else None
        # Token healing (core/healing.py): the typed letters the first steps still have to spell, as bytes, and
        # how many characters of the text they write are the user's own (not shown).
        self._typed_left = b""
        self._typed_tokens: list[int] = []        # the tokenizer's own tokens of what is left
        self._heal_steps = 0                      # steps spent spelling them, one token each (not counted against
                                                  # max_tokens); the suggestion proper begins after them
        self._word_done = False                   # the last of them was just chosen: the cursor mark moves past it
        self._hidden_chars = 0

    # ------------------------------------------------------------ the story

    def run(self, prompt_tokens: Sequence[int], prompt_text: str = "") -> Iterator[Piece]:
        if self.drafter is not None:
            # Here, not in the constructor: the first measure clears the KV cache, so it goes before
            # prefill, and before the clock starts, as it did when the constructor ran it.
            self._draft_len = self.draft_length()
        start = time.perf_counter()
        self._text = prompt_text[-2000:]
        self._prompt_chars = len(self._text)
        # A suggestion may open a new paragraph (stops count after some text), unless a line break
        # is itself a stop (the subject line) or the text cannot take a paragraph here.
        self._stops = AttributedStops(self.s.stop, lead="\n" not in self.s.stop and opens_paragraph(self._text))
        self._repeats = ValueRepeats()
        if self.s.heal and self.rest_of_value() is None:     # ("hello@te": the library's value finishes it)
            prompt_tokens = self.take_back_word(prompt_tokens)
        state = self.prefill(prompt_tokens)
        if self._anchors is not None:
            self._anchors.reduce()                   # the prefix's earlier sentences (Algorithm 1, line 10)
        self.stats.prefill_seconds = time.perf_counter() - start
        if self.drafter is not None:
            self.drafter.start(prompt_tokens)
        reason = None
        while reason is None:
            state, reason = yield from self.step(state)
        yield from self._flush(ended=reason in ("stop", "detail"))
        self.stats.kv_tokens_kept, self.stats.kv_positions = self.rt.kv_tokens_kept, len(self.rt.tokens)
        self.stats.stop_reason = reason
        self.stats.seconds = time.perf_counter() - start

    def step(self, state: _State) -> Generator[Piece, None, tuple[_State, str | None]]:
        """One step from *state*: its pieces, then (the state after it, why the run ends here or None)."""
        if self.stats.tokens - self._heal_steps >= self.s.max_tokens:
            return state, "length"
        if self.cancelled():
            return state, "cancelled"
        commit = self.decide(state)
        if isinstance(commit, str):
            return state, commit                      # "eos", or "end": a natural end before this token
        end = yield from self.show(commit.tokens, commit.piece)
        if end:
            return state, end                         # no decode: it would only prepare a next step
        state, confirmed = self.decode_step(commit)
        if confirmed:
            end = yield from self.show(confirmed, self.piece_for(confirmed))
            if end:
                return state, end
        if self._anchors is not None and any(self._anchors.is_anchor(t) for t in commit.tokens + confirmed):
            self._anchors.reduce()                    # an anchor was generated (line 16)
        return state, None

    def draft_length(self) -> DraftLength:
        """How long drafts may grow on this runtime, from its batch profile (measured on first use,
        once per runtime, clearing the KV cache; kept by the runtime after that)."""
        profile = self.rt.batch_profile()
        cap = profile.exact - 1 if self.s.draft_cap is None else self.s.draft_cap
        return DraftLength(cost=profile.cost_of, cap=min(12, cap))

    # ------------------------------------------------------------ the steps

    def prefill(self, tokens: Sequence[int]) -> _State:
        """Bring the KV cache to *tokens*, evaluating only what is not cached."""
        self.stats.prompt_tokens = len(tokens)
        shared, evaluated = self.rt.common_prefix(tokens), self.rt.evaluated_tokens
        window = local_rows(len(tokens)) if self._hidden else 1
        out = self.rt.sync(tokens, last=window, hidden=self._hidden, copy=False,   # logits (<= w, V), hidden (w, d)
                           reuse_hidden=True)
        # every token cached, the last one's logits read before (LlamaRuntime._logits_at): nothing evaluated
        self.stats.prompt_reused = min(shared, len(tokens) - (self.rt.evaluated_tokens > evaluated))
        self._recent_hidden = list(out.hidden)
        return self._state(out.logits[-1])

    def take_back_word(self, tokens: Sequence[int]) -> list[int]:
        """The prompt less the tokens of the word the user may be in the middle of (``heal``): the first
        steps spell those letters again, as the model would (:meth:`heal`)."""
        self._typed_tokens = list(tokens[-self.s.heal:])
        self._typed_left = b"".join(self.rt.piece(t) for t in self._typed_tokens)
        typed = self._typed_left.decode("utf-8")
        self._text = self._text[: len(self._text) - len(typed)]      # the steps write it back
        self._hidden_chars = len(typed)
        return list(tokens[: -self.s.heal])

    def heal(self, logits: np.ndarray) -> int:
        """The next token while typed letters are left (:attr:`_typed_left`): the model's choice (V,) -> one
        id among the tokens that begin with all of them and the tokenizer's own next token of them."""
        own = self._typed_tokens.pop(0)
        agreeing = np.append(vocabulary(self.rt).beginning_with(self._typed_left), own)
        masked = np.full(len(logits), -np.inf, dtype=np.float32)
        masked[agreeing] = np.asarray(logits)[agreeing]
        if self.rt.piece(own) == self._typed_left:
            masked[own] += WORD_AS_TYPED      # a pause after a whole word ("More at") is no call to lengthen it
        token = self.s.sampler.sample(masked)
        spelled = self.rt.piece(token)
        self._typed_left = self._typed_left[len(spelled):] if self._typed_left.startswith(spelled) else b""
        self._heal_steps += 1
        if not self._typed_left:
            self._word_done = True
        return token

    def decide(self, state: _State) -> _Commit | str:
        """What this step commits: the proposed chunk if accepted, else the model's token (and a draft
        after it); or why the run ends before it ("eos", "end")."""
        proposal = self.propose(state)
        if proposal is not None and self.accept(proposal):
            return _Commit(*self.insert(proposal))
        token = self.sample(state)
        if self.rt.is_eog(token):
            return "eos"
        kind = self.own_line_ahead(token, state)         # "Best,\n" + "Alex": a line only the user can write
        value = self.library_value_for(kind, state) if kind is not None else None
        if value is not None:
            self._line_break = False                      # the line has begun already
            return _Commit(*self.insert(value))
        if self.ends_naturally(token, state):
            return "end"                          # a sentence is done, or the model is unsure of the next word
        if kind is not None and not self.writing_backs(state):
            self.stats.withheld = kind
            return "detail"
        draft, from_chunk = self.draft_after(token, proposal)    # before the token is counted: room for both
        return _Commit([token], self.piece_for([token]), draft, from_chunk)

    def show(self, tokens: list[int], piece: Piece) -> Generator[Piece, None, str | None]:
        """Let *piece* (the text of *tokens*, already counted) out through the guards and stops;
        returns why the run ends here ("detail", "stop", "length"), or None."""
        if not piece.from_chunk and self.glues_to_value(piece):
            return "detail"                       # "linkedin.com/in/ana" + "-jordan": the value ends here
        self._after_value = self.after_value(piece)
        if self.drafter is not None:
            self.drafter.extend(tokens)
        pieces, repeated = self._repeats.feed_all(self.guard(piece))
        pieces, stopped = self._stops.feed_all(pieces)
        if self._after_value == "value":
            self._repeats.arm(piece.text)             # model text from here on must not start it again
        yield from pieces
        if stopped or repeated or (self._guard is not None and self._guard.stopped):
            if not (stopped or repeated):
                self.stats.withheld = self._guard.found or ""
            return "stop" if stopped or repeated else "detail"
        return "length" if self.stats.tokens - self._heal_steps >= self.s.max_tokens else None

    def propose(self, state: _State) -> Proposal | None:
        if self._typed_left:
            return None                   # inside the user's word: it is finished first (heal)
        if not self._chunks_on or (self.s.first_rank is not None and not self._text[self._prompt_chars:].strip()):
            return None                   # an alternative: the model's own words first, then chunks may come
        rest = self.rest_of_value()
        if rest is not None:
            self._line_break = False
            return rest
        # With drafting, weaker matches are worth scoring too: they become drafts.
        greedy = not self.s.sample_acceptance and self.drafter is None
        if self.knn is not None and not state.mixed:
            # With the kNN-LM on, its mixture is the teacher the mined chunks came from: a mined
            # chunk must start with the token it would choose (bench/keystrokes.py: without this,
            # chunks took the place of better kNN tokens).  Mixed once here, reused by sample().
            state.logits, state.mixed = self.knn.mix_logits(state.logits, state.hidden), True
        choice = int(np.argmax(state.logits))
        # Mid-word, or once the model has written past where the user's own chunks may go (most
        # steps of a suggestion), only a mined phrase after its entry token can come: no search, mostly.
        # Not proposed: values used once in this suggestion, and what the request leaves out (chunks the
        # user typed over in this sentence, feedback.PassedOver).
        ask = dict(exclude=self._used_chunks | self.s.leave_out, greedy=greedy, like=self.s.instead_of,
                   last_token=self.rt.tokens[-1] if self.rt.tokens else None,
                   model_choice=choice, gate_mined=state.mixed,
                   word_start=not inside_word(self._text, self.rt.piece(choice)), own=self.own_chunks_fit())
        proposal = self.matcher.propose(state.hidden, state.local, self._text, **ask)
        proposed = proposal is not None          # anything, even if the gates below turn it away
        # Where the model would break the line ("Kind regards," then the name), the chunk starts a line.
        # Not after the model's lead word: "reach me by email at" + a new line + the address reads badly
        # (after its comma, "Kind regards," + a new line + the name is the point).
        lead_word = self.at_lead_word() and self._lead_word[1].strip().isalpha()
        self._line_break = (proposal is not None and self.rt.piece(choice) == b"\n"
                            and not (lead_word and proposal.kind not in REPEATABLE_KINDS))
        if (self._line_break and proposal.kind not in REPEATABLE_KINDS and not is_sentence(proposal.text)
                and self.writing_backs(state)):
            # The user's own writing is near: its line breaks come first ("Kind regards,\n\nRhea", where the
            # value with one "\n" was typed over), and the value at the start of the line (own_line_ahead,
            # which places values only: a snippet sentence still starts its line here).
            self._line_break = False
            return None
        if proposal is not None and proposal.kind not in REPEATABLE_KINDS:
            # The writer probe runs a decode: state.logits may be a view into llama.cpp's output
            # buffer (decode_step's copy=False), so keep this step's logits before it is overwritten.
            state.logits = np.array(state.logits, copy=True)
            if not self.fits_here(proposal, state.logits):
                # The user's own detail does not go here; a phrase mined from their writing still may,
                # but not one that carries a detail (a mined "on 07700 900123" would fill the very
                # slot just judged someone else's) and nothing of the user's own library.
                proposal = self.matcher.propose(state.hidden, state.local, self._text, typed=False, **ask)
                if proposal is not None and (proposal.kind not in REPEATABLE_KINDS or find_details(proposal.text)):
                    return None
        if not proposed and self.lead_word_ahead(state.logits):
            self._lead_word = (None, self.top_word(state.logits))     # any of the user's values may follow it
        return proposal

    def own_line_ahead(self, token: int, state: _State) -> str | None:
        """At the start of a line, where the model (*token*, its choice) begins writing a value of the
        user's own: the kind the slot classifier reads next (ChunkMatcher.value_ahead: "Kind regards,\n"
        -> a name, "Mara Lindqvist\n" -> a job title) where the words name nobody else and the line above
        is no salutation; else None.
        The model does not know that value ("Best,\n" + "Alex", "Mara Lindqvist\n" + "Sailor,"), so
        the line comes from the library (:meth:`library_value_for`), from the user's writing
        (:meth:`writing_backs`), or not at all: the suggestion ends before it, as before an invented
        phone number.  A line break alone goes on; the next step asks again."""
        if self.matcher is None or not self._chunks_on or not self._text.rstrip(" \t").endswith("\n") or self._typed_left:
            return None
        if whose.person_cue(self._text) == whose.OTHERS or whose.after_salutation(self._text):
            return None                           # someone else's line, or the body below "Hi all,"
        kind = self.matcher.value_ahead(state.hidden, state.local, self._text) or self._line_kind
        if not self.rt.piece(token).strip():
            self._line_kind = kind                # a blank line first ("Kind regards,\n" + "\n"): the value
            return None                           # still comes below it, where the reading may fade
        return kind

    def library_value_for(self, kind: str, state: _State) -> Proposal | None:
        """The user's own value of *kind* for this line: the typed chunk the slot classifier would insert
        here (ChunkMatcher.typed_proposal, with what this suggestion used and the request leaves out
        excluded), if it is of that kind and a value, not a snippet sentence -- and only while
        everything this suggestion wrote is the library's (a signature's next line, "Mara Lindqvist\n"
        -> "Facilities Coordinator"): after a line of the model's own ("Best,") the place is its guess
        at where the email ends, so nothing of the user's is added to it."""
        if self._model_wrote or self._someone_elses_here or self.s.first_rank is not None:
            return None                   # (an alternative starts with the model's own words: propose says why)
        found = self.matcher.typed_proposal(state.hidden, state.local, self._text,
                                            exclude=self._used_chunks | set(self.s.leave_out), like=self.s.instead_of)
        if found is None or self.field_of(found) != kind or is_sentence(found.text):
            return None
        # The gates a value at the cursor passes, as far as they apply to a line of its own (fits_here).
        if found.reads_as_someone_elses or self.begun_by_hand(found) or not self.accept(found):
            return None
        # The writer probe decodes: keep this step's logits (maybe a view into llama.cpp's buffer) first.
        state.logits = np.array(state.logits, copy=True)
        if not self.writer_owns_slot(found):
            self._someone_elses_here = True
            return None
        return found

    def writing_backs(self, state: _State) -> bool:
        """The kNN-LM of the user's own writing is near this place (``knn.NEAR``) and weighs in, so the
        model's line here is what the user wrote before, not made up."""
        return self.knn is not None and self.knn.settings.lam > 0 and self.knn.nearest(state.hidden) <= NEAR

    def ends_naturally(self, token: int, state: _State) -> bool:
        """Before a new word: the suggestion has said a sentence, or the model doubts this word.

        Only at a word's start and after at least one generated word, so a
        suggestion is never cut inside a word or left empty; a chunk is never
        cut (it is inserted whole before this is asked).
        """
        if self.s.natural_end is None or self.ranked_start():
            return False
        written = self._text[self._prompt_chars:]
        if not any(ch.isalnum() for ch in written) or not self.rt.piece(token)[:1].isspace():
            return False
        if ends_sentence(written):
            return True
        return token_probability(self.next_logits(state.logits, state.hidden, state.mixed), token) < self.s.natural_end

    def glues_to_value(self, piece: Piece) -> bool:
        """Model text right after one of the user's values that would run on into it: not a space or
        punctuation, and after a lone "." nothing but a space ("https://anamarin.design" + "." + "com/");
        nor a closing bracket that its line never opened ("Phone: (555) 123-4567" + ")")."""
        if self._after_value is None or not piece.text:
            return False
        first = piece.text[0]
        if self._after_value == "dot":
            return not first.isspace()
        if first in _OPENER:
            line = self._text.rsplit("\n", 1)[-1]        # the piece is in the text already (piece_for)
            return line.count(_OPENER[first]) < line.count(first)
        if first.isspace() or first in ",;:!?\"'":
            return False
        return not (first == "." and (len(piece.text) == 1 or piece.text[1].isspace()))

    def after_value(self, piece: Piece) -> str | None:
        """What the next piece follows: one of the user's values, a lone "." after one, or anything else."""
        if piece.source == "chunk" and piece.kind not in REPEATABLE_KINDS:
            return "value"
        return "dot" if self._after_value == "value" and piece.text == "." else None

    def rest_of_value(self) -> Proposal | None:
        """At the cursor, where the user has begun typing one of their values ("+44 20"), the rest of it
        (ChunkMatcher.value_begun), unless the words before it name someone else ("her number is +44 20").
        The user's own typing is the evidence, so no gate of :meth:`fits_here` is asked, and a value the
        user typed over in this sentence (``leave_out``) still comes: they are typing it now."""
        if self.matcher is None or self._text[self._prompt_chars:]:
            return None
        found = self.matcher.value_begun(self._text, self._used_chunks)
        if found is None:
            return None
        chunk_id, rest = found
        info = self.matcher.chunk_info(chunk_id)
        typed = len(info["text"].strip()) - len(rest)                 # characters of it the user typed
        if whose.person_cue(self._text[: len(self._text) - typed]) == whose.OTHERS:
            return None
        return Proposal(chunk_id=chunk_id, kind=info["kind"], label=info["label"], text=rest,
                        tokens=tuple(self.rt.tokenize(rest, add_special=False)), match=1.0, score=1.0, q=1.0,
                        rest_of=True)

    def accept(self, proposal: Proposal) -> bool:
        if self.s.sample_acceptance:
            return self.s.sampler.bernoulli(proposal.q)
        return proposal.q >= 0.5

    def insert(self, proposal: Proposal) -> tuple[list[int], Piece]:
        """Take the chunk: its tokens as they continue the text written so far."""
        self._pending = None
        tokens = self._continuation_tokens(proposal)
        if proposal.kind not in REPEATABLE_KINDS:
            self._used_chunks.add(proposal.chunk_id)
        self._line_kind = None
        self.stats.chunks += 1
        self.stats.chunk_tokens += len(tokens)
        self.stats.tokens += len(tokens)
        text = self._utf8.feed(b"".join(self.rt.piece(t) for t in tokens))
        self._text += text
        return tokens, Piece(text, "chunk", proposal.chunk_id, proposal.kind, proposal.label,
                             round(proposal.match, 4))

    def sample(self, state: _State) -> int:
        if self._pending is not None:
            token, self._pending = self._pending, None
            return token
        if self.knn is not None and not state.mixed:
            state.logits, state.mixed = self.knn.mix_logits(state.logits, state.hidden), True   # mixed once
        if self._typed_left:
            return self.heal(state.logits)
        if self.ranked_start():
            return int(np.argsort(-np.asarray(state.logits), kind="stable")[self.s.first_rank])   # (V,) -> one token
        return self.choose(state.logits, state.hidden, mixed=state.mixed)

    def ranked_start(self) -> bool:
        """The first step of an alternative suggestion (``first_rank``): the start is chosen by rank, after
        the typed letters are spelled (heal) as the model's first choice spells them: after the word where
        that choice finishes it ("ple" -> "ase"), else after the letters ("Please re" -> "work", "phrase")."""
        return self.s.first_rank is not None and self.stats.tokens == self._heal_steps and not self._typed_left

    def choose(self, logits: np.ndarray, hidden: np.ndarray | None, mixed: bool = False) -> int:
        """The next token from the model's logits (V,), mixed with the kNN distribution when on."""
        return self.s.sampler.sample(self.next_logits(logits, hidden, mixed))

    def next_logits(self, logits: np.ndarray, hidden: np.ndarray | None, mixed: bool = False) -> np.ndarray:
        """The distribution the next token is chosen from: the model's (V,), or its kNN-LM mixture when on."""
        return self.knn.mix_logits(logits, hidden) if self.knn is not None and not mixed else logits

    def draft_after(self, token: int, proposal: Proposal | None) -> tuple[list[int], bool]:
        """Tokens that may follow *token*: a chunk the matcher was not sure of, else an n-gram."""
        room = self.s.max_tokens - (self.stats.tokens - self._heal_steps) - 1
        lead = self._lead_word is not None and not self.past_cursor()   # the next step asks for the value after it
        if self.drafter is None or room <= 0 or self._typed_left or lead or (
                self.s.first_rank is not None and self._heal_steps == self.stats.tokens + 1):
            return [], False          # (a draft is checked without heal's mask, and without an alternative's rank)
        if proposal is not None:
            chunk = self._continuation_tokens(proposal)
            k = self._draft_len.next("chunk")
            if len(chunk) > 1 and chunk[0] == token and k > 0:
                self._draft_kind = "chunk"
                return chunk[1:1 + min(room, k)], True
        self._draft_kind = self.drafter.order(extra=[token])
        if not self._draft_kind:
            return [], False
        return self.drafter.draft(min(self._draft_len.next(self._draft_kind), room), extra=[token]), False

    def decode_step(self, commit: _Commit) -> tuple[_State, list[int]]:
        """The step's one llama_decode: the tokens it commits, then their draft (if any) in the same batch.

        Returns the state after the last token kept and the draft tokens the
        model confirmed (:meth:`verify`; rejected ones leave the cache).  Without
        a draft, one output row even after a chunk: each row costs an LM-head
        product (a fifth of this model's work), so the local vector makes do with
        the chunk's last state and the states before it.
        """
        batch = commit.tokens + commit.draft
        rows = range(len(commit.tokens) - 1, len(batch)) if commit.draft else [len(batch) - 1]
        out = self.rt.eval(batch, outputs=rows, hidden=self._hidden, copy=False)  # logits (r, V), hidden (r, d)
        self.stats.forward_passes += 1
        confirmed = self.verify(commit.draft, out, commit.draft_from_chunk) if commit.draft else []
        last = len(confirmed)                          # out's row after the last token kept
        if self._hidden:
            self._recent_hidden = local_tail(self._recent_hidden + list(out.hidden[: last + 1]))
        return self._state(out.logits[last]), confirmed

    def verify(self, draft: list[int], out: Outputs, from_chunk: bool) -> list[int]:
        """The prefix of *draft* the model itself would choose, from the rows *out* of its check.

        Row i of the outputs (shape (1 + k, V)) predicts what follows draft[i - 1]
        (row 0: the token before the draft); the model's choice there is sampled
        exactly as plain decoding would, so the output is unchanged -- only
        faster when drafts are right.
        """
        confirmed = []
        for i, guess in enumerate(draft):
            choice = self.choose(out.logits[i], out.hidden[i] if self._hidden else None)
            if choice != guess or self.rt.is_eog(choice):
                self._pending = choice      # the next step starts from this choice (or ends at EOS)
                break
            confirmed.append(guess)
        n_ok = len(confirmed)
        self.rt.truncate(len(self.rt.tokens) - (len(draft) - n_ok))    # drop rejected drafts from the cache
        self.stats.drafted += len(draft)
        self.stats.draft_accepted += n_ok
        if from_chunk:
            self.stats.chunk_drafted += len(draft)
            self.stats.chunk_draft_accepted += n_ok
        self._draft_len.update(len(draft), n_ok, self._draft_kind)
        return confirmed

    def piece_for(self, tokens: list[int]) -> Piece:
        self.stats.tokens += len(tokens)
        text = self._utf8.feed(b"".join(self.rt.piece(t) for t in tokens))
        self._text += text
        if self._hidden_chars:              # the user's own letters, spelled again (heal): not shown
            mine = min(self._hidden_chars, len(text))
            text, self._hidden_chars = text[mine:], self._hidden_chars - mine
        self._model_wrote = self._model_wrote or any(ch.isalnum() for ch in text)
        if text.strip():
            self._line_kind = None
        if self._word_done:
            # The word the user was typing is finished ("cont" + "act"): the place where the user's own
            # chunks may go, and the model's words are counted from, is after it, as if they had typed it.
            self._prompt_chars, self._word_done = len(self._text), False
        return Piece(text)

    def guard(self, piece: Piece) -> list[Piece]:
        """Model text that may be the start of an invented detail waits; a chunk releases it."""
        if self._guard is None:
            return [piece]
        if piece.source == "chunk":
            held = self._guard.release(piece.text if piece.kind in REPEATABLE_KINDS else None)
            if not held and self._guard.shown_space and piece.text.startswith(" "):
                piece = replace(piece, text=piece.text[1:])     # the dropped "1" took no space with it
            return ([Piece(held)] if held else []) + [piece]
        text = self._guard.feed(piece.text)
        return [replace(piece, text=text)] if text else []

    # ------------------------------------------------------------ helpers

    def _state(self, logits: np.ndarray) -> _State:
        if not self._hidden:
            return _State(logits, None, None)
        return _State(logits, self._recent_hidden[-1], local_mean(np.asarray(self._recent_hidden)))

    def _continuation_tokens(self, proposal: Proposal) -> list[int]:
        """Tokenize the chunk after the actual text, so BPE joins it as it would here."""
        if proposal.rest_of:                    # the rest of a value begun by hand: exactly its own characters
            return list(proposal.tokens)
        if self._text[-1:] in (" ", "\t"):     # the text already ends in a space: no second one before the chunk
            return self.rt.tokenize(proposal.text.lstrip(" "), add_special=False) or list(proposal.tokens)
        if self._line_break and not proposal.text.startswith("\n"):
            text = proposal.text.lstrip(" ")
            return self.rt.tokenize("\n", add_special=False) + self._encoder.continuation(
                self._text + "\n", text, self.rt.tokenize(text, add_special=False))
        return self._encoder.continuation(self._text, proposal.text, proposal.tokens)

    def _flush(self, ended: bool = False) -> Iterator[Piece]:
        """What is still held at the end; nothing past a stop sequence or an invented detail."""
        if ended:
            return
        tail = self._utf8.flush()
        held = self.guard(Piece(tail)) if tail else []
        if self._guard is not None:
            rest = self._guard.flush()
            held += [Piece(rest)] if rest else []
        held, repeated = self._repeats.feed_all(held)
        if repeated:
            return
        held += self._repeats.release()
        pieces, _ = self._stops.feed_all(held)
        yield from pieces
        yield from self._stops.flush()
