"""What the slot gate reads at each case of bench/personal.py, and the writer-probe bar swept offline.

For every case of a split: the slot classifier's top classes at the cursor, the best typed
chunk's agreement (the value the type cut compares), the writer probe's log-odds and the person
cue (core/whose.py).  Then the gate is replayed for several probe bars without generating:
a case counts as filled when agreement >= the type cut and the gate lets it through (the words,
the probe, a place named nearer than the writer, and the classifier's someone-else's reading,
core/matching.py OWN_OVER_OTHERS).  The replay
ignores what generation adds (line breaks, the learned store), so bench/personal.py stays the
measure; this shows why a case fails and how a bar trades right values for misplaced ones.

    python bench/slot_reading.py --split dev            # tune on dev only
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.common import table  # noqa: E402
from bench.personal import DATA, body_prompt, build_store, load_cases  # noqa: E402
from chunkwise.core import ChunkStore, Engine  # noqa: E402
from chunkwise.core import whose  # noqa: E402
from chunkwise.core.matching import someone_elses_here  # noqa: E402
from chunkwise.core.encoding import local_mean, local_rows  # noqa: E402
from chunkwise.core.slots import features  # noqa: E402

BARS = (-0.5, -1.0, -1.5, -2.0, -2.5)


def user_engines(cases: list[dict]):
    """For each user of *cases* in turn: (their cases, an engine on their profile alone, chunk id ->
    field, their profile), one runtime shared; the store is closed and the runtime too at the end."""
    profiles = json.loads((DATA / "profiles.json").read_text(encoding="utf-8"))
    by_user = defaultdict(list)
    for c in cases:
        by_user[c["user"]].append(c)
    rt = None
    with tempfile.TemporaryDirectory() as tmp:
        for user, items in sorted(by_user.items()):
            path = Path(tmp) / f"{user}.db"
            field_of = build_store(path, profiles[user])
            engine = Engine(store=ChunkStore(path), n_threads=2, runtime=rt)
            rt = engine.runtime
            engine.refresh()
            yield items, engine, field_of, profiles[user]
            engine.store.close()
    if rt is not None:
        rt.close()


def read_cases(split: str, verbose: bool) -> tuple[list[dict], float]:
    rows, cut = [], 0.0
    for items, engine, field_of, profile in user_engines(load_cases(split)):
        rt, m = engine.runtime, engine.matcher
        cut = m.type_cutoff
        for c in items:
            text = body_prompt(c["text"])
            rt.reset()
            tokens = rt.tokenize(text, add_special=True)
            out = rt.sync(tokens, last=local_rows(len(tokens)), hidden=True, copy=True)
            hidden, local = out.hidden[-1], local_mean(out.hidden)                # (d,), (d,)
            probs = m.slots.predict(features(m.stats, hidden[None], local[None], [text]))[0]
            agreement, others = m.type_readings(hidden, local, text)
            agreement = m.labelled(agreement, text)      # as ChunkMatcher.typed_proposal: a label's own field
            best, score = max(agreement.items(), key=lambda kv: kv[1]) if agreement else (None, 0.0)
            # The best reading among the user's chunks of another field (--clear-lead's and --rival's rival): none
            # where the user's lead-in words settle it, as in decoding (ChunkMatcher.settled_by_words).
            rival = m.rival_of(best, agreement, text) if best is not None else 0.0
            row = {"id": c["id"], "kind": c["kind"], "field": c.get("field"), "best": field_of.get(best),
                   "agreement": score, "rival": rival, "someone_elses": others,
                   "probe": whose.writer_evidence(rt), "cue": whose.person_cue(text),
                   "label": whose.form_label(text),
                   # Decoder.a_places_detail: a place named nearer than the writer, and a contact detail
                   "place": best is not None and whose.a_places_detail(
                       text, m.typed_field(best), profile["fields"][field_of[best]]["value"]),
                   "top": [(m.slots.classes[i], round(float(probs[i]), 2)) for i in np.argsort(-probs)[:3]]}
            rows.append(row)
            if verbose:
                print(f"{row['id']} {row['kind'][:3]} {str(row['field']):22} top={row['top']} "
                      f"best={row['best']}:{score:.2f} probe={row['probe']:.2f} cue={row['cue']} "
                      f"| {c['text'][-50:]!r}", flush=True)
    return rows, cut


def replay(rows: list[dict], cut: float, bar: float, cue: bool = True, lead: tuple[float, float] | None = None,
           rival_times: float = 0.0) -> dict:
    """*lead* (share, times): the tried clear lead (bench/data/tried/clear-lead.patch): a reading at
    least *times* its rival's passes at *share* of the cut.  *rival_times*: a reading fills only where
    it is at least that many times the best reading of another of the user's fields (--rival)."""
    counts = {"right": 0, "wrong": 0, "third_party": 0, "neutral": 0}
    for r in rows:
        through = whose.writer_owns(r["cue"] if cue else None, lambda: r["probe"], bar, label=r["label"])
        passes = r["agreement"] >= cut or (lead is not None and r["agreement"] >= lead[0] * cut
                                           and r["agreement"] >= lead[1] * r["rival"])
        filled = (passes and through and not r["place"] and r["agreement"] >= rival_times * r["rival"]
                  and not someone_elses_here(r["agreement"], r["someone_elses"]))
        if r["kind"] == "positive":
            counts["right"] += filled and r["best"] == r["field"]
            counts["wrong"] += filled and r["best"] != r["field"]
        else:
            counts[r["kind"]] += filled
    return counts


def corpus_cues() -> str:
    """How the person cue reads the shipped training corpora (never evaluated on): own details
    should rarely read as someone else's, third-party ones often."""
    from chunkwise.core.slots import LABEL_FIELDS, NONE, THIRD_PARTY, TRAINING_FILES, training_items
    from chunkwise.core.text import label_line

    own, third = Counter(), Counter()
    own_labels, third_labels = [], []
    says_my = Counter()                 # whose.says_my: where the classifier's someone-else's reading is not asked
    for path in TRAINING_FILES:
        data = json.loads(path.read_text(encoding="utf-8"))
        own_texts = [t for texts in data["fields"].values() for t in texts]
        own.update(whose.person_cue(t) for t in own_texts)
        third.update(whose.person_cue(t) for t in data.get("third_party", []))
        says_my.update(own=sum(map(whose.says_my, own_texts)),
                       third=sum(map(whose.says_my, data.get("third_party", []))))
        own_labels += [t for t in own_texts if whose.form_label(t)]
        third_labels += [t for t in data.get("third_party", []) if whose.form_label(t)]
    rows = [[name, sum(c.values()), c[whose.WRITER], c[whose.OTHERS], c[None], len(labels), says_my[key]]
            for name, c, labels, key in (("the writer's own details", own, own_labels, "own"),
                                         ("someone else's details", third, third_labels, "third"))]
    # What slots.LABEL_FIELDS rests on: the writer's own labels by their last word, and the fields they are.
    heads: dict[str, Counter] = {}
    for text, field in training_items():
        label = label_line(text)
        if label and field not in (NONE, THIRD_PARTY):
            words_ = label.lower().replace(":", " ").split()
            heads.setdefault(words_[-1], Counter())[field if words_[-1] != "address" or len(words_) == 1
                                                   or words_[-2] not in ("email", "e-mail", "web")
                                                   else f"{field} ({words_[-2]} address)"] += 1
    by_head = table(["label's last word", "the writer's own labels: fields"],
                    [[w, ", ".join(f"{f} {n}" for f, n in heads.get(w, Counter()).most_common())] for w in LABEL_FIELDS])
    return (table(["training fragments", "n", "cue: writer", "cue: someone else", "no cue",
                   "bare form label (whose.form_label)", "\"my\" in the last words (whose.says_my)"], rows)
            + "\n\nsomeone else's details read as a bare form label: " + "; ".join(repr(t) for t in third_labels)
            + "\n\n" + by_head)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--clear-lead", action="store_true", help="replay the tried clear lead (shares of the cut, times the rival)")
    ap.add_argument("--rival", action="store_true", help="replay a bar on the best reading against another field's")
    args = ap.parse_args()
    if args.rival:
        rows, cut = read_cases(args.split, args.verbose)
        n = {k: sum(r["kind"] == k for r in rows) for k in ("positive", "third_party", "neutral")}
        out = []
        for times in (0.0, 1.25, 1.5, 2.0, 2.5, 3.0):
            c = replay(rows, cut, whose.OWNER_MIN, True, rival_times=times)
            out.append([f"{times:g}", f"{c['right']}/{n['positive']}", c["wrong"], f"{c['third_party']}/{n['third_party']}",
                        f"{c['neutral']}/{n['neutral']}"])
        print(f"### {args.split}: the best reading against another field's, replayed at the cursor "
              f"(type cut {cut:.2f}, probe bar {whose.OWNER_MIN})\n")
        print(table(["times the rival", "right", "wrong field", "third party", "neutral"], out))
        for r in rows:
            if r["kind"] == "positive" and r["agreement"] >= cut and r["agreement"] < 3 * r["rival"]:
                print(f"  {r['id']} {r['field']}: best {r['best']} {r['agreement']:.2f}, rival {r['rival']:.2f}")
        return
    if args.clear_lead:
        rows, cut = read_cases(args.split, args.verbose)
        n = sum(r["kind"] == "positive" for r in rows)
        out = []
        for lead in (None, (0.71, 1.0), (0.57, 1.0), (0.57, 2.0), (0.57, 3.0), (0.57, 4.0)):
            c = replay(rows, cut, whose.OWNER_MIN, True, lead)
            out.append(["off" if lead is None else f"{lead[0]} / {lead[1]:g}", f"{c['right']}/{n}", c["wrong"],
                        c["third_party"], c["neutral"]])
        print(f"### {args.split}: the clear lead replayed at the cursor (type cut {cut:.2f}, probe bar {whose.OWNER_MIN})\n")
        print(table(["share of the cut / times the rival", "right", "wrong field", "third party", "neutral"], out))
        for r in rows:          # the positives whose best reading is the wrong chunk or under the cut
            if r["kind"] == "positive" and (r["best"] != r["field"] or r["agreement"] < cut):
                print(f"  {r['id']} {r['field']}: best {r['best']} {r['agreement']:.2f}, rival {r['rival']:.2f}")
        return
    print("### the person cue on the shipped training corpora\n")
    print(corpus_cues(), flush=True)
    rows, cut = read_cases(args.split, args.verbose)
    n = {k: sum(r["kind"] == k for r in rows) for k in ("positive", "third_party", "neutral")}
    out = []
    for cue in (False, True):
        for bar in BARS:
            c = replay(rows, cut, bar, cue)
            out.append(["on" if cue else "off", bar, f"{c['right']}/{n['positive']}", c["wrong"],
                        f"{c['third_party']}/{n['third_party']}", f"{c['neutral']}/{n['neutral']}",
                        c["right"] - 2 * (c["wrong"] + c["third_party"] + c["neutral"])])
    missed = [r for r in rows if r["kind"] == "positive" and r["agreement"] >= cut and r["best"] == r["field"]
              and not whose.writer_owns(None, lambda r=r: r["probe"], -0.5)]
    print(f"\n{len(missed)} positives with the right field above the type cut are turned away by the "
          f"probe alone at the old bar -0.5: {' '.join(r['id'] for r in missed)}")
    print(f"\n### {args.split}: type cut {cut:.2f}\n")
    print(table(["person cue", "probe bar", "right", "wrong field", "third party", "neutral",
                 "right - 2 x errors"], out))


if __name__ == "__main__":
    main()
