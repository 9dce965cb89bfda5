"""One forward pass of a model over a text: the probability of each real token, the states, the top-k.

Mining (distill.py), perplexity (perplexity.py) and the kNN-LM datastore all start here.
Documents longer than the window are scored in windows of 512 tokens with a stride of 448;
positions in the first 64 tokens of a later window were already scored with more context
and are skipped (CD-LM appendix D.1).  Two tokenizers are compared through byte offsets
(:func:`token_offsets`, :func:`align_logprob`), which is how a teacher of another family
scores the student's tokens (KCD-LM): ``score(...).logprob`` is (n,), log p(token i | tokens before it).

>>> tokens, first = document_tokens(rt, Document("mail", "Thanks, see you Monday."))   # doctest: +SKIP
>>> score(rt, tokens, first).logprob   # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .corpus import Document
from .llama_runtime import LlamaRuntime
from .sampling import log_softmax

WINDOW = 512              # tokens scored per pass (appendix D.1)
STRIDE = 448              # windows overlap by WINDOW - STRIDE tokens


@dataclass
class Scored:
    """One document after a forward pass.

    ``tokens`` (n,) with BOS first; ``logprob`` (n,) log p(tokens[i] | tokens[:i])
    (nan where not scored); ``hidden`` (n, d) the state after token i;
    ``offsets`` (n + 1,) byte offset of each token in ``prefix + text``;
    ``first`` the index of the first token of the mined text; ``topk_ids`` /
    ``topk_probs`` (n, k): the distribution predicting token i, kept when asked.
    """

    tokens: list[int]
    logprob: np.ndarray
    hidden: np.ndarray | None
    offsets: np.ndarray
    first: int
    topk_ids: np.ndarray | None = None
    topk_probs: np.ndarray | None = None



def token_offsets(rt: LlamaRuntime, tokens: Sequence[int], bos: bool) -> np.ndarray:
    """(n + 1,) byte offsets: token i covers bytes [off[i], off[i + 1]) of the text."""
    widths = [0 if (bos and i == 0) else len(rt.piece(t)) for i, t in enumerate(tokens)]
    return np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)


def align_logprob(student_offsets: np.ndarray, teacher_offsets: np.ndarray,
                  teacher_logprob: np.ndarray) -> np.ndarray:
    """Per student token, the lowest teacher log-probability among teacher tokens overlapping it.

    A student token counts as confident for the teacher only when every
    teacher token that covers any of its bytes is.  Zero-width tokens (BOS)
    get nan.

    >>> align_logprob(np.array([0, 0, 3, 5]), np.array([0, 0, 2, 5]), np.log([np.nan, .9, .5])).round(3).tolist()
    [nan, -0.693, -0.693]
    """
    n = len(student_offsets) - 1
    out = np.full(n, np.nan)
    t_start, t_end = teacher_offsets[:-1], teacher_offsets[1:]
    k = 0
    for j in range(n):
        a, b = student_offsets[j], student_offsets[j + 1]
        if b <= a:
            continue
        while k < len(t_end) and t_end[k] <= a:
            k += 1
        m, worst = k, np.inf
        while m < len(t_start) and t_start[m] < b:
            if t_end[m] > t_start[m]:
                worst = min(worst, teacher_logprob[m])     # nan propagates as "not scored"
                if np.isnan(teacher_logprob[m]):
                    worst = np.nan
                    break
            m += 1
        out[j] = worst if worst != np.inf else np.nan
    return out


def document_tokens(rt: LlamaRuntime, doc: Document) -> tuple[list[int], int]:
    """Tokens of prefix + text with BOS (where the model uses one), and where the text starts."""
    if doc.prefix:
        head = rt.tokenize(doc.prefix, add_special=True, parse_special=True)
        body = rt.tokenize(doc.text, add_special=False)
        return head + body, len(head)
    tokens = rt.tokenize(doc.text, add_special=True)
    return tokens, 1 if tokens and tokens[0] == rt.bos else 0


def score(rt: LlamaRuntime, tokens: Sequence[int], first: int, hidden: bool = True,
          topk: int = 0, on_rows: Callable | None = None) -> Scored:
    """One pass (in windows) of *rt* over *tokens*: probabilities, states, top-k.

    *on_rows(next_positions (m,), log_probs (m, V), hidden (m, d))* sees each
    window's full distributions (the kNN-LM perplexity needs them).
    """
    n, bos = len(tokens), rt.bos
    logprob = np.full(n, np.nan)
    states = np.zeros((n, rt.n_embd), np.float32) if hidden else None
    ids = np.zeros((n, topk), np.int32) if topk else None
    probs = np.zeros((n, topk), np.float16) if topk else None
    start = 0
    while start < n:
        head = [] if start == 0 else [bos]
        body = list(tokens[start:start + WINDOW])
        rt.reset()
        out = rt.eval(head + body, outputs="all", hidden=hidden)      # logits (h+b, V), hidden (h+b, d)
        keep_from = 0 if start == 0 else min(WINDOW - STRIDE, len(body))
        rows = np.arange(keep_from, len(body)) + len(head)            # rows after tokens start+j
        positions = start + np.arange(keep_from, len(body))
        if hidden:
            states[positions] = out.hidden[rows]
        nxt = positions + 1
        inside = nxt < n
        lp = log_softmax(out.logits[rows[inside]])                    # (m, V)
        logprob[nxt[inside]] = lp[np.arange(len(lp)), np.asarray(tokens)[nxt[inside]]]
        if on_rows is not None:
            on_rows(nxt[inside], lp, out.hidden[rows[inside]] if hidden else None)
        if topk:
            top = np.argpartition(-lp, topk, axis=1)[:, :topk]
            ids[nxt[inside]] = top
            probs[nxt[inside]] = np.exp(np.take_along_axis(lp, top, axis=1))
        if start + len(body) >= n:
            break
        start += STRIDE
    rt.reset()
    return Scored(list(tokens), logprob, states, token_offsets(rt, tokens, bos=tokens[:1] == [bos]), first,
                  ids, probs)
