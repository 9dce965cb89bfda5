"""Which of two of the user's fields comes next, asked of the model, where the slot classifier reads them alike.

The slot classifier can read two of the user's fields nearly alike ("Our office line, in case
email is slow, is": email 0.54, phone 0.28).  Guessing there puts a phone number where the email
goes, the error issue 10 ranks worst, so the matcher's rival rule keeps both out
(``matching.RIVAL_OVER``).  Two readings from the model itself can settle the pair:

- **the value**: how much more likely each value is after the text than after a bare line break
  (the mean log-probability of its first :data:`VALUE_TOKENS` tokens, a pointwise mutual
  information; what the text calls for, less what is likely anywhere);
- **the field's name**: the model asked to name what comes, "<text> (my" and then the field's
  own class name (" phone", " email", " job title"), as the writer probe asks whose it is.

At the cursor, over the 10 such places among the positives of the dev sets (``python bench/rivals.py``,
``bench/out/rivals-dev.txt``), the value reading alone picks the right field at 7 and the name
reading at 8, but each picks a wrong field at the others, and they miss different places.  Where
both name the same field, it goes in (5 of the 10, none wrong), else neither, as before.  The
gates after the matcher (whose detail, prose going on, a place named) still judge the value.

>>> pick(values=(0.9, 0.1), names=(-3.0, -9.0)), pick(values=(0.9, 0.1), names=(-9.0, -3.0))
(0, None)
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .llama_runtime import LlamaRuntime

VALUE_TOKENS = 8            # a value's first tokens read: enough to tell a phone number from an email address
NAME_PROBE = " (my"         # "<text> (my" + " phone": the model names the field (as whose.OWNER_PROBE names whose)
NEUTRAL = "\n"              # the text a value's reading is compared against
_PRIORS_KEPT = 256          # values' readings after NEUTRAL kept, per model (values are few; rivals are rare)
_priors: dict[tuple[str, tuple[int, ...]], float] = {}


def log_softmax(row: np.ndarray) -> np.ndarray:
    x = np.asarray(row, dtype=np.float64)
    x = x - x.max()
    return x - np.log(np.exp(x).sum())


def mean_logprob(rows: np.ndarray, tokens: Sequence[int]) -> float:
    """Mean log-probability of *tokens*, ``rows[i]`` (logits, (n, V)) being what predicts ``tokens[i]``."""
    return float(np.mean([log_softmax(rows[i])[t] for i, t in enumerate(tokens)]))


def _spellings(rt: LlamaRuntime, value: str) -> list[list[int]]:
    """The value's first tokens after a space and on a line of its own: the two ways it follows a lead-in."""
    return [rt.tokenize(sep + value.strip(), add_special=False)[:VALUE_TOKENS] for sep in (" ", "\n")]


def _after_cache(rt: LlamaRuntime, last_logits: np.ndarray, tokens: list[int]) -> float:
    """Mean log-probability of *tokens* after what the cache holds (*last_logits*: its last position's);
    the cache is left as it was."""
    rows = [np.asarray(last_logits)]
    if len(tokens) > 1:
        n = len(rt.tokens)
        try:
            rows += list(rt.eval(tokens[:-1], outputs="all", hidden=False).logits)
        finally:
            rt.truncate(n)
    return mean_logprob(np.stack(rows), tokens)


def _prior(rt: LlamaRuntime, tokens: list[int]) -> float:
    """Mean log-probability of *tokens* after a bare line break, read on the side context (the main
    cache holds the draft) and kept: a value's prior does not change while the model does not."""
    key = (rt.identity, tuple(tokens))
    if key not in _priors:
        side = rt.aside()
        start = side.tokenize(NEUTRAL, add_special=True)
        out = side.sync(start + tokens, last=len(tokens) + 1, hidden=False)
        if len(_priors) >= _PRIORS_KEPT:
            _priors.pop(next(iter(_priors)))
        _priors[key] = mean_logprob(out.logits[:-1], tokens)
    return _priors[key]


def value_reading(rt: LlamaRuntime, last_logits: np.ndarray, value: str) -> float:
    """How much likelier *value* is after the cached text than after a bare line break (mean log-probability
    per token of its first tokens, the likelier of its two spellings on each side)."""
    spellings = _spellings(rt, value)
    here = max(_after_cache(rt, last_logits, t) for t in spellings)
    return here - max(_prior(rt, t) for t in spellings)


def name_reading(rt: LlamaRuntime, field: str) -> float:
    """log P(" <field's name>" | cached text + NAME_PROBE): the model naming the field that comes.
    The cache is left as it was."""
    words = rt.tokenize(" " + field.replace("_", " "), add_special=False)
    n = len(rt.tokens)
    try:
        probe = rt.tokenize(NAME_PROBE, add_special=False)
        rows = rt.eval(probe + words[:-1], outputs=list(range(len(probe) - 1, len(probe) + len(words) - 1)),
                       hidden=False).logits
    finally:
        rt.truncate(n)
    return mean_logprob(rows, words) * len(words)


def pick(values: Sequence[float], names: Sequence[float]) -> int | None:
    """The index both readings rank first (*values*: :func:`value_reading`; *names*: :func:`name_reading`), or None."""
    first = int(np.argmax(values))
    return first if int(np.argmax(names)) == first else None


def settle(rt: LlamaRuntime, last_logits: np.ndarray, values: Sequence[str], fields: Sequence[str]) -> int | None:
    """Of the user's *values* (of *fields*, the slot classifier's class names) that the classifier reads
    alike at the cached text, the index of the one the model's own readings both expect, or None.
    *last_logits* (V,): the model's own (not the kNN-LM's mixture) at the text's last position."""
    return pick([value_reading(rt, last_logits, v) for v in values], [name_reading(rt, f) for f in fields])
