"""Matching quality: does the right stored chunk come up on phrasings users really type,
and stay away from sentences where it does not belong?

Store: the paper's PII profile (appendix G.5/G.6), first 4 prefixes per field.
Positives: held-out phrasings (never stored), each after an email opening.
Negatives: every word boundary of ordinary email sentences.

Variants, each at the threshold where it makes no false insertion on the negatives
(and at the one that allows one):
  paper      raw state before the entry token, candidates in the entry token's trie (Eq. 3)
  paper-all  the same state, no trie (all contexts)
  raw-after  raw state after the newest token, all contexts
  whitened   whitened state after the newest token, all contexts (slot gate only)
  chunkwise  whitened gate + local vectors + words (core/matching.py), the shipped matcher

    python bench/matching.py            # prints tables, writes docs/img/matching.png
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine, save_plot, table  # noqa: E402
from chunkwise.core import Engine  # noqa: E402
from chunkwise.core.encoding import Encoder, local_mean, local_rows, normalize_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OPENING = "Hi Tom,\n\nThanks for getting back to me so quickly. "
STORED_PER_FIELD = 4


def load_sets():
    profile = {k: v for k, v in json.loads((ROOT / "tests/data/pii_profile_paper.json").read_text()).items()
               if not k.startswith("_")}
    tuning = json.loads((ROOT / "tests/data/pii_phrasings.json").read_text())
    heldout = json.loads((ROOT / "bench/data_heldout_b.json").read_text())
    heldout_c = json.loads((ROOT / "bench/data_heldout_c.json").read_text())
    tune_pos = [(f, c) for f, e in profile.items() for c in e["contexts"][STORED_PER_FIELD:]]
    tune_pos += [(f, p) for f, items in tuning["positives"].items() for p in items]
    sets = {
        "A (tuning: unstored paper prefixes + tests/data phrasings)": (tune_pos, tuning["negatives"]),
        "B (held out: bench/data_heldout_b.json)": (
            [(f, p) for f, items in heldout["positives"].items() for p in items], heldout["negatives"]),
        "C (held out: bench/data_heldout_c.json)": (
            [(f, p) for f, items in heldout_c["positives"].items() for p in items], heldout_c["negatives"]),
    }
    return profile, sets


def negative_prompts(sentences):
    out = []
    for s in sentences:
        words = s.split(" ")
        out += [OPENING + " ".join(words[:i]) for i in range(2, len(words) + 1)]
    return out


class Variants:
    """Scores every variant for one prompt: {variant: (field or None, score)}."""

    def __init__(self, engine: Engine, profile: dict):
        self.e = engine
        self.rt = engine.runtime
        self.labels = {c.id: c.label for c in engine.store.list_chunks()}
        enc = Encoder(self.rt)
        keys_pre, keys_post, entries, fields = [], [], [], []
        for field, entry in profile.items():
            for ctx in entry["contexts"][:STORED_PER_FIELD]:
                toks, _ = enc.split(ctx, entry["value"])
                out = self.rt.sync(toks, last=2)
                keys_pre.append(out.hidden[0])
                keys_post.append(out.hidden[1])
                entries.append(toks[-1])
                fields.append(field)
        self.keys_pre = normalize_rows(np.stack(keys_pre))
        self.keys_post = normalize_rows(np.stack(keys_post))
        self.keys_white = engine.matcher.stats.transform(np.stack(keys_post))
        self.entries = np.array(entries)
        self.fields = np.array(fields)

    def __call__(self, prompt: str) -> dict:
        toks = self.rt.tokenize(prompt)
        out = self.rt.sync(toks, last=max(2, local_rows(len(toks))))          # pre needs two rows
        pre, post, local = out.hidden[-2], out.hidden[-1], local_mean(out.hidden)
        res = {}
        s = self.keys_pre @ (pre / np.linalg.norm(pre))
        trie = self.entries == toks[-1]
        res["paper"] = (self.fields[trie][np.argmax(s[trie])], float(s[trie].max())) if trie.any() else (None, -9.0)
        res["paper-all"] = (self.fields[np.argmax(s)], float(s.max()))
        s = self.keys_post @ (post / np.linalg.norm(post))
        res["raw-after"] = (self.fields[np.argmax(s)], float(s.max()))
        s = self.keys_white @ self.e.matcher.stats.transform(post)[0]
        res["whitened"] = (self.fields[np.argmax(s)], float(s.max()))
        cands = self.e.matcher.candidates(post, local, prompt)
        res["chunkwise"] = ((self.labels[cands[0].chunk_id], cands[0].match) if cands else (None, -9.0))
        return res


def evaluate(scores_pos, fields_pos, scores_neg, variant, cutoff=None):
    right = np.array([s[variant][0] == f for s, f in zip(scores_pos, fields_pos)])
    pos = np.array([s[variant][1] for s in scores_pos])
    neg = np.sort(np.array([s[variant][1] for s in scores_neg]))[::-1]
    out = {"top1": right.mean()}
    for fp in (0, 1):
        cut = neg[fp] + 1e-9
        out[f"recall@{fp}FP"] = ((pos >= cut) & right).mean()
    if cutoff is not None:
        out["recall@default"] = ((pos >= cutoff) & right).mean()
        out["FP@default"] = int((neg >= cutoff).sum())
    return out, pos, neg, right


def main() -> None:
    profile, sets = load_sets()
    engine = Engine(n_threads=2)
    for field, entry in profile.items():
        engine.store.add_chunk(entry["value"], "pii", entry["contexts"][:STORED_PER_FIELD], label=field)
    engine.refresh()
    cal = engine.matcher.calibration
    cutoff = cal.raw_cutoff(engine.threshold)
    variants = Variants(engine, profile)
    print(f"Machine: {machine()}")
    print(f"Model: {engine.runtime.name}; store: {len(engine.matcher)} contexts of {len(profile)} fields; "
          f"calibrated background {cal.background:.3f}; default threshold {engine.threshold} -> cutoff {cutoff:.3f}\n")
    curves = {}
    for name, (positives, negatives) in sets.items():
        sp = [variants(OPENING + p) for _, p in positives]
        fields = [f for f, _ in positives]
        sn = [variants(p) for p in negative_prompts(negatives)]
        rows = []
        for v in ("paper", "paper-all", "raw-after", "whitened", "chunkwise"):
            res, pos, neg, right = evaluate(sp, fields, sn, v, cutoff if v == "chunkwise" else None)
            rows.append([v, f"{res['top1']:.2f}", f"{res['recall@0FP']:.2f}", f"{res['recall@1FP']:.2f}",
                         f"{res.get('recall@default', float('nan')):.2f}" if v == "chunkwise" else "-",
                         str(res.get("FP@default", "-"))])
            if v == "chunkwise":
                taus = np.linspace(0, 0.6, 25)
                cuts = [cal.raw_cutoff(t) for t in taus]
                curves[name] = (taus, [((pos >= c) & right).mean() for c in cuts],
                                [(neg >= c).mean() * 100 for c in cuts])
        print(f"Set {name}: {len(positives)} positive phrasings, {len(sn)} negative positions")
        print(table(["variant", "right chunk first", "recall, 0 false ins.", "recall, 1 false ins.",
                     "recall @ default", "false ins. @ default"], rows))
        print()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for (name, (taus, rec, fpr)), color in zip(curves.items(), ("tab:blue", "tab:orange", "tab:green")):
        short = name.split(" ")[0]
        ax.plot(taus, rec, color=color, label=f"set {short}: recall (right chunk inserted)")
        ax.plot(taus, np.array(fpr) / 100, color=color, linestyle="--", label=f"set {short}: false insertions / position")
    ax.axvline(engine.threshold, color="grey", linestyle=":", label="default threshold")
    ax.set_xlabel("threshold (calibrated scale)")
    ax.set_ylabel("rate")
    ax.set_title(f"Chunk matching with {engine.runtime.name}")
    ax.legend(fontsize=7)
    print("plot:", save_plot(fig, "matching.png"))


if __name__ == "__main__":
    main()
