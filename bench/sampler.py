"""The numpy sampler (core/sampling.py) against llama.cpp's sampler chain, on logits we hand it.

The decoder samples from logits that may have been mixed in numpy first (kNN-LM,
core/knn.py ``mix_logits``), so llama.cpp's chain would have to sample from an array
we build: a ``llama_token_data_array`` over a numpy buffer, the chain top-k ->
temperature -> top-p -> dist(seed) (our order), ``llama_sampler_apply``, then the
``selected`` entry.  This script checks that it works and is reproducible with a seed,
and times one call of each on a 49152-entry vocabulary (SmolLM2's), repeats alternating
which goes first.

    .venv/bin/python bench/sampler.py [--repeats 15] [--calls 300]
"""
from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chunkwise.core.sampling import Sampler  # noqa: E402

VOCAB = 49152
TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)


class ChainSampler:
    """llama.cpp's sampler chain over logits we give it (the candidate the bench measures)."""

    def __init__(self, temperature: float, top_p: float, top_k: int, seed: int | None, n_vocab: int = VOCAB):
        import llama_cpp

        self.lib = llama_cpp
        self.chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        if top_k > 0:
            llama_cpp.llama_sampler_chain_add(self.chain, llama_cpp.llama_sampler_init_top_k(top_k))
        llama_cpp.llama_sampler_chain_add(self.chain, llama_cpp.llama_sampler_init_temp(temperature))
        if 0.0 < top_p < 1.0:
            llama_cpp.llama_sampler_chain_add(self.chain, llama_cpp.llama_sampler_init_top_p(top_p, 1))
        llama_cpp.llama_sampler_chain_add(
            self.chain, llama_cpp.llama_sampler_init_dist(llama_cpp.LLAMA_DEFAULT_SEED if seed is None else seed))
        self.buf = np.zeros(n_vocab, dtype=TOKEN_DATA)
        fresh = np.zeros(n_vocab, dtype=TOKEN_DATA)
        fresh["id"] = np.arange(n_vocab, dtype=np.int32)
        # Plain (n, 3) float32 views: a structured-array copy is ~50x slower than this memcpy.
        self.rows, self.fresh = self.buf.view(np.float32).reshape(n_vocab, 3), fresh.view(np.float32).reshape(n_vocab, 3)
        self.ptr = self.buf.ctypes.data_as(llama_cpp.llama_token_data_p)
        self.arr = llama_cpp.llama_token_data_array(data=self.ptr, size=n_vocab, selected=-1, sorted=False)
        self.ref = ctypes.byref(self.arr)

    def load(self, logits: np.ndarray) -> None:
        """Copy logits (any float dtype, -inf allowed) into the token-data buffer."""
        np.copyto(self.rows, self.fresh)          # ids 0..n-1 in order (the chain sorts the buffer in place)
        self.rows[:, 1] = logits
        self.arr.data, self.arr.size, self.arr.selected, self.arr.sorted = self.ptr, len(logits), -1, False

    def sample(self, logits: np.ndarray) -> int:
        self.load(logits)
        self.lib.llama_sampler_apply(self.chain, self.ref)
        return int(self.arr.data[self.arr.selected].id)     # the chain may point data at its own copy

    def close(self) -> None:
        self.lib.llama_sampler_free(self.chain)


class InternalsSampler:
    """The same chain through llama-cpp-python's own helpers (``_internals``: LlamaSampler, and
    LlamaTokenDataArray.copy_logits) instead of a hand-made buffer."""

    def __init__(self, temperature: float, top_p: float, top_k: int, seed: int, n_vocab: int = VOCAB):
        import llama_cpp
        from llama_cpp._internals import LlamaSampler, LlamaTokenDataArray

        self.lib, self.chain = llama_cpp, LlamaSampler()
        self.chain.add_top_k(top_k)
        self.chain.add_temp(temperature)
        self.chain.add_top_p(top_p, 1)
        self.chain.add_dist(seed)
        self.array = LlamaTokenDataArray(n_vocab=n_vocab)
        self.ptr = self.array.candidates.data

    def sample(self, logits: np.ndarray) -> int:
        a = self.array.candidates
        self.array.copy_logits(logits)
        a.data, a.selected = self.ptr, -1
        self.lib.llama_sampler_apply(self.chain.sampler, ctypes.byref(a))
        return int(a.data[a.selected].id)


def logits_like_a_model(rng: np.random.Generator, n: int) -> np.ndarray:
    """Float32 logits with a few strong candidates and a long tail, as a model's look."""
    x = rng.normal(0.0, 2.0, n).astype(np.float32)
    x[rng.choice(n, 8, replace=False)] += rng.uniform(6.0, 12.0, 8).astype(np.float32)
    return x


def mixed_like_knn(rng: np.random.Generator, logits: np.ndarray) -> np.ndarray:
    """Float64 log-probabilities with -inf where the mixture is 0 (core/knn.py mix_logits' output)."""
    x = logits.astype(np.float64)
    p = np.exp(x - x.max())
    p /= p.sum()
    p[rng.random(len(p)) < 0.3] = 0.0
    p[int(np.argmax(logits))] += 0.2
    with np.errstate(divide="ignore"):
        return np.log(p / p.sum())


def per_call_us(fn, inputs) -> float:
    t = time.perf_counter()
    for x in inputs:
        fn(x)
    return (time.perf_counter() - t) / len(inputs) * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--calls", type=int, default=300, help="sampling calls per timed repeat")
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--top-p", type=float, default=0.95)
    ap.add_argument("--top-k", type=int, default=40)
    args = ap.parse_args()
    import llama_cpp

    rng = np.random.default_rng(0)
    model = [logits_like_a_model(rng, VOCAB) for _ in range(args.calls)]
    mixed = [mixed_like_knn(rng, x) for x in model]
    params = (args.temperature, args.top_p, args.top_k)

    # 1. It works on our arrays, and a seed reproduces the draws (and another seed does not).
    draws = {}
    for seed in (7, 7, 8):
        chain = ChainSampler(*params, seed)
        draws.setdefault(seed, []).append([chain.sample(x) for x in mixed[:200]])
        chain.close()
    same, other = draws[7][0] == draws[7][1], draws[7][0] != draws[8][0]
    print(f"llama.cpp chain on our mixed logits: seed 7 twice identical {same}; seed 8 differs {other}")
    helpers = InternalsSampler(*params, 7)
    print(f"  llama-cpp-python's own helpers, seed 7: the same draws {[helpers.sample(x) for x in mixed[:200]] == draws[7][0]}")
    ok = all(-np.inf < m[t] for m, t in zip(mixed, draws[7][0]))
    print(f"  never draws a token the mixture gives probability 0: {ok}")

    # 2. The same distribution as the numpy sampler (frequencies over many draws of one array).
    x, n = model[0], 20000
    s, chain = Sampler(*params, seed=1), ChainSampler(*params, 2)
    ids, probs = s.probabilities(x)
    a = np.bincount([s.sample(x) for _ in range(n)], minlength=VOCAB)[ids] / n
    b = np.bincount([chain.sample(x) for _ in range(n)], minlength=VOCAB)[ids] / n
    chain.close()
    print(f"  same distribution as numpy: largest |frequency - p| numpy {np.abs(a - probs).max():.5f}, "
          f"llama.cpp {np.abs(b - probs).max():.5f} ({len(ids)} candidates, {n} draws)")

    # 3. Time per call, repeats alternating which runs first.
    s, chain = Sampler(*params, seed=1), ChainSampler(*params, 1)
    greedy, helpers = Sampler(0.0), InternalsSampler(*params, 1)
    variants = {
        "numpy Sampler.sample, model logits (float32)": lambda: per_call_us(s.sample, model),
        "llama.cpp chain, model logits (float32)": lambda: per_call_us(chain.sample, model),
        "numpy Sampler.sample, kNN-mixed (float64, -inf)": lambda: per_call_us(s.sample, mixed),
        "llama.cpp chain, kNN-mixed (float64, -inf)": lambda: per_call_us(chain.sample, mixed),
        "  of which copying into llama_token_data": lambda: per_call_us(chain.load, model),
        "llama_cpp._internals helpers, model logits": lambda: per_call_us(helpers.sample, model),
        "greedy argmax (temperature 0, unchanged)": lambda: per_call_us(greedy.sample, model),
    }
    times = {k: [] for k in variants}
    for v in variants.values():        # warm up
        v()
    names = list(variants)
    for r in range(args.repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            times[name].append(variants[name]())
    chain.close()
    print(f"\nper call, {VOCAB}-entry vocabulary, temperature {args.temperature}, top-k {args.top_k}, "
          f"top-p {args.top_p}; {args.repeats} alternating repeats of {args.calls} calls")
    print(f"llama-cpp-python {llama_cpp.__version__}, numpy {np.__version__}")
    print(f"{'':52} {'median us':>10} {'min us':>10}")
    for name, t in times.items():
        print(f"{name:52} {statistics.median(t):10.1f} {min(t):10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
