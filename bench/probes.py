"""Which what-if probe tells the writer's own detail from someone else's (core/whose.py OWNER_PROBE).

For every positive and third-party case of the dev sets (bench/data/personal dev split, the paper
profile's dev cases, bench/data/entities/cases.json), the text is run through the default model and
each candidate probe is asked: log P(" my") - log sum P(" his" | " her" | " their" | " your") after
"<text><probe>".  Printed: the AUC of that log-odds, positives against third-party cases, per set and
over all, and for the shipped probe how many of each class pass each bar.  No generation and no gate:
this ranks the evidence; the bench/personal.py, bench/cli_profile.py and bench/entities.py runs decide.

It asks " my" alone, also for the paper profile, whose stored lead-ins speak as a group
(core/whose.py speaks_as_we: the product then counts " our" with " my"), and it scores form-label
cases too, where the product does not ask the probe (whose.form_label): it ranks the probe forms on
one footing, and the end-to-end runs measure what ships.

    python bench/probes.py            # dev sets only (5 to 6 minutes here)
    python bench/probes.py --quoted   # the readings docs/benchmarks.md and core/whose.py quote, both probes
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.common import OUT, machine, table  # noqa: E402
from bench.personal import load_cases  # noqa: E402
from chunkwise.core import whose  # noqa: E402
from chunkwise.core.llama_runtime import LlamaRuntime  # noqa: E402
from chunkwise.core.paths import bundled_model_path  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
PROBES = (" (that is", " — that is", " (i.e.", ", which is", " (that's", ", that's", " - that's", " – that's",
          " — that's", " — it's", " — this is")
BARS = (-2.5, -2.0, -1.5, -1.0, -0.5, 0.0)


def dev_cases() -> list[dict]:
    keep = ("positive", "third_party")
    cases = [dict(c, set="personal") for c in load_cases("dev") if c["kind"] in keep]
    cases += [dict(c, set="paper") for c in json.loads((DATA / "paper" / "dev_cases.json").read_text())["cases"]
              if c["kind"] in keep]
    cases += [dict(c, set="entities") for c in json.loads((DATA / "entities" / "cases.json").read_text())["cases"]
              if c["kind"] in keep]
    return cases


def auc(pos, neg) -> float:
    """P(a positive reads higher than a third-party case), ties counted half."""
    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None]
    return float((p > n).mean() + 0.5 * (p == n).mean())


# Texts whose readings docs/benchmarks.md, core/whose.py, tests/test_slots.py and tools/xvfb_writer_probe.sh quote.
QUOTED = ("Ship to:", "Hi,\n\nShip to:", "Name for the reservation:", "The gym's class schedule is updated weekly at",
          "Billing address:", "Hi,\n\nBilling address:")


def quoted() -> None:
    rt = LlamaRuntime(bundled_model_path(), n_threads=2)
    rows = []
    for text in QUOTED:
        readings = []
        for probe in (" (that is", whose.OWNER_PROBE):
            rt.reset()
            rt.sync(rt.tokenize(text.rstrip(" "), add_special=True), hidden=False)
            readings.append(f"{whose.writer_evidence(rt, probe=probe):.2f}")
        rows.append([repr(text), *readings])
    rt.close()
    text = "\n".join(["# python bench/probes.py --quoted", machine(), "",
                      table(["text", "' (that is' (before)", f"{whose.OWNER_PROBE!r} (shipped)"], rows)])
    print(text)
    (OUT / "probes-quoted.txt").write_text(text + "\n", encoding="utf-8")


def main() -> None:
    if "--quoted" in sys.argv[1:]:
        return quoted()
    rt = LlamaRuntime(bundled_model_path(), n_threads=2)
    cases = dev_cases()
    readings = np.zeros((len(cases), len(PROBES)))
    for i, c in enumerate(cases):
        rt.reset()
        rt.sync(rt.tokenize(c["text"].rstrip(" "), add_special=True), hidden=False)
        for j, probe in enumerate(PROBES):
            readings[i, j] = whose.writer_evidence(rt, probe=probe)
    rt.close()
    sets = ("personal", "paper", "entities")
    pos = np.array([c["kind"] == "positive" for c in cases])
    of = {s: np.array([c["set"] == s for c in cases]) for s in sets}
    rows = [[repr(p) + (" (shipped)" if p == whose.OWNER_PROBE else "")]
            + [f"{auc(readings[pos & of[s], j], readings[~pos & of[s], j]):.3f}" for s in sets]
            + [f"{auc(readings[pos, j], readings[~pos, j]):.3f}"] for j, p in enumerate(PROBES)]
    n = f"{pos.sum()} positives, {(~pos).sum()} third-party cases"
    out = [f"# python bench/probes.py  (dev sets: {n})", machine(), "",
           table(["probe", "AUC personal", "AUC paper", "AUC entities", "AUC all"], rows), ""]
    bars = []
    for p in (" (that is", whose.OWNER_PROBE):
        j = PROBES.index(p)
        for bar in BARS:
            bars.append([repr(p), bar, f"{(readings[pos, j] > bar).mean():.0%}", f"{(readings[~pos, j] > bar).mean():.0%}"])
    out.append(table(["probe", "bar", "positives passing", "third-party passing"], bars))
    text = "\n".join(out)
    print(text)
    (OUT / "probes.txt").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
