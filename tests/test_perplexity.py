"""The CD-LM sequence probability (paper section 5, appendix A/B) against brute force."""
import itertools
import math
import random

import numpy as np
import pytest

from chunkwise.core.perplexity import cdlm_log_prob

A, B, C, D, E = 1, 2, 3, 4, 5


def appendix_b():
    logp = np.log([1.0, .3, .3, .3, .3, .3])        # BOS then A..E, each 0.3 under the LM
    tokens = [0, A, B, C, D, E]
    proposals = {2: ((B, C), .5), 3: ((C, D), .5)}  # entry A -> "B C"; entry B -> "C D"
    return logp, tokens, proposals


def enumerate_paths(logp, tokens, proposals, first):
    """Every z path, simulated forward: a list of (path, probability)."""
    last = len(tokens) - 1
    paths = []

    def walk(n, prob, path):
        if n > last:
            paths.append((tuple(path), prob))
            return
        chunk, q = proposals.get(n, ((), 0.0))
        if q > 0 and chunk:
            span = min(len(chunk), last - n + 1)
            if list(tokens[n:n + span]) == list(chunk[:span]):
                walk(n + span, prob * q, path + [("ret", n)])
            walk(n + 1, prob * (1 - q) * math.exp(logp[n]), path + [("lm", n)])
        else:
            walk(n + 1, prob * math.exp(logp[n]), path + [("lm", n)])

    walk(first + 1, math.exp(logp[first]), [("lm", first)])
    return paths


def test_appendix_b_example():
    logp, tokens, proposals = appendix_b()
    paths = dict(enumerate_paths(logp, tokens, proposals, first=1))
    # The paper's three paths: all-LM, "B C" retrieved, "C D" retrieved.
    assert len(paths) == 3
    all_lm = paths[(("lm", 1), ("lm", 2), ("lm", 3), ("lm", 4), ("lm", 5))]
    bc = paths[(("lm", 1), ("ret", 2), ("lm", 4), ("lm", 5))]
    cd = paths[(("lm", 1), ("lm", 2), ("ret", 3), ("lm", 5))]
    assert all_lm == pytest.approx(0.0006075)       # as the paper
    assert bc == pytest.approx(0.0135)              # as the paper
    # The paper writes 0.3 * 0.3 * 0.5 * 1 * 0.3 = 0.0135 for the third path, leaving out
    # (1 - q) = 0.5 for B written by the LM while "B C" was on offer -- the factor its
    # first path does include.  With it the path is 0.00675.
    assert cd == pytest.approx(0.3 * (1 - .5) * 0.3 * 0.5 * 1 * 0.3) == pytest.approx(0.00675)
    assert all_lm + bc + 0.0135 == pytest.approx(0.0276075)   # the paper's total, its arithmetic
    dp = math.exp(cdlm_log_prob(logp, tokens, proposals, first=1))
    assert dp == pytest.approx(all_lm + bc + cd) == pytest.approx(0.0208575)


def random_case(rng, vocab=3, length=6):
    tokens = [0] + [rng.randrange(1, vocab + 1) for _ in range(length)]
    logp = [0.0] + [math.log(rng.uniform(0.05, 0.95)) for _ in range(length)]
    proposals = {}
    for n in range(2, length + 1):
        if rng.random() < 0.6:
            size = rng.randrange(1, 4)
            # Half the time the chunk is what the text says (possibly running past the end).
            chunk = tuple(tokens[n:n + size]) if rng.random() < 0.5 else tuple(rng.randrange(1, vocab + 1)
                                                                                for _ in range(size))
            if chunk:
                proposals[n] = (chunk, rng.choice([rng.random(), 1.0, 0.0]))
    return logp, tokens, proposals


@pytest.mark.parametrize("seed", range(40))
def test_dynamic_program_equals_brute_force(seed):
    rng = random.Random(seed)
    logp, tokens, proposals = random_case(rng, length=rng.randrange(1, 8))
    first = 1
    brute = sum(p for _, p in enumerate_paths(logp, tokens, proposals, first))
    dp = math.exp(cdlm_log_prob(logp, tokens, proposals, first))
    assert dp == pytest.approx(brute, rel=1e-9, abs=1e-300)


def test_cdlm_is_a_distribution_over_every_sequence():
    """With a real conditional LM and prefix-determined proposals, the probabilities of all
    sequences of a length sum to one (the paper's arithmetic in appendix B would not)."""
    vocab, length = 3, 4
    rng = random.Random(7)
    lm, chunk_of = {}, {}

    def dist(prefix):
        if prefix not in lm:
            w = [rng.random() + 0.05 for _ in range(vocab)]
            lm[prefix] = [x / sum(w) for x in w]
            if len(prefix) >= 2 and rng.random() < 0.7:
                chunk_of[prefix] = (tuple(rng.randrange(1, vocab + 1) for _ in range(rng.randrange(1, 4))),
                                    rng.random())
        return lm[prefix]

    total = 0.0
    for seq in itertools.product(range(1, vocab + 1), repeat=length):
        tokens = (0,) + seq
        logp = [0.0] + [math.log(dist(tokens[:n])[tokens[n] - 1]) for n in range(1, len(tokens))]
        proposals = {n: chunk_of[tokens[:n]] for n in range(2, len(tokens)) if tokens[:n] in chunk_of}
        total += math.exp(cdlm_log_prob(logp, list(tokens), proposals, first=1))
    assert total == pytest.approx(1.0, abs=1e-9)


def test_long_text_does_not_underflow():
    n = 5000
    logp = np.full(n + 1, math.log(0.01))
    tokens = list(range(n + 1))
    proposals = {i: ((i, i + 1), 0.5) for i in range(2, n, 3)}
    value = cdlm_log_prob(logp, tokens, proposals, first=1)
    assert math.isfinite(value) and value > n * math.log(0.01)


def test_no_proposals_is_the_base_model():
    logp = np.log([1.0, .2, .4, .5])
    assert cdlm_log_prob(logp, [0, 1, 2, 3], {}, first=1) == pytest.approx(float(np.sum(logp[1:])))
