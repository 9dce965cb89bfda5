"""What the chunk store holds, and what it accepts: the records its callers read and write.

A chunk is the text to insert; its contexts are the places that lead into it.  Encodings are
the per-model data matching needs, as written (:class:`Encoding`), as still to be computed
(:class:`PendingEncoding`) and as read back (:class:`StoredEncoding`).  ``validate_chunk`` is
the one place the rules for a chunk's fields live; every writer in core/store.py goes through it.

>>> validate_chunk("(555) 123-4567", "pii", "phone", ["Call me at", "Call me at"])
['Call me at']
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import NamedTuple, Sequence

import numpy as np

from .errors import StoreError

KINDS = ("pii", "snippet", "phrase")
# How a hidden personal value is shown (CLI, library): fixed, so it does not give away the value's length.
PII_MASK = "\u2022" * 10

LEARNED = "learned"       # context origin: the phrase before a value the user typed by hand
DISMISSED = "dismissed"   # context origin: where the user dismissed this chunk (counts against it there)


def source_hash(context: str, chunk: str) -> str:
    """Fingerprint of what an encoding was computed from (edits invalidate it)."""
    return hashlib.sha1(f"{context}\x00{chunk}".encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Context:
    """A trigger context.  ``origin``: None (typed into the library, imported or mined),
    LEARNED or DISMISSED, with ``learned_at`` saying when."""

    id: int
    text: str
    origin: str | None = None
    learned_at: str | None = None


@dataclass
class Chunk:
    id: int
    text: str
    kind: str
    label: str | None
    contexts: list[Context] = field(default_factory=list)   # where it belongs (library, mined, learned)
    created_at: str = ""
    updated_at: str = ""
    use_count: int = 0
    avoid: list[Context] = field(default_factory=list)      # where the user dismissed it (DISMISSED)

    def shown(self, reveal: bool = False) -> str:
        """The text as a list shows it: a personal value hidden behind PII_MASK unless *reveal*.

        >>> Chunk(1, "+1 555 0100", "pii", "phone").shown(), Chunk(2, "Best,", "snippet", None).shown()
        ('••••••••••', 'Best,')
        """
        return self.text if (reveal or self.kind != "pii") else PII_MASK

    def as_record(self) -> dict:
        """The portable form used by import/export (no ids, no timestamps)."""
        return {
            "text": self.text,
            "kind": self.kind,
            "label": self.label,
            "contexts": [c.text for c in self.contexts],
        }


class Mined(NamedTuple):
    """What ChunkStore.add_mined stored: new chunks, new contexts, and the chunks that are new or
    gained contexts (matching follows those in place: Engine.refresh(chunk_ids=...))."""

    chunks: int
    contexts: int
    chunk_ids: list[int]


@dataclass(frozen=True)
class PendingEncoding:
    """A (chunk, context) pair whose derived data is missing or stale for a model."""

    context_id: int
    chunk_id: int
    context: str
    chunk: str
    source_hash: str


@dataclass(frozen=True)
class Encoding:
    """Derived data for one context of one chunk, for one model.

    ``vector``: the final hidden state after the context's last (entry)
    token, the context vector f_theta.  ``vector_local``: the mean of the
    states over the context's last few tokens.  Both (dim,) float32; stored
    as float16, which changes cosine similarities by less than 1e-3.
    """

    context_id: int
    entry_token: int
    chunk_tokens: tuple[int, ...]
    vector: np.ndarray
    vector_local: np.ndarray
    source_hash: str


@dataclass(frozen=True)
class StoredEncoding:
    """An encoding as read back, with the ids matching needs."""

    label: int  # encodings row id: the HNSW label
    context_id: int
    chunk_id: int
    entry_token: int
    chunk_tokens: tuple[int, ...]
    source_hash: str
    origin: str | None = None


# ---------------------------------------------------------------- validation

_KIND_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
MAX_CHUNK_CHARS = 20_000
MAX_CONTEXT_CHARS = 4_000


def validate_chunk(text: str, kind: str, label: str | None, contexts: Sequence[str]) -> list[str]:
    """Check one chunk's fields; return its cleaned context list or raise StoreError."""
    if not isinstance(text, str) or not text.strip():
        raise StoreError("A chunk needs non-empty text.")
    if "\x00" in text:
        raise StoreError("Chunk text contains a NUL character.")
    if len(text) > MAX_CHUNK_CHARS:
        raise StoreError(f"Chunk text is {len(text):,} characters; the limit is {MAX_CHUNK_CHARS:,}.")
    if not isinstance(kind, str) or not _KIND_RE.match(kind):
        raise StoreError(
            f"Unknown chunk kind {kind!r}: use pii, snippet or phrase "
            "(lower-case letters, digits, '-' or '_')."
        )
    if label is not None and (not isinstance(label, str) or "\x00" in label):
        raise StoreError("A chunk label must be text without NUL characters.")
    if isinstance(contexts, str) or not isinstance(contexts, (list, tuple)):
        raise StoreError("A chunk's contexts must be a list of texts.")
    cleaned: list[str] = []
    for ctx in contexts:
        if not isinstance(ctx, str) or not ctx.strip():
            raise StoreError("A trigger context must be non-empty text.")
        if "\x00" in ctx:
            raise StoreError("A trigger context contains a NUL character.")
        if len(ctx) > MAX_CONTEXT_CHARS:
            raise StoreError(f"A trigger context is {len(ctx):,} characters; the limit is {MAX_CONTEXT_CHARS:,}.")
        if ctx not in cleaned:
            cleaned.append(ctx)
    if not cleaned:
        raise StoreError("A chunk needs at least one trigger context (the text that leads into it).")
    return cleaned

