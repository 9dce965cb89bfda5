"""Drafting (experimental, opt-in): does verifying drafts in one batch pay on this machine,
and does it keep greedy output unchanged?

1. Numerics: logits of k tokens decoded in one batch vs one at a time.
2. Cost: one llama_decode of 1, 2, 3, 4, 6, 8 tokens.
3. End to end: 64 greedy tokens with and without n-gram drafts on the suite's
   email prompts and on a reply that quotes the original email.

    python bench/drafting.py
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine, save_plot, table  # noqa: E402
from bench.decoding import PLAIN_PROMPTS  # noqa: E402
from chunkwise.core import Engine, GenerationRequest  # noqa: E402
from tests.test_drafting import QUOTE  # noqa: E402

# A reply that quotes the original and then restates it: most of the answer is in the prompt.
RESTATE = """Subject: Re: Proposal wording

Hi Sam,

You asked me to resend the paragraph from the proposal so you can paste it into the board report. Here it is:

> Over the next twelve months we will move all customer records to the new system, train every branch team in two half-day sessions, and retire the old database by the end of September. The budget for the whole project is 240,000 euros, of which 60,000 is set aside for training.

Here is the same paragraph again without the quote marks, ready to paste:

Over the next twelve months"""


def main() -> None:
    engine = Engine(n_threads=2)
    rt = engine.runtime
    profile = rt.batch_profile()
    print(f"Machine: {machine()}\nModel: {rt.name}\n")
    print(f"This build decodes batches of up to {profile.exact} token(s) bit-identically to one at a time; "
          f"lossless drafts are at most {profile.exact - 1} token(s) long here.\n")
    # 1. numerics
    toks = rt.tokenize("Dear Mr. Patel,\n\nThank you for your email about the new project. We believe that")
    rows = []
    for hidden in (False, True):         # off: no store; on: chunks or kNN active (outputs for every token)
        for start in (12, 6):
            base, extra = toks[:start], toks[start:start + 5]
            rt.reset()
            rt.sync(base, hidden=hidden)
            seq = [rt.eval([t], hidden=hidden).logits[0].copy() for t in extra]
            for n in (2, 3, 4, 5):
                rt.reset()
                rt.sync(base, hidden=hidden)
                out = rt.eval(extra[:n], outputs="all", hidden=hidden).logits
                rows.append(["on" if hidden else "off", start, n,
                             " ".join(f"{np.abs(out[i] - seq[i]).max():.3f}" for i in range(n))])
    print("Largest logit difference, batched vs one token at a time, per position in the batch:")
    print(table(["hidden states", "after token", "batch size", "max |diff| at positions 0..n-1"], rows) + "\n")
    # 2. cost
    text = rt.tokenize((Path(__file__).resolve().parents[1] / "core/data/background_emails.txt").read_text())[:700]
    cost, rows = {}, []
    for n in (1, 2, 3, 4, 6, 8):
        rt.reset()
        rt.sync(text[:100], hidden=False)
        pos, ts = 100, []
        for _ in range(30):
            t = time.perf_counter()
            rt.eval(text[pos:pos + n], outputs="all", hidden=False)
            ts.append(time.perf_counter() - t)
            pos += n
        cost[n] = statistics.median(ts) * 1000
        rows.append([n, f"{cost[n]:.1f}", f"{cost[n] / cost[1]:.2f}"])
    print("One llama_decode of n tokens (all logits):")
    print(table(["tokens", "ms (median of 30)", "x one token"], rows) + "\n")
    # 3. end to end
    rows, speedups = [], []
    for prompt in PLAIN_PROMPTS + [QUOTE, RESTATE]:
        runs = {False: [], True: []}
        for _ in range(3):
            for draft in (False, True):
                rt.reset()
                runs[draft].append(engine.generate(GenerationRequest(prompt, max_tokens=64, draft=draft)))
        a, b = runs[False][-1], runs[True][-1]
        agree = next((i for i, (x, y) in enumerate(zip(a.text, b.text)) if x != y), min(len(a.text), len(b.text)))
        ta = statistics.median(r.stats.seconds for r in runs[False])
        tb = statistics.median(r.stats.seconds for r in runs[True])
        speedups.append(ta / tb)
        name = {id(QUOTE): "quoted reply", id(RESTATE): "reply restating a quote"}.get(id(prompt),
                                                                                     repr(prompt[:26]) + "...")
        rows.append([name, a.stats.steps, b.stats.steps, f"{b.stats.draft_accepted}/{b.stats.drafted}",
                     f"{ta / tb:.2f}", "yes" if a.text == b.text else f"first {agree} chars"])
    print("64 greedy tokens, drafts off vs on (lossless policy; 3 alternating runs, median time):")
    print(table(["prompt", "steps off", "steps on", "draft tokens kept", "speed on/off", "same text"], rows))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    ns = sorted(cost)
    ax.plot(ns, [cost[n] for n in ns], marker="o", label="one decode of n tokens")
    ax.plot(ns, [cost[1] * n for n in ns], linestyle="--", label="n single-token decodes")
    ax.set_xlabel("tokens in the batch")
    ax.set_ylabel("ms")
    ax.set_title("Batched verification cost on this CPU")
    ax.legend(fontsize=8)
    print("plot:", save_plot(fig, "drafting.png"))


if __name__ == "__main__":
    main()
