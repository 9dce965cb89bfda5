"""Would the slot classifier read slots better from the model's middle layers, or with a pooled "whether"?

Probing work on language models finds that middle layers often carry more of a sentence's meaning
than the last one, which is shaped for predicting the next token.  The shipped classifier
(core/slots.py) reads only the final state, its local mean and hashed words.  This captures the
residual stream after chosen layers (llama.cpp's "l_out-N" tensors, through the context's eval
callback: a measurement hook here, not something the product runs) in the same forward passes,
whitens each layer as core/encoding.py whitens the final state, and trains classifiers alike on the
shipped corpus and background text (bench/slot_features.py's schedule), then scores them at the
cursor as that script does:

  shipped              the final state and its local mean, and the words
  + layer N            the same plus layer N's state and local mean
  layer 14 alone       layer 14's state and local mean, and the words
  pooled "whether"     the shipped classifier picks the field; a second one, trained on the same rows
                       with every field pooled against "someone else's" and "none", says whether one
                       comes (its reading at 0.5-0.9, the picked field's share of the user's at 0.5-0.7)

Nothing ships from this; it says whether a deeper read is worth a new feature path and a retrain.

    python bench/slot_layers.py           # dev only; about a quarter of an hour here
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.common import machine, table  # noqa: E402
from bench.keystrokes import PERSONAS, emails  # noqa: E402
from bench.personal import DATA, body_prompt, load_cases  # noqa: E402
from bench.prose import places  # noqa: E402
from bench.slot_features import CUT, EPOCHS, SNIPPET_CLASS, packed_passes  # noqa: E402
from chunkwise.core import slots  # noqa: E402
from chunkwise.core.encoding import BACKGROUND_FILE, BACKGROUND_STRIDE, SHRINKAGE, ModelStats, local_mean  # noqa: E402
from chunkwise.core.llama_runtime import LlamaRuntime  # noqa: E402
from chunkwise.core.paths import bundled_model_path  # noqa: E402

LAYERS = (6, 10, 14, 18, 22)      # of SmolLM2-135M's 30


class LayerTap:
    """Copies the residual stream after LAYERS out of every decode (llama.cpp's eval callback)."""

    def __init__(self, llama_cpp) -> None:
        lib = ctypes.CDLL(str(Path(llama_cpp.__file__).parent / "lib" / "libggml-base.so"))
        lib.ggml_get_name.restype, lib.ggml_get_name.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
        lib.ggml_nbytes.restype, lib.ggml_nbytes.argtypes = ctypes.c_size_t, [ctypes.c_void_p]
        lib.ggml_backend_tensor_get.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
        self.lib, self.want = lib, {f"l_out-{n}".encode(): n for n in LAYERS}
        self.rows: dict[int, list[np.ndarray]] = {n: [] for n in LAYERS}
        self.callback = llama_cpp.ggml_backend_sched_eval_callback(self._seen)   # kept alive with the tap
        default = llama_cpp.llama_context_default_params

        def with_tap():
            params = default()
            params.cb_eval = self.callback
            return params
        llama_cpp.llama_context_default_params = with_tap

    def _seen(self, tensor, ask, _user):
        name = self.lib.ggml_get_name(tensor)
        if ask:
            return name in self.want
        layer = self.want.get(name)
        if layer is not None:
            ne = (ctypes.c_int64 * 4).from_address(tensor + 16)      # ggml_tensor.ne, after type and buffer
            size = self.lib.ggml_nbytes(tensor)
            out = np.empty(size // 4, np.float32)
            self.lib.ggml_backend_tensor_get(tensor, out.ctypes.data, 0, size)
            self.rows[layer].append(out.reshape(ne[1], ne[0]))           # (tokens, d)
        return True

    def take(self) -> dict[int, np.ndarray]:
        got = {n: np.concatenate(r) if r else None for n, r in self.rows.items()}
        for r in self.rows.values():
            r.clear()
        return got


def rows_at(states, layers, ends, first) -> dict[str, np.ndarray]:
    out = {"state": np.stack([states[e] for e in ends]), "local": np.stack([local_mean(states, e, first) for e in ends])}
    for n, ls in layers.items():
        out[f"s{n}"] = np.stack([ls[e] for e in ends])
        out[f"l{n}"] = np.stack([local_mean(ls, e, first) for e in ends])
    return out


def joined(parts: list[dict]) -> dict[str, np.ndarray]:
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def reading(rt, tap, text, ends=None):
    rt.reset()
    tap.take()
    toks = rt.tokenize(text, add_special=True)[-1500:]
    states = rt.eval(toks, outputs="all").hidden
    layers = tap.take()
    return rows_at(states, layers, [len(toks) - 1] if ends is None else ends, 1 if toks[0] == rt.bos else 0)


def training(rt, tap, texts):
    """Packed as bench/slot_features.py packs them."""
    got = [None] * len(texts)
    for batch, spans in packed_passes(rt, texts):
        rt.reset()
        tap.take()
        states = rt.eval([rt.bos] + batch, outputs="all").hidden[1:]
        layers = {n: v[1:] for n, v in tap.take().items()}
        for start, end, i in spans:
            got[i] = rows_at(states, layers, [end], start)
    return joined(got)


def background(rt, tap):
    paragraphs = [p for p in BACKGROUND_FILE.read_text(encoding="utf-8").split("\n\n") if p.strip()][::BACKGROUND_STRIDE]
    parts = []
    for para in paragraphs:
        toks = rt.tokenize(para)[:512]
        if len(toks) < 4:
            continue
        rt.reset()
        tap.take()
        states = rt.eval(toks, outputs="all").hidden
        parts.append(rows_at(states, tap.take(), list(range(1, len(toks), 4)), 1))
    return joined(parts)


def prose_places(rt, tap):
    """Every word boundary of the personas' dev and sent emails: (persona, text so far), rows."""
    where, parts = [], []
    for persona in ("mara", "teo"):
        for email in emails(persona, "dev") + [p.read_text(encoding="utf-8").strip()
                                                for p in sorted((PERSONAS / persona).glob("sent-*.txt"))]:
            toks = rt.tokenize(email, add_special=True)
            ends = np.cumsum([len(rt.detokenize([t])) if t != rt.bos else 0 for t in toks])
            at = {int(e): i for i, e in enumerate(ends)}
            wanted = [(pos, at[pos]) for pos in places(email) if pos in at]
            if wanted:
                parts.append(reading(rt, tap, email, [i for _, i in wanted]))
                where += [(persona, email[:pos]) for pos, _ in wanted]
    return where, joined(parts)


def whitener(rows: np.ndarray):
    """core/encoding.py ModelStats.compute's whitening, for another layer's states."""
    x = rows.astype(np.float64)
    mean = x.mean(0)
    cov = np.cov((x - mean).T)
    dim = cov.shape[0]
    cov = (1 - SHRINKAGE) * cov + SHRINKAGE * np.eye(dim) * np.trace(cov) / dim
    val, vec = np.linalg.eigh(cov)
    w = ((vec * np.maximum(val, 1e-12) ** -0.5) @ vec.T).astype(np.float32)
    mean = mean.astype(np.float32)

    def transform(v):
        z = (v.astype(np.float32) - mean) @ w
        return z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)
    return transform


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    import llama_cpp

    tap = LayerTap(llama_cpp)
    rt = LlamaRuntime(bundled_model_path(), n_threads=2)
    stats = ModelStats.shipped(rt.identity) or ModelStats.compute(rt)
    items = slots.training_items()
    texts = [t for t, _ in items]
    classes = sorted({c for _, c in items} - {slots.NONE, slots.THIRD_PARTY}) + [slots.THIRD_PARTY, slots.NONE]
    train, bg = training(rt, tap, texts), background(rt, tap)
    cases = load_cases("dev")
    case_texts = [body_prompt(c["text"]) for c in cases]
    case_rows = joined([reading(rt, tap, t) for t in case_texts])
    prose, prose_rows = prose_places(rt, tap)
    rt.close()
    y = np.concatenate([[classes.index(c) for _, c in items], np.full(len(bg["state"]), classes.index(slots.NONE))])
    transform = {"state": stats.transform, "local": stats.transform}
    for n in LAYERS:
        transform[f"s{n}"] = transform[f"l{n}"] = whitener(bg[f"s{n}"])

    def features(rows, words, keys):
        n = len(rows["state"])
        bow = slots.BOW_WEIGHT * slots.bag_of_words(words) if words is not None else np.zeros((n, slots.BOW_DIM), np.float32)
        return np.hstack([transform[k](rows[k]) for k in keys] + [bow])

    profiles = json.loads((DATA / "profiles.json").read_text(encoding="utf-8"))
    personas = json.loads((PERSONAS / "profiles.json").read_text(encoding="utf-8"))
    fields_of = [list(profiles[c["user"]]["fields"]) for c in cases] + [list(personas[p]) for p, _ in prose]

    def users_best(probs):
        """Per place: (the user's best field, its reading, its share of all the user's fields' readings)."""
        out = []
        for p, fields in zip(probs, fields_of):
            mine = [(f, float(p[classes.index(SNIPPET_CLASS.get(f, f))])) for f in fields
                    if SNIPPET_CLASS.get(f, f) in classes]
            f, v = max(mine, key=lambda fv: fv[1])
            out.append((f, v, v / max(sum(x for _, x in mine), 1e-9)))
        return out

    def counts(best, fires):
        """(right, wrong field, someone else's or neutral, prose places) where *fires* says a value goes in."""
        n = len(cases)
        right = sum(c["kind"] == "positive" and b[0] == c["field"] and f for c, b, f in zip(cases, best, fires))
        wrong = sum(c["kind"] == "positive" and b[0] != c["field"] and f for c, b, f in zip(cases, best, fires))
        neg = sum(c["kind"] != "positive" and f for c, f in zip(cases, fires))
        return right, wrong, neg, sum(fires[n:])

    every_text = case_texts + [t for _, t in prose]
    every_row = {k: np.concatenate([case_rows[k], prose_rows[k]]) for k in case_rows}
    x_train = lambda keys: np.vstack([features(train, texts, keys), features(bg, None, keys)])   # noqa: E731
    npos = sum(c["kind"] == "positive" for c in cases)
    nneg = len(cases) - npos
    rows, base_prose = [], None
    configs = [("shipped", ["state", "local"])] + [(f"+ layer {n}", ["state", "local", f"s{n}", f"l{n}"]) for n in LAYERS]
    configs.append(("layer 14 alone", ["s14", "l14"]))
    shipped_best = None
    for name, keys in configs:
        clf = slots.SlotClassifier.fit(x_train(keys), y, classes, epochs=EPOCHS)
        best = users_best(clf.predict(features(every_row, every_text, keys)))
        if shipped_best is None:
            shipped_best = best
        readings = np.array([b[1] for b in best])
        prose_readings = np.sort(readings[len(cases):])[::-1]
        if base_prose is None:
            base_prose = int((prose_readings >= CUT).sum())
        matched = float(prose_readings[base_prose])
        for cut_name, cut in ((f"{CUT}", CUT), (f"{matched:.3f} (prose as shipped)", matched)):
            right, wrong, neg, pr = counts(best, list(readings >= cut))
            rows.append([name, cut_name, f"{right}/{npos}", wrong, f"{neg}/{nneg}", f"{pr}/{len(prose)}"])
    # The pooled "whether": fields against someone else's and none, on the shipped features.
    pooled = np.array([0 if classes[k] not in (slots.NONE, slots.THIRD_PARTY) else 1 if classes[k] == slots.THIRD_PARTY
                       else 2 for k in y])
    whether = slots.SlotClassifier.fit(x_train(["state", "local"]), pooled, ["field", "third_party", "none"], epochs=EPOCHS)
    comes = whether.predict(features(every_row, every_text, ["state", "local"]))[:, 0]
    for gate in (0.5, 0.7, 0.9):
        for share in (0.5, 0.7):
            fires = [w >= gate and b[2] >= share for w, b in zip(comes, shipped_best)]
            right, wrong, neg, pr = counts(shipped_best, fires)
            rows.append([f'pooled "whether" >= {gate}', f"share >= {share}", f"{right}/{npos}", wrong,
                         f"{neg}/{nneg}", f"{pr}/{len(prose)}"])
    print(f"Machine: {machine()}\nClassifiers trained alike ({EPOCHS} epochs) on the shipped corpus and background, "
          f"read at the cursor, no gates; layers of {bundled_model_path().name}\n")
    print(table(["features", "cut", "personal dev: right", "wrong field", "third party + neutral over the cut",
                 "prose dev places over the cut"], rows))


if __name__ == "__main__":
    main()
