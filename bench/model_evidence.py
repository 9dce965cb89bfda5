"""Tried and not shipped: the model's own evidence of which of the user's fields comes next.

Issue 10 suggests asking the model itself: how plausible the user's stored value is at the
cursor, or which kind of detail the model expects.  Two readings, each over the cases of
``bench/personal.py`` (the users' profiles alone, no generation), against the slot classifier
that ships (``core/slots.py``):

* **value reading**: log P(" " + value, or "\\n" + value, first 8 tokens | text) for each of the
  user's values, minus the same value's mean over that user's neutral openings (its pointwise
  mutual information with the text, calibrated per value; the dev neutral openings serve as the
  calibration set, which flatters the reading);
* **field words**: the model's log-probability of naming each field after a what-if aside
  ("<text> (my" + " phone number" / " email address" / " GitHub"…), calibrated the same way.

For each: how often the user's right field ranks first among their fields (positives), and,
among the places the classifier does fill, where the reading ranks the field it filled: a
reading that could veto wrong fields would rank them low and right ones high.

    python bench/model_evidence.py --split dev
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.common import machine, table  # noqa: E402
from bench.personal import body_prompt, load_cases  # noqa: E402
from bench.slot_reading import read_cases, user_engines  # noqa: E402

VALUE_TOKENS = 8
ASIDES = (" (my", " (that is my")
FIELD_WORDS = {"name": ["name"], "phone": ["phone number", "mobile number", "number"],
               "email": ["email address", "email", "e-mail"], "address": ["address", "home address", "postal address"],
               "website": ["website", "site", "web page"], "github": ["GitHub"], "linkedin": ["LinkedIn"],
               "company": ["company", "employer"], "job_title": ["job title", "job", "role"],
               "iban": ["IBAN", "bank account"], "snippet_availability": ["availability", "schedule"],
               "snippet_signoff_line": ["closing"]}


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64) - x.max()
    return x - np.log(np.exp(x).sum())


def continuation_lp(rt, last_logits: np.ndarray, tokens: list[int]) -> float:
    """log P(tokens | the cached text), the text's last logits given; the cache is left as it was."""
    n, lp = len(rt.tokens), log_softmax(last_logits)[tokens[0]]
    if len(tokens) > 1:
        out = rt.eval(tokens[:-1], outputs="all", hidden=False)
        lp += sum(log_softmax(out.logits[i])[tokens[i + 1]] for i in range(len(tokens) - 1))
        rt.truncate(n)
    return float(lp)


def readings(split: str) -> list[dict]:
    rows = []
    for items, engine, _field_of, profile in user_engines(load_cases(split)):
        rt, fields = engine.runtime, profile["fields"]
        values = {f: [rt.tokenize(sep + e["value"], add_special=False)[:VALUE_TOKENS] for sep in (" ", "\n")]
                  for f, e in fields.items()}
        for c in items:
            text = body_prompt(c["text"])
            rt.reset()
            last = rt.sync(rt.tokenize(text, add_special=True), last=1, hidden=False).logits[-1].copy()
            row = {"id": c["id"], "kind": c["kind"], "field": c.get("field"), "user": c["user"],
                   "value": {f: max(continuation_lp(rt, last, t) for t in values[f]) for f in fields}}
            for aside in ASIDES:
                lead = rt.tokenize(aside, add_special=False)
                n = len(rt.tokens)
                after = rt.eval(lead, outputs="last", hidden=False).logits[-1].copy()
                row[aside] = {f: float(np.logaddexp.reduce([
                    continuation_lp(rt, after, rt.tokenize(" " + w, add_special=False)) for w in FIELD_WORDS[f]]))
                    for f in fields if f in FIELD_WORDS}
                rt.truncate(n)
            rows.append(row)
    return rows


def calibrated(rows: list[dict], key: str) -> dict[str, dict[str, float]]:
    """Each row's reading minus its user's mean over their neutral openings, field by field."""
    mean = {}
    for user in {r["user"] for r in rows}:
        neutral = [r[key] for r in rows if r["user"] == user and r["kind"] == "neutral"]
        mean[user] = {f: float(np.mean([n[f] for n in neutral])) for f in neutral[0]}
    return {r["id"]: {f: v - mean[r["user"]][f] for f, v in r[key].items()} for r in rows}


def summary(rows: list[dict], slots: list[dict], cut: float) -> str:
    by_id = {s["id"]: s for s in slots}
    positives = [r for r in rows if r["kind"] == "positive"]
    lines = []
    for key, name in (("value", "value reading"), *((a, f"field words after “{a.strip()}”") for a in ASIDES)):
        cal = calibrated(rows, key)
        first = sum(max(cal[r["id"]], key=cal[r["id"]].get) == r["field"] for r in positives)
        ranks: dict[str, Counter] = {"right": Counter(), "wrong field": Counter(), "someone else's": Counter()}
        for r in rows:
            s = by_id[r["id"]]
            if s["best"] is None or s["agreement"] < cut or s["best"] not in cal[r["id"]]:
                continue
            order = sorted(cal[r["id"]], key=cal[r["id"]].get, reverse=True)
            kind = ("right" if s["best"] == r["field"] else "wrong field") if r["kind"] == "positive" else \
                "someone else's" if r["kind"] == "third_party" else None
            if kind:
                ranks[kind][min(order.index(s["best"]), 3)] += 1
        cell = lambda c: " / ".join(str(c[i]) for i in range(4)) if c else "-"
        lines.append([name, f"{first}/{len(positives)}", cell(ranks["right"]), cell(ranks["wrong field"]),
                      cell(ranks["someone else's"])])
    classifier_first = sum(by_id[r["id"]]["best"] == r["field"] for r in positives)
    lines.insert(0, ["slot classifier (shipped)", f"{classifier_first}/{len(positives)}", "", "", ""])
    return table(["reading", "right field first (positives)",
                  "filled rightly: the field's rank 1 / 2 / 3 / 4+", "filled with a wrong field: rank",
                  "filled where someone else's goes: rank"], lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    args = ap.parse_args()
    rows = readings(args.split)
    slots, cut = read_cases(args.split, False)
    print(f"Machine: {machine()}\n\n### {args.split} split (type cut {cut:.2f})\n")
    print(summary(rows, slots, cut))


if __name__ == "__main__":
    main()
