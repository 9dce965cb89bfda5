"""Would the slot classifier separate slots from prose better with a wider view of the sentence?

The shipped classifier (core/slots.py) reads the model's state after the last token, the mean of
the last few states (the local vector), and hashed words of the sentence.  Its weak readings (0.2-0.35) are
where both its misses on the personal-details dev split and its false alarms in ordinary prose lie
(docs/benchmarks.md, the clear lead tried).  This trains two classifiers the same way, on the same
shipped corpus and background text, with the same (shortened) schedule: the shipped features, and
the same plus the mean of the last WIDE states (the sentence's meaning in the model's terms, where
the words alone generalise only to words seen in training).  Both are scored at the cursor, the
classifier alone (no gates, no generation):

  personal dev   bench/data/personal dev cases: a positive is right when the user's best field
                 (their profile's fields only) is the right one and reads at the cut or more;
                 wrong when another field does; a third-party or neutral case counts when any does
  prose dev      every word boundary of the personas' dev emails (bench/prose.py's places) with
                 their day-one fields: the places where any reads at the cut or more

at the default cut (0.35) and at the cut where each reaches the shipped features' prose count.
Nothing ships from this; it says whether the wider view is worth retraining every model for.

    python bench/slot_features.py                 # dev only; about ten minutes here
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.common import machine, table  # noqa: E402
from bench.keystrokes import PERSONAS, emails  # noqa: E402
from bench.personal import DATA, body_prompt, load_cases  # noqa: E402
from bench.prose import places  # noqa: E402
from chunkwise.core import slots  # noqa: E402
from chunkwise.core.encoding import BACKGROUND_FILE, BACKGROUND_STRIDE, ModelStats, local_mean  # noqa: E402
from chunkwise.core.llama_runtime import LlamaRuntime  # noqa: E402
from chunkwise.core.paths import bundled_model_path  # noqa: E402

WIDE = 12                 # states in the wide mean
EPOCHS = 300              # both classifiers alike (the shipped one trains 800)
CUT = 0.35                # the type cut at the default threshold
SNIPPET_CLASS = {"snippet_availability": "availability", "snippet_signoff_line": "closing_line"}


def reading_rows(rt: LlamaRuntime, text: str, ends: list[int] | None = None) -> tuple[np.ndarray, ...]:
    """(state, local, wide) rows at the end of *text*, or at each token index in *ends*."""
    rt.reset()
    toks = rt.tokenize(text, add_special=True)
    if ends is not None and len(toks) > 1500:
        raise ValueError("a text this long would be cut")
    toks = toks[-1500:]
    states = rt.eval(toks, outputs="all").hidden                            # (n, d)
    ends = [len(toks) - 1] if ends is None else ends
    first = 1 if toks[0] == rt.bos else 0
    rows = [(states[e], local_mean(states, e, first), local_mean(states, e, first, window=WIDE)) for e in ends]
    return tuple(np.stack(r) for r in zip(*rows))


def packed_passes(rt: LlamaRuntime, texts: list[str]):
    """The training fragments packed as core/slots.py text_features packs them: for each pass, its
    tokens (no BOS) and (start, end, index into *texts*) of each fragment in it."""
    sep = rt.tokenize("\n\n", add_special=False)
    order = list(range(len(texts)))
    random.Random(0).shuffle(order)
    batch, spans = [], []
    for i in order:
        toks = rt.tokenize(texts[i].rstrip(" "), add_special=False)[-120:]
        if batch and len(batch) + len(sep) + len(toks) > slots.PACK_TOKENS:
            yield batch, spans
            batch, spans = [], []
        if batch:
            batch += sep
        spans.append((len(batch), len(batch) + len(toks) - 1, i))
        batch += toks
    if batch:
        yield batch, spans


def training_rows(rt: LlamaRuntime, texts: list[str]) -> tuple[np.ndarray, ...]:
    """(state, local, wide) at the end of each training fragment, packed as core/slots.py text_features
    packs them (the wide mean does not reach into the fragment before)."""
    out = np.zeros((3, len(texts), rt.n_embd), np.float32)
    for batch, spans in packed_passes(rt, texts):
        rt.reset()
        states = rt.eval([rt.bos] + batch, outputs="all").hidden[1:]
        for start, end, i in spans:
            out[:, i] = (states[end], local_mean(states, end, start), local_mean(states, end, start, window=WIDE))
    return tuple(out)


def background_rows(rt: LlamaRuntime) -> tuple[np.ndarray, ...]:
    """(state, local, wide) at every 4th position of the background paragraphs core/encoding.py reads."""
    paragraphs = [p for p in BACKGROUND_FILE.read_text(encoding="utf-8").split("\n\n") if p.strip()][::BACKGROUND_STRIDE]
    rows = []
    for para in paragraphs:
        toks = rt.tokenize(para)[:512]
        if len(toks) < 4:
            continue
        rt.reset()
        states = rt.eval(toks, outputs="all").hidden
        for e in range(1, len(toks), 4):
            rows.append((states[e], local_mean(states, e, 1), local_mean(states, e, 1, window=WIDE)))
    return tuple(np.stack(r) for r in zip(*rows))


def features(stats: ModelStats, rows: tuple[np.ndarray, ...], texts: list[str] | None, wide: bool) -> np.ndarray:
    state, local, wide_mean = rows
    parts = [stats.transform(state), stats.transform(local)] + ([stats.transform(wide_mean)] if wide else [])
    words = (slots.BOW_WEIGHT * slots.bag_of_words(texts) if texts is not None
             else np.zeros((len(state), slots.BOW_DIM), np.float32))
    return np.hstack(parts + [words])


def score(probs: np.ndarray, classes: list[str], fields: list[str]) -> tuple[str, float]:
    """The user's best field here and its reading."""
    mine = [(f, float(probs[classes.index(SNIPPET_CLASS.get(f, f))])) for f in fields
            if SNIPPET_CLASS.get(f, f) in classes]
    return max(mine, key=lambda fp: fp[1])


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    rt = LlamaRuntime(bundled_model_path(), n_threads=2)
    stats = ModelStats.shipped(rt.identity) or ModelStats.compute(rt)
    items = slots.training_items()
    classes = sorted({c for _, c in items} - {slots.NONE, slots.THIRD_PARTY}) + [slots.THIRD_PARTY, slots.NONE]
    texts = [t for t, _ in items]
    y = np.array([classes.index(c) for _, c in items])
    train, bg = training_rows(rt, texts), background_rows(rt)
    y_all = np.concatenate([y, np.full(len(bg[0]), classes.index(slots.NONE))])
    profiles = json.loads((DATA / "profiles.json").read_text(encoding="utf-8"))
    personas = json.loads((PERSONAS / "profiles.json").read_text(encoding="utf-8"))
    cases = load_cases("dev")
    case_rows = [reading_rows(rt, body_prompt(c["text"])) for c in cases]
    prose = []                                 # (persona, text up to the place, rows there)
    for persona in ("mara", "teo"):
        for email in emails(persona, "dev") + [p.read_text(encoding="utf-8").strip()
                                                for p in sorted((PERSONAS / persona).glob("sent-*.txt"))]:
            # One pass over the email; each place's rows are those of the token ending there.
            toks = rt.tokenize(email, add_special=True)
            ends = np.cumsum([len(rt.detokenize([t])) if t != rt.bos else 0 for t in toks])     # chars after each token
            at = {int(e): i for i, e in enumerate(ends)}
            wanted = [(pos, at[pos]) for pos in places(email) if pos in at]
            rows = reading_rows(rt, email, [i for _, i in wanted])
            for k, (pos, _) in enumerate(wanted):
                prose.append((persona, email[:pos], tuple(r[k:k + 1] for r in rows)))
    results = []
    for wide in (False, True):
        x = np.vstack([features(stats, train, texts, wide), features(stats, bg, None, wide)])
        clf = slots.SlotClassifier.fit(x, y_all, classes, epochs=EPOCHS)
        case_scores = []
        for c, rows in zip(cases, case_rows):
            probs = clf.predict(features(stats, rows, [body_prompt(c["text"])], wide))[0]
            case_scores.append(score(probs, classes, list(profiles[c["user"]]["fields"])))
        prose_scores = [score(clf.predict(features(stats, rows, [text], wide))[0], classes, list(personas[p]))[1]
                        for p, text, rows in prose]
        results.append((wide, case_scores, np.array(prose_scores)))
    base_alarms = int((results[0][2] >= CUT).sum())
    out = []
    for wide, case_scores, prose_scores in results:
        matched = float(np.sort(prose_scores)[::-1][base_alarms]) if base_alarms < len(prose_scores) else CUT
        for name, cut in ((f"{CUT}", CUT), (f"{matched:.3f} (prose alarms as the shipped features at {CUT})", matched)):
            right = sum(c["kind"] == "positive" and f == c["field"] and p >= cut for c, (f, p) in zip(cases, case_scores))
            wrong = sum(c["kind"] == "positive" and f != c["field"] and p >= cut for c, (f, p) in zip(cases, case_scores))
            neg = sum(c["kind"] != "positive" and p >= cut for c, (f, p) in zip(cases, case_scores))
            out.append(["shipped + wide mean" if wide else "shipped features", name,
                        f"{right}/{sum(c['kind'] == 'positive' for c in cases)}", wrong,
                        f"{neg}/{sum(c['kind'] != 'positive' for c in cases)}",
                        f"{int((prose_scores >= cut).sum())}/{len(prose_scores)}"])
    print(f"Machine: {machine()}\nClassifiers trained alike ({EPOCHS} epochs) on the shipped corpus and background; "
          f"wide mean of the last {WIDE} states; read at the cursor, no gates\n")
    print(table(["features", "cut", "personal dev: right", "wrong field", "third party + neutral over the cut",
                 "prose dev places over the cut"], out))
    rt.close()


if __name__ == "__main__":
    main()
