"""Which field comes next, read three ways at each positive case of bench/personal.py (no generation).

The slot classifier (core/slots.py) decides whether and which of the user's values goes at the
cursor.  Issue 10 asks for evidence the model itself gives; two such readings are compared with it:

  value PMI     the model's log-probability of each of the user's values (its first N tokens, per
                token) after the text, minus the same after a bare line break: the value the text
                calls for most
  field probe   the model asked to name the field: "<text> (that is my" and the log-probability of
                the first token of each chunk's label (" phone", " email", ...), minus the same after
                a bare line break
  classifier    the user's chunk with the highest type agreement (ChunkMatcher.type_agreement)

Printed: for how many positives each reading's best chunk is the right one, over all of them and
over those the classifier misses at the type cut (the profile only, as bench/slot_reading.py reads
it).  Dev split unless told.

    python bench/model_readings.py --split dev
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.common import machine, table  # noqa: E402
from bench.personal import body_prompt, load_cases  # noqa: E402
from bench.slot_reading import user_engines  # noqa: E402
from chunkwise.core.encoding import local_mean, local_rows  # noqa: E402

NEUTRAL = "\n"                 # the text the readings are compared against
PROBE = " (that is my"


def log_softmax(row: np.ndarray) -> np.ndarray:
    x = row.astype(np.float64)
    x -= x.max()
    return x - np.log(np.exp(x).sum())


def value_logprob(rt, text: str, value: str, n: int) -> float:
    """Mean log-probability per token of the first *n* tokens of *value* after *text* (cache reset)."""
    rt.reset()
    t = rt.tokenize(text, add_special=True)
    v = rt.tokenize(" " + value.strip(), add_special=False)[:n]
    out = rt.eval(t + v, outputs=list(range(len(t) - 1, len(t) + len(v) - 1)), hidden=False)
    return float(np.mean([log_softmax(out.logits[i])[v[i]] for i in range(len(v))]))


def probe_logprobs(rt, text: str, first_tokens: dict) -> dict:
    """log P(first token of each label | text + PROBE), by chunk id."""
    rt.reset()
    rt.sync(rt.tokenize(text, add_special=True), hidden=False)
    lp = rt.peek(rt.tokenize(PROBE, add_special=False))
    return {c: float(lp[t]) for c, t in first_tokens.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("--tokens", type=int, default=4, help="value tokens the value PMI reads")
    args = ap.parse_args()
    positives = [c for c in load_cases(args.split) if c["kind"] == "positive"]
    right = {"value PMI": 0, "field probe": 0, "classifier": 0}
    weak = dict.fromkeys(right, 0)      # right, among the positives the classifier misses at the type cut
    cases, misses = 0, 0
    for items, engine, field_of, profile in user_engines(positives):
        rt, m = engine.runtime, engine.matcher
        values = {c: profile["fields"][f]["value"] for c, f in field_of.items()}
        labels = {c: rt.tokenize(" " + m.chunk_info(c)["label"].lower(), add_special=False)[0] for c in field_of}
        base_value = {c: value_logprob(rt, NEUTRAL, v, args.tokens) for c, v in values.items()}
        base_probe = probe_logprobs(rt, NEUTRAL, labels)
        for case in items:
            text = body_prompt(case["text"])
            pmi = {c: value_logprob(rt, text, v, args.tokens) - base_value[c] for c, v in values.items()}
            probe = {c: lp - base_probe[c] for c, lp in probe_logprobs(rt, text, labels).items()}
            rt.reset()
            tokens = rt.tokenize(text, add_special=True)
            out = rt.sync(tokens, last=local_rows(len(tokens)), hidden=True, copy=True)
            agreement = m.type_agreement(out.hidden[-1], local_mean(out.hidden), text)
            best = max(agreement, key=agreement.get)
            missed = field_of[best] != case["field"] or agreement[best] < m.type_cutoff
            for name, reading in (("value PMI", pmi), ("field probe", probe), ("classifier", agreement)):
                hit = field_of[max(reading, key=reading.get)] == case["field"]
                right[name] += hit
                weak[name] += hit and missed
            cases += 1
            misses += missed
    print(f"Machine: {machine()}\nSplit {args.split}: {cases} positives (the profile only), value PMI over "
          f"{args.tokens} tokens\n")
    print(table(["reading", "best chunk is the right one", "... where the classifier misses at the cut"],
                [[name, f"{n}/{cases} ({100 * n / max(cases, 1):.0f}%)", f"{weak[name]}/{misses}"]
                 for name, n in right.items()]))
    print("\n(\"misses at the cut\": its best chunk is the wrong one, or reads under the type cut)")


if __name__ == "__main__":
    main()
