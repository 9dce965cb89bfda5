"""Anchor-based KV reduction (AnLLM inference, Algorithm 1 of the anchor paper).

At an anchor token -- a sentence end point: a token whose text ends with '.',
'!' or '?' (the paper's AnLLM-EP anchors; SmolLM2 has no anchor token) -- the keys and values of the earlier sentences'
non-anchor tokens are removed from the cache; the anchors themselves, the
current sentence and a protected prefix (the instruction or the email's
header: the paper's "source cache" variant) stay. Positions are not
renumbered. Models trained with anchor attention squeeze each sentence into
its anchor; SmolLM2 was not, so this costs quality: docs/benchmarks.md has the
numbers. Off by default.

>>> is_anchor_piece(b" done.")
True
"""
from __future__ import annotations

from .llama_runtime import LlamaRuntime

_ENDS = (b".", b"!", b"?")


def is_anchor_piece(piece: bytes) -> bool:
    text = piece.rstrip(b" \t\r")
    return bool(text) and text.endswith(_ENDS) and not text.endswith(b"..")


class AnchorReducer:
    """Applies REDUCTION(C) to a runtime's sequence 0: picks the positions to drop; the runtime,
    the KV state's one owner, removes their cells (:meth:`LlamaRuntime.drop`)."""

    def __init__(self, rt: LlamaRuntime, keep_prefix: int):
        self.rt = rt
        self.keep_prefix = keep_prefix

    def is_anchor(self, token: int) -> bool:
        return is_anchor_piece(self.rt.piece(token))

    def reduce(self) -> int:
        """C <- {c : index(c) >= j or c is an anchor}, j the last anchor; returns cells removed."""
        tokens, dropped = self.rt.tokens, self.rt.dropped          # read-only views of the runtime's KV state
        last = next((i for i in range(len(tokens) - 1, self.keep_prefix - 1, -1) if self.is_anchor(tokens[i])), None)
        if last is None:
            return 0
        drop = [i for i in range(self.keep_prefix, last) if i not in dropped and not self.is_anchor(tokens[i])]
        return self.rt.drop(drop)
