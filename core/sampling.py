"""Choosing the next token, and turning token bytes into safe text.

Why numpy and not llama.cpp's sampler chain: the decoder samples from logits
that may have been mixed in numpy (kNN-LM, knn.mix_logits), so a chain (top-k
-> temperature -> top-p -> dist(seed)) would have to be applied to a
``llama_token_data_array`` we build over a numpy buffer.  That works: same
distribution, the same draws again for a seed on one install, and faster.
``.venv/bin/python bench/sampler.py`` (49152-entry vocabulary, temperature 0.8,
top-k 40, top-p 0.95; 15 alternating repeats of 300 calls on 2 busy shared
cores; llama-cpp-python 0.3.36, numpy 2.4.6), median per call: numpy 292 us,
chain 194 us (89 us of it copying logits into the structs); kNN-mixed float64
logits 337 against 242 us; through llama-cpp-python's own helpers
(``_internals.LlamaSampler`` + ``LlamaTokenDataArray``) 246 us; greedy argmax
37 us.  The 0.1 ms saved is about 1% of a one-token forward pass (9.8 ms,
docs/benchmarks.md).  We keep numpy because (1) a seed would not mean the same
text everywhere: ``dist`` draws through ``std::uniform_real_distribution`` over
``std::mt19937``, whose values the C++ standard library decides (libstdc++,
libc++ and MSVC differ), and its algorithm has changed between llama.cpp
releases (``std::discrete_distribution`` before, its own cumulative sum over
one uniform draw now), so ``--seed``, sampled acceptance and
bench/distill.py's seeded corpus would change per platform and on upgrade,
while numpy's PCG64 stream and ``choice`` are the same everywhere; (2) chunk
acceptance needs plain Bernoulli draws (``bernoulli``), which llama.cpp does
not expose, so numpy's generator would stay and one seed would drive two
streams; (3) the fast path is a hand-made ctypes buffer plus a C object to
free, more code than the sampling it replaces.  Greedy decoding (temperature
0) is ``argmax`` either way.

>>> import numpy as np
>>> Sampler(temperature=0.0).sample(np.array([0.1, 2.0, -1.0], dtype=np.float32))
1
"""
from __future__ import annotations

import codecs
from dataclasses import dataclass

import numpy as np


@dataclass
class Sampler:
    """Greedy when ``temperature == 0``; otherwise temperature + top-k + top-p."""

    temperature: float = 0.0
    top_p: float = 0.95
    top_k: int = 40
    seed: int | None = None

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.seed)

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0

    def sample(self, logits: np.ndarray) -> int:
        """One token id from next-token *logits* (shape ``(vocab,)``)."""
        if self.greedy:
            return int(np.argmax(logits))
        return int(self._sample_nucleus(logits))

    def probabilities(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(candidate ids, their probabilities) after top-k, temperature and top-p."""
        k = min(max(1, self.top_k), logits.shape[0]) if self.top_k > 0 else logits.shape[0]
        ids = np.argpartition(logits, -k)[-k:] if k < logits.shape[0] else np.arange(logits.shape[0])
        ids = ids[np.argsort(-logits[ids], kind="stable")]
        scaled = logits[ids].astype(np.float64) / max(self.temperature, 1e-6)
        probs = np.exp(scaled - scaled.max())
        probs /= probs.sum()
        if 0.0 < self.top_p < 1.0:
            keep = int(np.searchsorted(np.cumsum(probs), self.top_p) + 1)
            ids, probs = ids[:keep], probs[:keep] / probs[:keep].sum()
        return ids, probs

    def _sample_nucleus(self, logits: np.ndarray) -> int:
        ids, probs = self.probabilities(logits)
        return ids[self._rng.choice(len(ids), p=probs)]

    def bernoulli(self, q: float) -> bool:
        """Draw z ~ Bernoulli(q) from this sampler's random stream."""
        return bool(self._rng.random() < q)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Log-probabilities from logits (float64, same shape)."""
    x = logits.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


class Utf8Stream:
    """Feeds token bytes, yields only complete UTF-8 text.

    Tokens can split a multi-byte character (emoji, accented letters); the
    incremental decoder holds the partial bytes until the character is whole.

    >>> s = Utf8Stream()
    >>> s.feed("é".encode()[:1]), s.feed("é".encode()[1:])
    ('', 'é')
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> str:
        return self._decoder.decode(data, final=False)

    def flush(self) -> str:
        return self._decoder.decode(b"", final=True)


class StopMatcher:
    """Finds stop sequences in streamed text, holding back text that may start one.

    A stop counts only after some text: whitespace the text opens with passes
    through, so a suggestion may begin a new paragraph ("\\n\\nKind regards,")
    and still end at the next blank line.  ``lead=False``: a stop counts from
    the first character (where a new paragraph cannot come, text.opens_paragraph).

    >>> m = StopMatcher(["\\n\\n"])
    >>> m.feed("Hi\\n"), m.feed("\\nBye")
    (('Hi', False), ('', True))
    >>> StopMatcher(["\\n\\n"]).feed("\\n\\nThanks,\\n\\nBye")
    ('\\n\\nThanks,', True)
    """

    def __init__(self, stops: list[str] | tuple[str, ...] = (), lead: bool = True) -> None:
        self.stops = [s for s in stops if s]
        self._held = ""
        self._lead = lead          # only whitespace has passed so far, and it may open the text

    def feed(self, text: str) -> tuple[str, bool]:
        """Return (text safe to emit, stopped)."""
        buf = self._held + text
        if not self.stops:
            self._held = ""
            return buf, False
        head = ""
        if self._lead:
            body = buf.lstrip()
            head, buf = buf[:len(buf) - len(body)], body
            if not buf:
                self._held = ""
                return head, False
            self._lead = False
        cut = min((i for i in (buf.find(s) for s in self.stops) if i >= 0), default=-1)
        if cut >= 0:
            self._held = ""
            return head + buf[:cut], True
        keep = 0
        for s in self.stops:
            for n in range(min(len(s) - 1, len(buf)), 0, -1):
                if buf.endswith(s[:n]):
                    keep = max(keep, n)
                    break
        self._held = buf[len(buf) - keep:] if keep else ""
        return head + buf[: len(buf) - keep], False

    def flush(self) -> str:
        out, self._held = self._held, ""
        return out


def token_probability(logits: np.ndarray, token: int) -> float:
    """The probability the logits (V,) give *token*, softmax in float64.

    >>> round(token_probability(np.log(np.array([0.2, 0.8], np.float32)), 1), 3)
    0.8
    """
    logits = np.asarray(logits, np.float64)
    return float(1.0 / np.exp(logits - logits[token]).sum())
