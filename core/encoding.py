"""Turning chunks and their contexts into what matching needs, for one model.

For each (context, chunk) pair (paper section 4.1):

* the chunk is tokenized as a continuation of its context, so BPE
  boundaries come out as they will in generated text;
* the *entry token* is the context's last token;
* the *context vector* is the model's final hidden state after the entry
  token (the state that predicts the chunk's first token), and the *local
  vector* the mean of the states over the context's last few tokens.

The raw hidden states of a 135M model are strongly anisotropic: every
state shares a few large directions, so unrelated texts score cosine 0.7-0.9
(measured: docs/matching.md).  :class:`ModelStats` whitens them with the
mean and shrunk covariance of the model's states over ordinary email text
(``core/data/background_emails.txt``), computed once per model and kept in
the store.

>>> join_context("Call me at", "(555) 123-4567")
'Call me at (555) 123-4567'
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .errors import ModelError
from .llama_runtime import LlamaRuntime
from .paths import shipped_for_model
from .store import Encoding, PendingEncoding

LOCAL_WINDOW = 3          # states averaged into the local vector (local_mean)
SHRINKAGE = 0.05          # covariance shrinkage toward a scaled identity
MAX_BACKGROUND = 4000     # background positions kept for calibration
BACKGROUND_STRIDE = 2     # every 2nd paragraph: ~1,900 positions, half the start-up cost
BACKGROUND_FILE = Path(__file__).resolve().parent / "data" / "background_emails.txt"


STATS_VERSION = 3
_NO_SPACE_BEFORE = set(",.;:!?)]}'\"")


# ------------------------------------------------------------ the local vector: defined here only
# Everything that averages hidden states into a local vector goes through these, so a change of
# LOCAL_WINDOW reaches the encoder, the decoder, the background statistics and the benches alike
# (tests/test_encoding.py fails on a hand-made mean elsewhere).

def local_rows(n: int, first: int = 0) -> int:
    """How many trailing rows of *n* states the local vector at the last one averages: LOCAL_WINDOW,
    fewer near the start (none before row *first*), never none.  What to ask the runtime for, so
    that :func:`local_mean` of the rows it returns is the local vector.

    >>> local_rows(10), local_rows(2), local_rows(2, first=1), local_rows(1, first=1)
    (3, 2, 1, 1)
    """
    return max(1, min(LOCAL_WINDOW, n - first))


def local_mean(states: np.ndarray, end: int | None = None, first: int = 0, window: int | None = None) -> np.ndarray:
    """The local vector after row *end* (default: the last) of *states* (n, d): the mean of the
    LOCAL_WINDOW rows ending there (inclusive), none before row *first*.  The one definition of "local".
    (*window*: another width, for measuring one, bench/slot_features.py; everything shipped uses LOCAL_WINDOW.)

    >>> local_mean(np.arange(10.0).reshape(5, 2), end=3).tolist(), local_mean(np.ones((2, 2)), 1, first=1).tolist()
    ([4.0, 5.0], [1.0, 1.0])
    >>> local_mean(np.arange(10.0).reshape(5, 2)).tolist(), local_mean(np.arange(10.0).reshape(5, 2), window=5).tolist()
    ([6.0, 7.0], [4.0, 5.0])
    """
    end = len(states) - 1 if end is None else end
    window = LOCAL_WINDOW if window is None else window        # read at the call: tests vary LOCAL_WINDOW
    return states[max(first, end - window + 1): end + 1].mean(axis=0)


def local_tail(rows: list) -> list:
    """The last rows of a growing list of states that a later local vector can still use."""
    return rows[-LOCAL_WINDOW:]


def local_means(states: np.ndarray, first: int = 0) -> np.ndarray:
    """Local vectors (m, d) at every row of *states* (n, d) with a whole window from row *first* on:
    rows ``first + LOCAL_WINDOW - 1`` to the last, so they belong to ``states[n - m:]``.

    Running sums instead of :func:`local_mean` per row (the background statistics take thousands);
    equal to it up to rounding (tests/test_encoding.py), and kept exactly as the shipped statistics
    were measured (float64 from the subtraction on).

    >>> local_means(np.arange(10.0).reshape(5, 2), first=1).tolist()
    [[4.0, 5.0], [6.0, 7.0]]
    """
    cums = np.cumsum(states[first:], axis=0)
    local = (cums[LOCAL_WINDOW - 1:] - np.vstack([np.zeros((1, states.shape[1])), cums[:-LOCAL_WINDOW]]))
    return local / LOCAL_WINDOW


def join_context(context: str, chunk: str) -> str:
    """The text a chunk would continue: context, one space unless punctuation, chunk."""
    ctx = context.rstrip(" \t")
    if not ctx or ctx.endswith("\n") or chunk[:1].isspace() or chunk[:1] in _NO_SPACE_BEFORE:
        return ctx + chunk
    return ctx + " " + chunk


def normalize_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


@dataclass
class ModelStats:
    """Whitening of a model's hidden states, from ordinary text.

    ``mean`` (d,), ``whitener`` (d, d); ``background`` (n, 2d): whitened,
    unit-norm context vectors and local vectors of ordinary text positions
    side by side, the reference for calibration (how similar does text that
    wants no chunk look?).
    """

    mean: np.ndarray
    whitener: np.ndarray
    background: np.ndarray

    def transform(self, vectors: np.ndarray) -> np.ndarray:
        """Whitened, unit-norm rows: (n, d) -> (n, d) float32."""
        x = (np.atleast_2d(vectors).astype(np.float32, copy=False) - self.mean) @ self.whitener
        x /= np.maximum(np.sqrt(np.einsum("ij,ij->i", x, x))[:, None], 1e-12)
        return x

    @staticmethod
    def source_id() -> str:
        data = BACKGROUND_FILE.read_bytes() if BACKGROUND_FILE.exists() else b""
        return f"v{STATS_VERSION}:{LOCAL_WINDOW}:{SHRINKAGE}:{hashlib.sha1(data).hexdigest()[:12]}"

    @classmethod
    def shipped(cls, identity: str) -> "ModelStats | None":
        """The statistics measured for a bundled model and shipped with Chunkwise (tools/ship_model_data.py).

        The same file gives every user the same numbers, so a first start need not spend seconds
        measuring them (issue 14.9).  None when nothing ships for this model or this background text."""
        try:
            with np.load(shipped_for_model("stats", identity), allow_pickle=False) as data:
                if str(data["source"]) != cls.source_id():
                    return None
                return cls(data["mean"].astype(np.float32), data["whitener"].astype(np.float32),
                           data["background"].astype(np.float32))
        except (OSError, KeyError, ValueError):
            return None

    def ship(self, identity: str) -> Path:
        """Write what :meth:`shipped` reads (the background at half precision, as the store keeps it)."""
        path = shipped_for_model("stats", identity)
        np.savez_compressed(path, source=np.array(self.source_id()), mean=self.mean.astype(np.float32),
                            whitener=self.whitener.astype(np.float32),
                            background=self.background.astype(np.float16))
        return path

    @classmethod
    def compute(cls, rt: LlamaRuntime, progress: Callable[[int, int], None] | None = None) -> "ModelStats":
        """Run the model over the background text (a few seconds for a small model)."""
        text = BACKGROUND_FILE.read_text(encoding="utf-8")
        paragraphs = [p for p in text.split("\n\n") if p.strip()][::BACKGROUND_STRIDE]
        rows, locals_ = [], []
        for i, para in enumerate(paragraphs):
            toks = rt.tokenize(para)[: min(rt.n_ctx, 512)]
            if len(toks) < 4:
                continue
            rt.reset()
            hidden = rt.eval(toks, outputs="all").hidden                    # (n, d)
            local = local_means(hidden, first=1)                           # skip BOS
            rows.append(hidden[len(hidden) - len(local):])                 # the same positions' states
            locals_.append(local)
            if progress:
                progress(i + 1, len(paragraphs))
        rt.reset()
        states = np.vstack(rows).astype(np.float64)
        locals_ = np.vstack(locals_)
        mean = states.mean(axis=0)
        cov = np.cov((states - mean).T)
        dim = cov.shape[0]
        cov = (1 - SHRINKAGE) * cov + SHRINKAGE * np.eye(dim) * np.trace(cov) / dim
        eigval, eigvec = np.linalg.eigh(cov)
        whitener = (eigvec * np.maximum(eigval, 1e-12) ** -0.5) @ eigvec.T
        stats = cls(mean.astype(np.float32), whitener.astype(np.float32), np.empty((0, dim), np.float32))
        rng = np.random.default_rng(0)
        pick = rng.permutation(len(states))[:MAX_BACKGROUND]
        stats.background = np.hstack([stats.transform(states[pick]), stats.transform(locals_[pick])])
        return stats


class ContextStates:
    """The model's states after contexts it read lately: context tokens -> (vector, local).

    The library's entry dialog asks for them while the user types the contexts
    (``Engine.prepare_contexts``), and the editor for the phrase before a library
    value the user has begun to type (``Engine.prepare_typed``), so saving the
    entry or learning the phrase finds them read and the next suggestion sees it
    without waiting for the model (bench/library_update.py).  What an edit's save
    reads is kept too (``Encoder(remember=True)``): the next edit of that entry,
    a new value or one context changed, reads only the contexts that are new (a
    context's states do not depend on its chunk).
    A few dozen at most, in memory only: they are the user's text, as personal as the store.

    >>> cache = ContextStates(capacity=1)
    >>> cache.put((1, 2), np.zeros(2), np.ones(2)); cache.put((1, 3), np.zeros(2), np.ones(2))
    >>> cache.get((1, 2)) is None, cache.get((1, 3)) is not None
    (True, True)
    """

    def __init__(self, capacity: int = 64):
        self.capacity = capacity
        self._states: OrderedDict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._states)

    def __contains__(self, tokens: tuple[int, ...]) -> bool:
        """Whether these tokens were read (without marking them used, unlike :meth:`get`)."""
        return tokens in self._states

    def get(self, tokens: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray] | None:
        found = self._states.get(tokens)
        if found is not None:
            self._states.move_to_end(tokens)
        return found

    def put(self, tokens: tuple[int, ...], vector: np.ndarray, local: np.ndarray) -> None:
        self._states[tokens] = (vector, local)
        self._states.move_to_end(tokens)
        while len(self._states) > self.capacity:
            self._states.popitem(last=False)

    def clear(self) -> None:
        self._states.clear()


class Encoder:
    """Computes :class:`Encoding` rows for pending (context, chunk) pairs."""

    def __init__(self, rt: LlamaRuntime, read_ahead: ContextStates | None = None, remember: bool = False):
        """*remember*: keep what :meth:`encode` reads among the states read lately (an edit's save,
        not a whole-library refresh, whose thousands of contexts would push out what the entry
        dialog read ahead)."""
        self.rt = rt
        self.read_ahead = read_ahead
        self.remember = remember

    def context_tokens(self, context: str) -> list[int]:
        """A context's own tokens, with BOS: what ``split`` starts from and the read-ahead keys on."""
        return self.rt.tokenize(context.rstrip(" \t"))

    def split(self, context: str, chunk: str) -> tuple[list[int], list[int]]:
        """(context tokens with BOS, chunk tokens as they continue that context)."""
        ctx_tokens = self.context_tokens(context)
        full = self.rt.tokenize(join_context(context, chunk))
        n = 0
        while n < min(len(ctx_tokens), len(full)) and ctx_tokens[n] == full[n]:
            n += 1
        n = max(n, 1)
        if n < len(ctx_tokens):
            # BPE merged across the boundary: the entry point moves back to the
            # last token both tokenizations share.
            ctx_tokens = full[:n]
        chunk_tokens = full[n:]
        if not chunk_tokens:
            chunk_tokens = self.rt.tokenize(chunk, add_special=False)
        return ctx_tokens, chunk_tokens

    def continuation(self, text: str, chunk: str, fallback: Sequence[int]) -> list[int]:
        """The chunk's tokens as they continue *text*, so BPE joins them as it would there.

        Only usable when the text's own last tokens are not re-merged with the
        chunk; otherwise *fallback* (the tokens stored with the chunk).
        """
        tail = text[-200:]
        if tail:
            head_tokens, chunk_tokens = self.split(tail, chunk)
            if chunk_tokens and head_tokens == self.rt.tokenize(tail.rstrip(" \t")):
                return list(chunk_tokens)
        return list(fallback)

    def encode(self, pending: PendingEncoding) -> Encoding:
        ctx_tokens, chunk_tokens = self.split(pending.context, pending.chunk)
        vector, local = self.states(ctx_tokens, keep=self.remember)
        return Encoding(
            context_id=pending.context_id,
            entry_token=ctx_tokens[-1],
            chunk_tokens=tuple(chunk_tokens),
            vector=vector,
            vector_local=local,
            source_hash=pending.source_hash,
        )

    def states(self, ctx_tokens: Sequence[int], keep: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """The final state and local mean after *ctx_tokens* (with BOS), read lately or read now: (d,), (d,).
        *keep*: kept among the states read lately (:class:`ContextStates`)."""
        key = tuple(ctx_tokens)
        found = self.read_ahead.get(key) if self.read_ahead is not None else None
        if found is not None:
            return found
        # On the side context, so the draft the next suggestion continues stays in the main cache
        # (LlamaRuntime.aside); a context longer than the side holds is read in the main one.
        try:
            side = self.rt.aside()
        except ModelError:                 # no memory for a second context: read in the main one, as before
            side = self.rt
        rt = side if len(ctx_tokens) <= side.n_ctx else self.rt
        out = rt.sync(ctx_tokens, last=local_rows(len(ctx_tokens), first=1))          # BOS out, unless alone
        vector, local = np.array(out.hidden[-1], copy=True), local_mean(out.hidden)
        if keep and self.read_ahead is not None:
            self.read_ahead.put(key, vector, local)
        return vector, local

    def read_ahead_of_save(self, contexts: Sequence[str]) -> int:
        """Read *contexts* before their entry is saved; returns how many the model read (others were known).

        The tokens are the context's own; where BPE merges it with its chunk's first
        characters (``split``), the save reads that context again."""
        read = 0
        for context in contexts:
            if not context.strip():
                continue
            tokens = tuple(self.context_tokens(context))
            if self.read_ahead is None or self.read_ahead.get(tokens) is None:
                self.states(tokens, keep=True)
                read += 1
        return read

    def encode_many(self, pending: Sequence[PendingEncoding],
                    progress: Callable[[int, int], None] | None = None,
                    cancelled: Callable[[], bool] | None = None) -> list[Encoding]:
        out = []
        for i, p in enumerate(pending):
            if cancelled and cancelled():
                break
            out.append(self.encode(p))
            if progress:
                progress(i + 1, len(pending))
        return out
