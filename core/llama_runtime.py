"""The one thin module that talks to llama.cpp (through llama-cpp-python's
low-level bindings).

A :class:`LlamaRuntime` owns a model and one context (sequence 0), plus a small
side context over the same weights for short reads that must not disturb the
main cache (:meth:`LlamaRuntime.aside`: library contexts).  It keeps
the list of tokens whose keys and values sit in the KV cache, so a caller can
ask for a new token list and pay only for the tokens after the longest shared
prefix.  :meth:`LlamaRuntime.eval` returns, for the positions asked, the
next-token logits and the final hidden state (the paper's context vector
``f_theta``) from the same ``llama_decode``.

>>> rt = LlamaRuntime(bundled_model_path())            # doctest: +SKIP
>>> out = rt.sync(rt.tokenize("Dear Anna,"))           # doctest: +SKIP
>>> out.logits.shape, out.hidden.shape                 # doctest: +SKIP
((1, 49152), (1, 576))

One owner of the KV state
-------------------------
Only this module changes the KV cache and its bookkeeping: the llama.cpp
memory of sequence 0, :attr:`LlamaRuntime.tokens` (what the cache holds,
position by position) and :attr:`LlamaRuntime.dropped` (positions whose cells
anchor reduction removed).  Both are read-only from outside (a tuple and a
frozenset); other modules change the cache through ``eval``, ``sync``,
``truncate``, ``peek``, ``reset`` and ``drop``.  tests/test_architecture.py
fails on a module that assigns to them or calls llama.cpp's decode, batch or
KV-memory functions itself.

Bit-exactness contract
----------------------
What Chunkwise relies on from llama.cpp to make plain decoding, drafts and
chunk insertion lossless, stated here once; other modules refer to this
section.

What holds:

1. *The plain path is llama-cpp-python's.*  ``eval`` and ``sync`` with
   ``hidden=False`` (and ``peek``) decode as llama-cpp-python's ``Llama`` does:
   the same context parameters (embeddings off, flash attention off,
   ``n_ubatch = n_batch``) and the same decodes (a prompt in ``n_batch``
   slices, then one token per decode).  Greedy decoding on it is
   bit-identical to ``Llama.create_completion``.
2. *Exact batches.*  A decode of k <= ``batch_profile().exact`` tokens
   returns, row for row, the very logits and hidden states of k one-token
   decodes.  llama.cpp does not promise this (llamafile's sgemm CPU kernels,
   on by default, sum a batch of 3+ tokens in another order), so it is
   measured once per runtime, hidden states off and on
   (core/batch_profile.py).
3. *Longer batches are equal within rounding.*  A chunk decoded in one
   batch, a prompt's prefill, a prefix ``sync`` reuses and the head
   ``_segments`` decodes apart give the logits and hidden states of going one
   token at a time within :data:`BATCH_TOLERANCE` (absolute), so the same
   greedy choices except in near-ties.  The same holds for hidden states
   ``sync(..., reuse_hidden=True)`` takes as read by an earlier decode (a
   generation step, or the previous prompt's batch) instead of evaluating
   them again, and for the last token's logits ``sync`` takes as read by an
   earlier decode where the cache holds the whole prompt (``_logits_at``,
   kept with their mode, point 4).  On a build without llamafile's
   kernels (the README's install: ``exact`` is 8, the largest probed) they
   are bit-identical too.
4. *One mode at a time.*  Outputs are compared only within one mode, hidden
   states off or on: with them on llama.cpp computes outputs for every token
   of a decode, and nothing here promises equal bits across the modes.

What the runtime does to keep it: the context parameters above; with
``hidden=False`` the plain ``n_batch`` slices and embeddings off
(``_plain_segments``); with ``hidden=True`` embeddings on only for decodes
that return outputs, and a head of 32+ tokens with none asked decoded apart
(``_segments``); a cache with holes (anchor reduction) reused only up to its
first hole, so a request that did not ask for reduction sees every token
(``sync``); a memory that cannot drop a tail cleared and its kept tokens
decoded again (``truncate``).

What callers may rely on:

* a decoder with neither chunks nor kNN takes the plain path (``Engine.stream``
  hands it no matcher when chunks are off or the store is empty), so its text
  is llama-cpp-python's: tests/test_generation.py::test_empty_store_equals_plain_greedy_decoding;
* a draft of at most ``exact - 1`` tokens after the sampled one (the default
  ``draft_cap``) is checked in an exact batch, so drafting is lossless:
  tests/test_runtime.py::test_batches_up_to_the_exact_size_are_single_steps_bit_for_bit,
  tests/test_drafting.py::test_drafting_is_lossless_on_this_build;
* a chunk inserted in one decode leaves the model where stepping through its
  tokens one by one would (3.), and greedy choices after it are the same:
  tests/test_runtime.py::test_a_chunk_in_one_decode_is_the_chunk_token_by_token.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from .batch_profile import BatchProfile, measure as measure_batch_profile
from .errors import ModelError
from .memory_budget import check_context, kv_cache_bytes

HIDDEN_KEPT = 64         # hidden states kept for sync's reuse_hidden: the newest positions read
LOGITS_KEPT = 8          # next-token logits kept for sync: the newest positions read (a vocabulary row each)
BATCH_TOLERANCE = 0.05   # contract point 3: |one batch - one token at a time|, logits and hidden states
ASIDE_CTX = 512          # tokens the side context (LlamaRuntime.aside) holds: library contexts are a line or two

_backend_lock = threading.Lock()


def leave_cores_to_llama() -> None:
    """numpy's BLAS gets one thread from now on, in this whole process.

    llama.cpp's threads take the cores; OpenBLAS's own threads, once woken by a small product
    (whitening a state, the slot classifier, the kNN-LM), keep spinning for a while after it and
    take them back: with a populated store, one-token decodes p50 / p90 21 / 61 ms against 11 / 13 ms
    with one BLAS thread, the first suggested token 55 / 111 against 28 / 43 ms (bench/first_token.py,
    docs/benchmarks.md "numpy's threads").  The products on that path are a few hundred wide.
    threadpoolctl rather than OPENBLAS_NUM_THREADS: the variable only counts before numpy is first
    imported, which a library cannot promise.
    """
    threadpool_limits(1, user_api="blas")


_backend_ready = False
_log_callback = None  # keep a reference: llama.cpp holds the C pointer
_verbose_logs = False


def _llama():
    try:
        import llama_cpp  # noqa: WPS433 (imported lazily: heavy, and absent in some tools)
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ModelError(f"llama-cpp-python is not installed or failed to load ({exc}).") from None
    return llama_cpp


def _init_backend(verbose: bool) -> None:
    """Initialise llama.cpp once, and route its log through a filter."""
    global _backend_ready, _log_callback, _verbose_logs
    lib = _llama()
    with _backend_lock:
        _verbose_logs = verbose
        if _backend_ready:
            return

        @lib.llama_log_callback
        def _on_log(level, text, user_data):  # pragma: no cover - C callback
            if _verbose_logs and text:
                import sys

                sys.stderr.write(text.decode("utf-8", "replace"))

        _log_callback = _on_log
        lib.llama_log_set(_log_callback, ctypes.c_void_p(0))
        lib.llama_backend_init()
        _backend_ready = True


def check_gguf(path: Path) -> None:
    """Raise ModelError with a clear message unless *path* looks like a GGUF file."""
    if not path.exists():
        raise ModelError(f"Model file not found: {path}")
    if path.is_dir():
        raise ModelError(f"Model path is a folder, not a GGUF file: {path}")
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise ModelError(f"Model file cannot be read: {path} ({exc.strerror})") from None
    if magic != b"GGUF":
        raise ModelError(f"Not a GGUF model file: {path} (expected a .gguf file for llama.cpp)")


def quantize(source: Path, target: Path, qtype: str, n_threads: int | None = None) -> None:
    """Write *source* requantised to *qtype* ("Q8_0", "Q4_0", "IQ4_NL", "Q4_K_M"...) into *target*.

    llama.cpp's own quantiser (``llama_model_quantize``), allowed to requantise an already
    quantised file: the bundled model ships only as Q4_1.  Raises ModelError on failure.
    """
    lib = _llama()
    ftype = getattr(lib, f"LLAMA_FTYPE_MOSTLY_{qtype.upper()}", None)
    if ftype is None:
        raise ModelError(f"This llama.cpp cannot quantise to {qtype}.")
    check_gguf(Path(source))
    _init_backend(False)
    params = lib.llama_model_quantize_default_params()
    params.ftype = ftype
    params.allow_requantize = True
    params.nthread = int(n_threads or 0)
    if lib.llama_model_quantize(str(source).encode(), str(target).encode(), params) != 0:
        raise ModelError(f"llama.cpp could not quantise {Path(source).name} to {qtype}.")


def model_identity(path: Path) -> str:
    """A stable identity for a model file: name, size and a hash of its head and tail.

    Hashing 8 MiB instead of the whole file keeps start-up fast for
    multi-gigabyte models while still telling different files apart.
    """
    size = path.stat().st_size
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        h.update(fh.read(4 << 20))
        if size > 8 << 20:
            fh.seek(size - (4 << 20))
            h.update(fh.read())
    return f"{path.name}:{size}:{h.hexdigest()[:16]}"


@dataclass
class Outputs:
    """What one evaluation returns, for the positions asked.

    ``logits``: (n_out, n_vocab) float32, next-token scores after each position.
    ``hidden``: (n_out, n_embd) float32, the final hidden state there.
    ``positions``: (n_out,) absolute token positions these rows belong to.

    Except from ``sync(..., reuse_hidden=True)``: there ``hidden`` has a row for each position
    asked, the earlier ones as read before, while ``logits`` and ``positions`` cover only the
    positions evaluated now (the last of them the last token's), so rows of the two do not pair.
    """

    logits: np.ndarray
    hidden: np.ndarray
    positions: np.ndarray


class LlamaRuntime:
    """Owner of one llama.cpp model + context (and its side context, :meth:`aside`); all calls from
    one thread at a time."""

    def __init__(self, model_path: str | os.PathLike, n_ctx: int = 2048, n_threads: int | None = None,
                 n_batch: int = 512, verbose: bool = False):
        self.model_path = Path(model_path)
        check_gguf(self.model_path)
        leave_cores_to_llama()
        lib = self._lib = _llama()
        _init_backend(verbose)
        mparams = lib.llama_model_default_params()
        self.model = lib.llama_model_load_from_file(str(self.model_path).encode(), mparams)
        if not self.model:
            raise ModelError(
                f"llama.cpp could not load {self.model_path.name}: the file is truncated, corrupted, "
                "or of an architecture this llama.cpp does not know."
            )
        self.vocab = lib.llama_model_get_vocab(self.model)
        self.n_vocab = lib.llama_vocab_n_tokens(self.vocab)
        self.n_embd = lib.llama_model_n_embd(self.model)
        self.n_ctx_train = lib.llama_model_n_ctx_train(self.model)
        self._check_memory(int(n_ctx))
        self.identity = model_identity(self.model_path)
        self.name = self.model_path.name
        self._eog_cache: dict[int, bool] = {}
        self._piece_cache: dict[int, bytes] = {}
        self._owns_model = True
        self._aside: LlamaRuntime | None = None
        self._open_context(int(n_ctx), int(n_batch), n_threads or max(1, min(os.cpu_count() or 1, 8)))

    def _open_context(self, n_ctx: int, n_batch: int, threads: int) -> None:
        """Create this runtime's llama.cpp context over ``self.model``, with an empty cache."""
        lib = self._lib
        cparams = lib.llama_context_default_params()
        cparams.n_ctx = n_ctx
        cparams.n_batch = n_batch
        cparams.n_ubatch = n_batch
        cparams.n_threads = threads
        cparams.n_threads_batch = threads
        cparams.embeddings = True
        if hasattr(lib, "LLAMA_FLASH_ATTN_TYPE_DISABLED"):
            # As llama-cpp-python's Llama does by default: same kernels, same numbers.
            cparams.flash_attn_type = lib.LLAMA_FLASH_ATTN_TYPE_DISABLED
        cparams.pooling_type = lib.LLAMA_POOLING_TYPE_NONE
        self.ctx = lib.llama_init_from_model(self.model, cparams)
        if not self.ctx:
            if self._owns_model:
                lib.llama_model_free(self.model)
                self.model = None
            raise ModelError(
                f"llama.cpp could not create a context of {n_ctx} tokens for {self.model_path.name} "
                "(not enough memory?). Try a smaller context size."
            )
        self.n_ctx = lib.llama_n_ctx(self.ctx)
        self.n_batch = n_batch
        self.n_threads = threads
        self._batch = lib.llama_batch_init(self.n_batch, 0, 1)
        self._memory = lib.llama_get_memory(self.ctx)
        self._embeddings_on = True
        self._tokens: tuple[int, ...] = ()  # what the KV cache holds, position by position
        self._dropped: frozenset[int] = frozenset()  # positions whose cells anchor reduction removed (holes)
        # The final hidden state read at each of the last cached positions, where one was (sync's
        # reuse_hidden): position -> (d,) row.  Only the newest HIDDEN_KEPT are kept (a prefill needs
        # the local window's few), so a long context or a wide model costs a few hundred KB at most.
        self._hidden_at: dict[int, np.ndarray] = {}
        # The next-token logits read at each of the last few cached positions, and whether hidden states
        # were on for that decode (contract point 4): position -> (hidden, (V,) row).  A prompt whose
        # every token the cache holds, its last one read already (a word healed back to the token the
        # last suggestion spelled, a suggestion taken whole with Tab), then needs no decode at all.
        self._logits_at: dict[int, tuple[bool, np.ndarray]] = {}
        self._batch_profile: BatchProfile | None = None
        self.decode_calls = 0
        self.evaluated_tokens = 0  # tokens sent through llama_decode, for KV-reuse checks

    def aside(self) -> "LlamaRuntime":
        """A second, small context over the same model, for reading short texts on the side.

        Reading a library context (core/encoding.py) in the main context replaced the draft in its
        cache, so the next suggestion read the whole draft again (a 53-token draft: 356 ms instead of
        51 ms for its next step here, bench/library_update.py).  The side context keeps its own cache;
        the model's weights are shared.  The same kernel parameters as the main one (embeddings,
        attention, threads), with a smaller cache and batch, give the same numbers for a short text
        (tests/test_runtime.py::test_the_side_context_reads_as_the_main_one).  Made on first use,
        closed with this runtime; a :class:`ModelError` if the runtime is closed or it cannot be made.

        >>> rt.aside().sync(rt.tokenize("My email is"), last=3).hidden.shape     # doctest: +SKIP
        (3, 576)
        """
        if self._aside is None:
            if not getattr(self, "model", None) or not getattr(self, "ctx", None):
                raise ModelError("The model is closed.")
            side = object.__new__(LlamaRuntime)
            side.__dict__.update({k: getattr(self, k) for k in (
                "model_path", "_lib", "model", "vocab", "n_vocab", "n_embd", "n_ctx_train", "identity", "name",
                "_eog_cache", "_piece_cache")})
            side._owns_model, side._aside = False, None
            side._open_context(min(ASIDE_CTX, self.n_ctx), min(ASIDE_CTX, self.n_batch), self.n_threads)
            self._aside = side
        return self._aside

    # ------------------------------------------------------------ lifetime

    def kv_bytes(self, n_ctx: int) -> int:
        """Memory the KV cache of *n_ctx* tokens takes (f16 keys and values, every layer)."""
        lib, m = self._lib, self.model
        return kv_cache_bytes(lib.llama_model_n_layer(m), lib.llama_model_n_embd(m), lib.llama_model_n_head(m),
                              lib.llama_model_n_head_kv(m), n_ctx)

    def _check_memory(self, n_ctx: int) -> None:
        """Refuse a context whose cache cannot fit, before llama.cpp tries (and swaps, or dies)."""
        try:
            check_context(n_ctx, self.kv_bytes(n_ctx), self.model_path.name)
        except ModelError:
            self._lib.llama_model_free(self.model)
            self.model = None
            raise

    def batch_profile(self, max_n: int = 8) -> BatchProfile:
        """How this build decodes batches: the largest exact batch (contract point 2), and what each
        size costs.  Measured once (core/batch_profile.py; the KV cache is cleared), then kept."""
        if self._batch_profile is None:
            self._batch_profile = measure_batch_profile(self, max_n)
        return self._batch_profile

    def close(self) -> None:
        lib = self._lib
        if getattr(self, "_aside", None) is not None:
            self._aside.close()              # its context before the model it uses
            self._aside = None
        if getattr(self, "_batch", None) is not None:
            lib.llama_batch_free(self._batch)
            self._batch = None
        if getattr(self, "ctx", None):
            lib.llama_free(self.ctx)
            self.ctx = None
        if getattr(self, "model", None):
            if getattr(self, "_owns_model", True):
                lib.llama_model_free(self.model)
            self.model = None

    def __del__(self):  # pragma: no cover - best effort at interpreter exit
        try:
            self.close()
        except Exception:
            pass

    # ------------------------------------------------------------ text <-> tokens

    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = False) -> list[int]:
        """Token ids of *text*, as llama-cpp-python's ``Llama.tokenize`` makes them."""
        data = text.encode("utf-8")
        cap = len(data) + 16
        buf = (ctypes.c_int32 * cap)()
        n = self._lib.llama_tokenize(self.vocab, data, len(data), buf, cap, add_special, parse_special)
        if n < 0:
            cap = -n
            buf = (ctypes.c_int32 * cap)()
            n = self._lib.llama_tokenize(self.vocab, data, len(data), buf, cap, add_special, parse_special)
        return list(buf[:n])

    def piece(self, token: int) -> bytes:
        """The bytes one token stands for (special tokens render as nothing)."""
        cached = self._piece_cache.get(token)
        if cached is not None:
            return cached
        buf = ctypes.create_string_buffer(64)
        n = self._lib.llama_token_to_piece(self.vocab, token, buf, 64, 0, False)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = self._lib.llama_token_to_piece(self.vocab, token, buf, -n, 0, False)
        out = buf.raw[:n]
        self._piece_cache[token] = out
        return out

    def detokenize(self, tokens: Sequence[int]) -> str:
        return b"".join(self.piece(t) for t in tokens).decode("utf-8", "replace")

    def is_eog(self, token: int) -> bool:
        cached = self._eog_cache.get(token)
        if cached is None:
            cached = self._eog_cache[token] = bool(self._lib.llama_vocab_is_eog(self.vocab, token))
        return cached

    @property
    def bos(self) -> int:
        return self._lib.llama_vocab_bos(self.vocab)

    def chat_prompt(self, messages: Sequence[dict], add_assistant: bool = True) -> str:
        """Render *messages* through the model's own chat template."""
        lib = self._lib
        tmpl = lib.llama_model_chat_template(self.model, None)
        if not tmpl:
            raise ModelError(f"{self.name} has no chat template; use plain continuation instead.")
        arr = (lib.llama_chat_message * len(messages))()
        keep = []
        for i, m in enumerate(messages):
            role, content = m["role"].encode(), m["content"].encode()
            keep += [role, content]
            arr[i].role, arr[i].content = role, content
        size = 4096 + sum(len(k) for k in keep) * 2
        buf = ctypes.create_string_buffer(size)
        n = lib.llama_chat_apply_template(tmpl, arr, len(messages), add_assistant, buf, size)
        if n > size:
            buf = ctypes.create_string_buffer(n)
            n = lib.llama_chat_apply_template(tmpl, arr, len(messages), add_assistant, buf, n)
        if n < 0:
            raise ModelError(f"llama.cpp does not support the chat template of {self.name}.")
        return buf.raw[:n].decode("utf-8", "replace")

    # ------------------------------------------------------------ KV cache

    @property
    def tokens(self) -> tuple[int, ...]:
        """What the KV cache holds, position by position (read-only: change it through this class)."""
        return self._tokens

    @property
    def dropped(self) -> frozenset[int]:
        """Positions whose cells anchor reduction removed (holes); read-only, see :meth:`drop`."""
        return self._dropped

    def truncate(self, n: int) -> None:
        """Forget cached tokens from position *n* on."""
        if n < len(self._tokens):
            ok = self._lib.llama_memory_seq_rm(self._memory, 0, n, -1)
            if not ok:
                # A model whose memory cannot drop a tail (a recurrent state): clear it and decode the
                # kept tokens again, so what follows still sees its context (clearing alone went on at
                # position 0 with none).  Costs one prefill of the kept tokens.
                kept = self._tokens[:n]
                self.reset()
                if kept:
                    self.eval(kept, outputs="last", hidden=False)
                return
            self._tokens = self._tokens[:n]
            self._dropped = frozenset(p for p in self._dropped if p < n)
            self._hidden_at = {p: row for p, row in self._hidden_at.items() if p < n}
            self._logits_at = {p: row for p, row in self._logits_at.items() if p < n}

    def peek(self, tokens: Sequence[int]) -> np.ndarray:
        """Log-probabilities (V,) of the token after *tokens* appended to the cache; the cache is left as it was.

        A what-if evaluation: matching asks the model how the text would go on
        ("... (that is my" or "... (that is her") without changing the story.
        """
        n = len(self._tokens)
        try:
            logits = self.eval(tokens, outputs="last", hidden=False).logits[-1].astype(np.float64)
        finally:
            self.truncate(n)
        logits -= logits.max()
        return logits - np.log(np.exp(logits).sum())

    def reset(self) -> None:
        self._lib.llama_memory_clear(self._memory, True)
        self._tokens = ()
        self._dropped = frozenset()
        self._hidden_at = {}
        self._logits_at = {}

    @property
    def kv_tokens_kept(self) -> int:
        """Tokens whose keys and values the cache keeps: positions evaluated minus those anchor
        reduction removed (this class's bookkeeping, not a count asked of llama.cpp)."""
        return len(self._tokens) - len(self._dropped)

    def drop(self, positions: Sequence[int]) -> int:
        """Remove these positions' keys and values; later tokens keep their positions.

        Used by anchor-based KV reduction: the positions stay taken (the next
        token goes after the last one), attention simply no longer sees them.
        Returns how many cells were removed.
        """
        todo = sorted(set(positions) - self._dropped)
        removed = 0
        start = prev = None
        for p in todo + [None]:
            if p is not None and prev is not None and p == prev + 1:
                prev = p
                continue
            if start is not None:
                if self._lib.llama_memory_seq_rm(self._memory, 0, start, prev + 1):
                    self._dropped |= frozenset(range(start, prev + 1))
                    removed += prev + 1 - start
            start = prev = p
        return removed

    def common_prefix(self, tokens: Sequence[int]) -> int:
        n = min(len(tokens), len(self._tokens))
        cached = self._tokens
        i = 0
        while i < n and cached[i] == tokens[i]:
            i += 1
        return i

    def sync(self, tokens: Sequence[int], last: int = 1, hidden: bool = True, copy: bool = True,
             reuse_hidden: bool = False) -> Outputs:
        """Make the cache hold exactly *tokens*; return outputs for the last *last* of them.

        Only the tokens after the longest prefix shared with the cache are
        evaluated (at least the last *last*, to get their outputs).

        *reuse_hidden* (with *hidden*): the hidden states of the last *last* positions that the cache
        already holds, and that were read when they were evaluated, are taken as read then instead
        of evaluating those tokens again; only the last token is always evaluated.  ``hidden`` then
        still has *last* rows, while ``logits`` (and ``positions``) has rows for the evaluated
        positions only, the last of them the last token's.  A typing pause adds a word or two to a
        draft whose last tokens the previous suggestion read: without this, the three rows of the
        local vector (core/encoding.py) cost a batch of three every time (bench/decoding.py
        --editor-path: prefill a median 22.0 ms without this, 9.6 ms with it, 9.5 ms for plain decoding).
        """
        if not tokens:
            raise ValueError("sync needs at least one token")
        if len(tokens) > self.n_ctx:
            raise ModelError(f"{len(tokens)} tokens do not fit the context window of {self.n_ctx}.")
        last = max(1, min(last, len(tokens)))
        shared = self.common_prefix(tokens)
        if self._dropped:
            # A cache with holes (anchor reduction) is only reused up to its first
            # hole: llama.cpp needs each new token right after the last one kept,
            # and a request that did not ask for reduction must see everything.
            shared = min(shared, min(self._dropped))
        first = len(tokens) - last                    # the first position whose outputs are asked
        read = self._read_already(tokens, shared, first, hidden, reuse_hidden)
        if read is not None:
            return read
        keep, known = min(shared, first), []
        if reuse_hidden and hidden:
            reused = min(shared, len(tokens) - 1)
            if reused > first and all(p in self._hidden_at for p in range(first, reused)):
                keep, known = reused, [self._hidden_at[p] for p in range(first, reused)]   # as read before
        self.truncate(keep)                           # (a memory that cannot drop a tail forgets them here)
        n = len(tokens) - keep
        out = self.eval(tokens[keep:], outputs=range(max(0, n - last), n), hidden=hidden, copy=copy)
        if known:
            out = Outputs(out.logits, np.vstack([np.stack(known), out.hidden]), out.positions)
        return out

    def _read_already(self, tokens: Sequence[int], shared: int, first: int, hidden: bool,
                      reuse_hidden: bool) -> Outputs | None:
        """sync's outputs without a decode, where the cache holds every token of *tokens* and their
        last position's logits were read in this mode (and, with *hidden*, the hidden states of
        positions *first*.. too); else None.  Contract point 3: the same rows as evaluating the last
        token again (bit for bit on the README's build, within rounding on one with llamafile's kernels).
        """
        end = len(tokens) - 1
        memo = self._logits_at.get(end)
        if shared < len(tokens) or memo is None or memo[0] != hidden:
            return None
        if first < end and not (hidden and reuse_hidden):
            return None                                  # more than one logits row asked
        rows = [self._hidden_at.get(p) for p in range(first, end + 1)] if hidden else []
        if any(r is None for r in rows):
            return None
        self.truncate(len(tokens))
        hidden_arr = np.stack(rows) if hidden else np.empty((1, 0), np.float32)
        return Outputs(memo[1][None, :].copy(), hidden_arr, np.asarray([end]))

    # ------------------------------------------------------------ evaluation

    def eval(self, tokens: Sequence[int], outputs: str | Sequence[int] = "last", hidden: bool = True,
             copy: bool = True) -> Outputs:
        """Append *tokens* to the cache in as few decodes as the batch size allows.

        *outputs*: ``"last"``, ``"all"``, or indices into *tokens* whose
        logits (and, with *hidden*, final hidden states) to return.  Rows come
        in ascending order.  ``hidden=False`` is the plain path of the
        bit-exactness contract (point 1); ``Outputs.hidden`` is then empty.
        ``copy=False`` returns a single logits row as a view into llama.cpp's
        buffer (no 200 KB copy per token), valid until the next decode.
        """
        n = len(tokens)
        if n == 0:
            raise ValueError("eval needs at least one token")
        if len(self._tokens) + n > self.n_ctx:
            raise ModelError(f"The context window of {self.n_ctx} tokens is full.")
        if outputs == "last":
            want = [n - 1]
        elif outputs == "all":
            want = list(range(n))
        else:
            want = sorted(set(int(i) for i in outputs))
        logits_rows, hidden_rows, pos_rows = [], [], []
        memo = set(want[-LOGITS_KEPT:]) if LOGITS_KEPT else set()     # the rows worth keeping: the newest
        segments = self._segments(n, want) if hidden else self._plain_segments(n)
        keep_views = not copy and len(segments) == 1   # a later decode would overwrite the buffer
        for start, end in segments:
            local = [i - start for i in want if start <= i < end]
            self._decode(tokens[start:end], local, hidden)
            for i in local:
                row = self._row(self._lib.llama_get_logits_ith, i, self.n_vocab)
                logits_rows.append(row if keep_views else row.copy())
                pos = len(self._tokens) - (end - start) + i
                if start + i in memo:
                    self._keep_logits(pos, row, hidden)
                if hidden:
                    hidden_rows.append(self._row(self._lib.llama_get_embeddings_ith, i, self.n_embd).copy())
                    self._keep_hidden(pos, hidden_rows[-1])
                pos_rows.append(pos)
        hidden_arr = np.stack(hidden_rows) if hidden else np.empty((len(logits_rows), 0), np.float32)
        logits = logits_rows[0][None, :] if len(logits_rows) == 1 else np.stack(logits_rows)
        return Outputs(logits, hidden_arr, np.asarray(pos_rows))

    def _keep_hidden(self, pos: int, row: np.ndarray) -> None:
        """Remember the hidden state read at *pos* (sync's reuse_hidden); only the newest HIDDEN_KEPT."""
        self._hidden_at[pos] = row
        if len(self._hidden_at) > 2 * HIDDEN_KEPT:            # pruned now and then, not at every row
            newest = sorted(self._hidden_at)[-HIDDEN_KEPT:]
            self._hidden_at = {p: self._hidden_at[p] for p in newest}

    def _keep_logits(self, pos: int, row: np.ndarray, hidden: bool) -> None:
        """Remember the logits read at *pos* (a copy, read-only) and their mode; only the newest LOGITS_KEPT."""
        kept = row.copy()
        kept.flags.writeable = False
        self._logits_at[pos] = (hidden, kept)
        if len(self._logits_at) > LOGITS_KEPT:
            del self._logits_at[min(self._logits_at)]

    def _plain_segments(self, n: int) -> list[tuple[int, int]]:
        return [(s, min(n, s + self.n_batch)) for s in range(0, n, self.n_batch)]

    def _segments(self, n: int, want: Sequence[int]) -> list[tuple[int, int]]:
        """Split n tokens into decodes of at most n_batch.

        With embeddings on, llama.cpp computes outputs for every token of a
        decode, so a long head with no outputs asked (a prompt's prefill)
        goes in decodes of its own, with embeddings off.
        """
        cuts, start = [], 0
        first = want[0] if want else n
        if first >= 32:
            while start < first:
                end = min(first, start + self.n_batch)
                cuts.append((start, end))
                start = end
        while start < n:
            end = min(n, start + self.n_batch)
            cuts.append((start, end))
            start = end
        return cuts

    def _row(self, getter, i: int, width: int) -> np.ndarray:
        ptr = getter(self.ctx, i)
        if not ptr:
            raise ModelError("llama.cpp returned no output for a requested position.")
        return np.ctypeslib.as_array(ptr, shape=(width,))

    def _decode(self, tokens: Sequence[int], outputs: Sequence[int], hidden: bool = True) -> None:
        """One ``llama_decode`` of *tokens* at the next positions."""
        batch, base = self._batch, len(self._tokens)
        flags = set(outputs)
        # Hidden states are only read where outputs are asked; without any
        # (bulk prefill) switch embeddings off so llama.cpp skips that work.
        self._set_embeddings(hidden and bool(flags))
        for i, tok in enumerate(tokens):
            batch.token[i] = tok
            batch.pos[i] = base + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = i in flags
        batch.n_tokens = len(tokens)
        rc = self._lib.llama_decode(self.ctx, batch)
        self.decode_calls += 1
        self.evaluated_tokens += len(tokens)
        if rc != 0:
            raise ModelError(f"llama_decode failed (code {rc}): the context may be full or memory short.")
        self._tokens += tuple(int(t) for t in tokens)

    def _set_embeddings(self, on: bool) -> None:
        if on != self._embeddings_on:
            self._lib.llama_set_embeddings(self.ctx, on)
            self._embeddings_on = on
