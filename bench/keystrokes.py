"""Typing simulation: new emails of a persona typed word by word through the editor's own requests.

For each persona (bench/data/personas: 16 sent emails to learn from, new emails to type, the
day-one library profile) and each configuration, every new email of the split is typed as a
user of the editor would:

* after each typed word, a suggestion is requested with the editor's framing (``body_prompt``:
  no To or Subject, trailing space lifted) and request settings (Settings(): 24 tokens, greedy,
  stop at a blank line, chunks at the default threshold, kNN-LM as Settings says);
* the user takes the part of it that matches what they were going to write: Tab if all of it
  matches (1 key), else Ctrl+Right once per matching word; after a Tab, the next suggestion
  follows at once; otherwise they type the next word, one key per character;
* a chunk the user typed over is left out for the rest of its sentence, as the editor does;
* generation is stopped as soon as the suggestion leaves the text (nothing after that point
  could be accepted), so a run costs what the user would have waited for.

Printed per configuration: keystroke savings (1 - keys / characters), the share of shown
suggestions whose first word is right, the share of accepted characters that came from chunks,
chunks inserted per email, first-token latency (request to first piece; the KV cache holds
the previous request's prompt, as in the editor), and chunks typed over: suggestions whose next
text, where the user typed on, was a chunk (the editor then leaves that chunk out for the rest of
the sentence, core/feedback.py PassedOver; --forget-typed-over asks afresh at every pause).

Configurations:
  no store         chunks off, nothing learned
  PII only         the persona's profile, defaults
  learned          profile + Tools -> Learn from my writing on the 16 sent emails, Settings() defaults
                   (chunks and "Also predict from my writing", the kNN-LM, both on)
  learned, kNN off the same with "Also predict from my writing" switched off (the default before)
  learned, chunks off  the same with chunk insertion switched off (kNN-LM token by token only)
  learned one by one   (only when named) each sent email learned on its own, oldest first, as the
                   editor learns mail it sends; "..., as before": without the mail learned before as
                   the mining teacher

    python bench/keystrokes.py                      # both splits
    python bench/keystrokes.py --split dev -v
    python bench/keystrokes.py --sweep              # keystroke savings against the threshold (plot)
    python bench/keystrokes.py --split dev --chunk-shown    # a chunk's text out before its batched decode
    python bench/keystrokes.py --split dev --pause-in-words 2   # the user also pauses two letters into a word
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.common import OUT, machine, save_plot, table, time_each_call  # noqa: E402
from chunkwise.core import ChunkStore, Engine  # noqa: E402
from chunkwise.core.feedback import PassedOver  # noqa: E402
from chunkwise.core.settings import Settings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PERSONAS = ROOT / "bench" / "data" / "personas"
UNIT = re.compile(r"\s*\S+")            # one word with the space before it: what Ctrl+Right takes
# Whose emails are typed (--personas sets it): the two personas every figure before rhea was measured on.
# rhea (a letting agent who writes a few kinds of email again and again, the kind of writer issue 10's
# own persona was) is typed only when named: ``--personas rhea``.
TYPED_PERSONAS = ("mara", "teo")


def typed_suffix() -> str:
    """What names this run's outputs apart from the two personas' on the bundled model ("-rhea",
    "-gemma"), or "" for those."""
    personas = "" if TYPED_PERSONAS == ("mara", "teo") else "-" + "-".join(TYPED_PERSONAS)
    return personas + (f"-{Path(MODEL).stem}" if MODEL else "")


def body_prompt(before: str) -> tuple[str, bool]:
    """app/window.py body_prompt with no To or Subject: trailing space lifted."""
    lifted = before.endswith(" ")
    return (before.rstrip(" ") if lifted else before), lifted


@dataclass
class Tally:
    chars: int = 0
    keys: int = 0
    shown: int = 0
    first_right: int = 0
    accepted: int = 0
    from_chunks: int = 0
    chunks: int = 0
    typed_over: int = 0        # suggestions the user typed on over where their next text was a chunk
    latencies: list = field(default_factory=list)

    def add(self, other: "Tally") -> None:
        for name in ("chars", "keys", "shown", "first_right", "accepted", "from_chunks", "chunks", "typed_over"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.latencies += other.latencies

    def row(self, name: str, emails: int) -> list[str]:
        lat = np.array(self.latencies) * 1000 if self.latencies else np.zeros(1)
        return [name, f"{100 * (1 - self.keys / max(self.chars, 1)):.1f}%",
                f"{100 * self.first_right / max(self.shown, 1):.0f}% of {self.shown}",
                f"{100 * self.from_chunks / max(self.accepted, 1):.0f}%", f"{self.chunks / max(emails, 1):.1f}",
                f"{np.percentile(lat, 50):.0f} / {np.percentile(lat, 90):.0f}", str(self.typed_over)]


def suggest(engine: Engine, before: str, rest: str, settings: Settings, leave_out=(), primer_text: str = ""):
    """One suggestion at *before*, generated until it leaves *rest*: (text, the chunk id of each character
    or None, latency, finished, chunks).  *leave_out*: chunks typed over in this sentence, as the editor sends;
    *primer_text*: put before the email in the prompt (--primer)."""
    prompt, lifted = body_prompt(primer_text + before)
    request = settings.suggestion_request(prompt, leave_out=leave_out, lifted=lifted)   # the editor's own request
    if AS_TYPED:
        request = replace(request, finish_word=False)      # --as-typed: the typed letters left as the tokenizer cut them
    diverged = False
    t0 = time.perf_counter()
    generation = engine.stream(request, cancelled=lambda: diverged)
    text, mask, latency, chunks = "", [], None, []
    for piece in generation:
        if latency is None and piece.text:
            latency = time.perf_counter() - t0
        piece_text = piece.text
        if lifted and not text:
            piece_text = piece_text[1:] if piece_text.startswith(" ") else piece_text
        if before.endswith("\n") and not text:
            piece_text = piece_text.lstrip("\n")     # the editor drops them at the start of a line (_on_piece)
        text += piece_text
        mask += [piece.chunk_id if piece.source == "chunk" else None] * len(piece_text)
        if piece.source == "chunk":
            chunks.append((len(text) - len(piece_text), piece.kind, piece.label, piece.match))
            if CLOCK is not None and (len(mask) == len(piece_text) or mask[-len(piece_text) - 1] != piece.chunk_id):
                CLOCK.shown(time.perf_counter() - t0)        # a chunk's first piece (the stops may split one)
        diverged = not rest.startswith(text)
    if CLOCK is not None:
        CLOCK.done()
    return text, mask, latency, not diverged, chunks     # chunks: (start, kind, label, match) of each inserted


class EvalClock:
    """--chunk-shown: when each chunk's text was out of the decoder (from the request), and how long the
    batched decode of its tokens, which runs after that (core/decoding.py Decoder.step: show, then
    decode_step), then took.  Wraps the runtime's ``eval``; every call in this thread, so the first
    one after a chunk is shown is that chunk's decode."""

    def __init__(self, rt) -> None:
        self.calls: list[tuple[float, int]] = []                  # (seconds, tokens) of each eval
        self.chunks: list[list] = []          # [shown after the request (s), evals before it, evals at the end]
        time_each_call(rt, "eval", lambda seconds, tokens: self.calls.append((seconds, len(tokens))))

    def shown(self, after: float) -> None:
        self.chunks.append([after, len(self.calls), None])

    def done(self) -> None:
        """The suggestion's generator has ended: a chunk with no eval after it ended the suggestion (no decode)."""
        for c in self.chunks:
            if c[2] is None:
                c[2] = len(self.calls)

    def table(self) -> str:
        rows = []
        for after, before, end in self.chunks:
            seconds, n = self.calls[before] if end > before else (0.0, 0)     # the eval right after it: its decode
            rows.append((after * 1000, seconds * 1000, n))
        a = np.array(rows) if rows else np.zeros((1, 3))
        d = a[a[:, 2] > 0] if (a[:, 2] > 0).any() else np.zeros((1, 3))          # those a decode followed
        pct = lambda x: f"{np.percentile(x, 50):.0f} / {np.percentile(x, 90):.0f}"
        return table(["chunks shown", "out after the request, p50 / p90 (ms)",
                      "had it waited for its decode, p50 / p90 (ms)", "the decode after it, median (ms)",
                      "its tokens, median"],
                     [[str(len(rows)), pct(a[:, 0]), pct(a[:, 0] + a[:, 1]), f"{np.median(d[:, 1]):.1f}",
                       f"{np.median(d[:, 2]):.0f}"]]) + (
            f"\n({sum(r[2] == 0 for r in rows)} of them ended their suggestion, so no decode ran after them)")


CLOCK: EvalClock | None = None
AS_TYPED = False            # --as-typed: no token healing (core/healing.py), as the editor asked before it
MODEL: str | None = None    # --model: another model file, or "gemma"; None: the bundled one


def type_email(engine: Engine, email: str, settings: Settings, verbose: bool = False, remember: bool = True,
               pause_in_words: int = 0, primer_text: str = "") -> Tally:
    """Type *email* as the editor's user would; *remember*: leave chunks typed over out for the rest of
    their sentence, as the editor does (False: as it did before, every pause asked afresh);
    *pause_in_words*: also pause after typing this many letters of a word nothing suggested (one of
    five letters or more), and take what the suggestion there gets right (0: pauses between words only);
    *primer_text*: see :func:`suggest`."""
    t = Tally(chars=len(email))
    pos, ask, paused_in = 0, True, -1
    passed_over = PassedOver()          # as the editor keeps it (app/window.py): chunks typed over in this sentence
    while pos < len(email):
        rest = email[pos:]
        if ask and email[:pos].strip():
            text, mask, latency, finished, chunks = suggest(engine, email[:pos], rest, settings,
                                                            passed_over.here(email[:pos]) if remember else (),
                                                            primer_text)
            if latency is not None:
                t.latencies.append(latency)
            if text.strip():
                t.shown += 1
                units = UNIT.findall(text)
                common = next((i for i, (a, b) in enumerate(zip(text, rest)) if a != b), min(len(text), len(rest)))
                taken, end = 0, 0
                for u in units:
                    if end + len(u) > common:
                        break
                    end += len(u)
                    taken += 1
                t.first_right += taken > 0
                if common < len(text.rstrip()) and mask[common] is not None and rest[common:common + 1].isprintable():
                    # the user types on where the suggestion's next text is a chunk: typed over (app/ghost.py;
                    # a printable character, as there: Enter is not typing over)
                    passed_over.add(mask[common], email[:pos] + text[:common])
                    t.typed_over += 1
                untaken = [c[1:] for c in chunks if c[0] >= end]
                if verbose and untaken:                   # a chunk shown where the user wrote something else
                    print(f"   x{text!r} {untaken} not taken after {email[max(0, pos - 40):pos]!r}")
                if taken:
                    whole = finished and end >= len(text.rstrip())
                    t.keys += 1 if whole else taken
                    t.accepted += end
                    t.from_chunks += sum(m is not None for m in mask[:end])
                    t.chunks += sum(1 for start, *_ in chunks if start < end)
                    if verbose:
                        print(f"   +{email[pos:pos + end]!r}{' [chunk]' if any(m is not None for m in mask[:end]) else ''}")
                    pos += end
                    ask = whole            # after a Tab the next suggestion follows; after Ctrl+Right the rest was wrong
                    continue
        m = UNIT.match(rest)
        step = m.end() if m else len(rest)
        word = m.group().lstrip() if m else ""
        if pause_in_words and paused_in != pos and re.fullmatch(r"[^\W\d_]{5,}\W*", word) \
                and len(re.match(r"[^\W\d_]*", word).group()) > pause_in_words:
            step = len(m.group()) - len(word) + pause_in_words     # the space and the first letters, then a pause
            paused_in = pos + step
        t.keys += step                      # the user types the next word (or its first letters)
        pos += step
        ask = True
    return t


def primer(persona: str, n: int) -> str:
    """--primer: the persona's last *n* sent emails, put before every prompt (in-context examples of
    their writing, tried against learning from it); "" for 0."""
    sent = sorted((PERSONAS / persona).glob("sent-*.txt"))[-n:] if n else []
    return "".join(p.read_text(encoding="utf-8").strip() + "\n\n\n" for p in sent)


def persona_profile(store: ChunkStore, persona: str) -> None:
    profiles = json.loads((PERSONAS / "profiles.json").read_text(encoding="utf-8"))
    for name, entry in profiles[persona].items():
        store.add_chunk(entry["value"], kind="pii", label=name.replace("_", " "), contexts=entry["contexts"])


def emails(persona: str, split: str) -> list[str]:
    splits = json.loads((PERSONAS / "split.json").read_text(encoding="utf-8"))
    chosen = splits.get(persona, splits)      # a persona added later (rhea) keeps a split of its own
    names = chosen["dev"] + chosen["test"] if split == "all" else chosen[split]
    return [(PERSONAS / n).read_text(encoding="utf-8").strip() for n in names if n.startswith(persona + "/")]


def learned_engine(tmp: Path, persona: str, runtime, learn: bool | str) -> Engine:
    from bench.personal import learn as learn_mail

    name = {True: "learned", False: "pii", "gemma": "learned-gemma"}.get(learn, f"learned-{learn}")
    path = tmp / f"{persona}-{name}.db"
    fresh = not path.exists()
    engine = Engine(MODEL, store=ChunkStore(path), n_threads=2, runtime=runtime)
    if fresh:
        persona_profile(engine.store, persona)
        if learn in ("each", "each-alone"):
            learn_one_by_one(engine, persona, earlier=learn == "each")
        elif learn:   # what Tools -> Learn from my writing runs (app/window.py), or KCD-LM with Gemma as teacher
            learn_mail(engine, persona, "gemma" if learn == "gemma" else "corpus")
        mined = sum(1 for c in engine.store.list_chunks() if c.kind in ("self", "teacher"))
        print(f"   ({persona}, {name}: {mined} chunks mined, "
              f"{engine.store.knn_count(engine.model_id)} kNN rows)", flush=True)
    engine.refresh()
    return engine


def learn_one_by_one(engine: Engine, persona: str, earlier: bool = True) -> None:
    """Each sent email learned on its own, oldest first, as the editor learns each email the user sends
    (opt-in; app/worker.py ``learn`` with texts: the editor's options).  *earlier* False: the mining
    teacher is the batch's other documents alone, as before the datastore of earlier mail joined it
    (core/learning.py corpus_knn_teacher): none, for one email."""
    from chunkwise.core import learning
    from chunkwise.core.corpus import Document, own_words
    from chunkwise.core.errors import ChunkwiseError

    real = learning.corpus_knn_teacher
    if not earlier:
        learning.corpus_knn_teacher = lambda e: real(e)._replace(earlier=None)
    try:
        for i, path in enumerate(sorted((PERSONAS / persona).glob("sent-*.txt"))):
            doc = Document(f"sent email {i + 1}", own_words(path.read_text(encoding="utf-8")))
            try:
                learning.mine(engine, [doc], gamma=0.5, knn=True, corpus_teacher=True)
            except ChunkwiseError:
                pass                        # too short to mine: the editor says so and goes on
    finally:
        learning.corpus_knn_teacher = real


CONFIGS = {
    "no store": (None, {"chunks_enabled": False, "knn_enabled": False}),
    "PII only": (False, {}),
    "learned, defaults": (True, {}),
    "learned, kNN off": (True, {"knn_enabled": False}),
    "learned, chunks off": (True, {"chunks_enabled": False}),
}
# Run only when named (--configs): mail learned one email at a time, and the optional Gemma 3 270M
# (pip install 'chunkwise[gemma]').
OPTIONAL_CONFIGS = {
    # Each sent email learned on its own, as the editor learns mail as it is sent (learn_one_by_one).
    "learned one by one": ("each", {}),
    "learned one by one, as before": ("each-alone", {}),
    "learned, Gemma teacher": ("gemma", {}),
    "learned, Gemma teacher, kNN off": ("gemma", {"knn_enabled": False}),
}


def run(split: str, configs: dict, tmp: Path, verbose: bool = False,
        threshold: float | None = None, remember: bool = True, chunk_clock: bool = False,
        pause_in_words: int = 0, primer_n: int = 0, **overrides) -> dict[str, tuple[Tally, int]]:
    """Each configuration over both personas' emails of *split*; stores are learned once into *tmp*.
    *overrides* change Settings fields for every configuration (``natural_end=False``); *remember*: see
    :func:`type_email`; *chunk_clock*: time chunks shown against their decode (:class:`EvalClock`);
    *primer_n*: the persona's last sent emails put before every prompt (:func:`primer`)."""
    global CLOCK
    results = {}
    runtime = None
    for name, (learn, changes) in configs.items():
        settings = replace(Settings(), **changes, **overrides)
        if threshold is not None:
            settings.threshold = threshold
        total, n = Tally(), 0
        for persona in TYPED_PERSONAS:
            primer_text = primer(persona, primer_n)
            if learn is None:
                engine = Engine(MODEL, store=ChunkStore(":memory:"), n_threads=2, runtime=runtime)
            else:
                engine = learned_engine(tmp, persona, runtime, learn)
            runtime = engine.runtime
            if chunk_clock and CLOCK is None:
                CLOCK = EvalClock(runtime)     # suggest() attributes evals by index, so learning's do not count
            engine.threshold = settings.threshold
            for email in emails(persona, split):
                if verbose:
                    print(f"-- {name} / {persona}: {email[:40]!r}")
                total.add(type_email(engine, email, settings, verbose, remember, pause_in_words, primer_text))
                n += 1
            engine.store.close()
        results[name] = (total, n)
        print(" | ".join(total.row(name, n)), flush=True)
    if runtime is not None:
        runtime.close()
    return results


HEADERS = ["configuration", "keystroke savings", "first word right", "accepted chars from chunks",
           "chunks inserted per email", "first token p50 / p90 (ms)", "chunks typed over"]


def sweep(split: str, tmp: Path, thresholds=(0.0, 0.15, 0.3, 0.5, 1.0)) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = {k: CONFIGS[k] for k in ("learned, defaults",)}
    rows, xs, ys, cs = [], [], [], []
    for th in thresholds:
        (t, n), = run(split, configs, tmp, threshold=th).values()
        rows.append([f"{th:.2f}"] + t.row("", n)[1:])
        xs.append(th)
        ys.append(100 * (1 - t.keys / t.chars))
        cs.append(100 * t.from_chunks / max(t.accepted, 1))
    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.plot(xs, ys, "o-", label="keystroke savings")
    ax.plot(xs, cs, "s--", label="accepted characters from chunks")
    ax.set_xlabel("similarity threshold (Settings)")
    ax.set_ylabel("%")
    ax.set_title(f"Typing new emails after Learn ({split} split)")
    ax.legend()
    save_plot(fig, f"keystrokes-threshold{typed_suffix()}-{split}.png")
    return table(["threshold"] + HEADERS[1:], rows)


def end_sweep(split: str, tmp: Path, bars=(None, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5)) -> str:
    """Keystroke savings with suggestions run to their length (None), ended after a sentence only (0.0), or
    also before a word the model gives less than each bar; PII only and learned store."""
    configs = {k: CONFIGS[k] for k in ("PII only", "learned, defaults")}
    rows = []
    for bar in bars:
        change = {"natural_end": False} if bar is None else {"natural_end": True, "unsure_below": bar}
        for name, (t, n) in run(split, configs, tmp, **change).items():
            rows.append(["off" if bar is None else f"{bar:.2f}"] + t.row(name, n))
    return table(["end when unsure below"] + HEADERS, rows)


def knn_distance(split: str, tmp: Path) -> str:
    """How often the kNN-LM's top token is the next word of a new email, by the distance to the nearest
    stored context, beside the model's own top token (why core/knn.py gates lambda)."""
    from chunkwise.core.corpus import Document
    from chunkwise.core.scoring import document_tokens, score

    rows, runtime = [], None
    for persona in TYPED_PERSONAS:
        engine = learned_engine(tmp, persona, runtime, True)
        runtime = engine.runtime
        knn = engine.knn
        for email in emails(persona, split):
            tokens, first = document_tokens(runtime, Document("new", email))
            scored = score(runtime, tokens, max(first, 1), hidden=True, topk=1)
            for pos in range(max(first, 1), len(tokens)):
                labels, dist = knn.neighbours(scored.hidden[pos - 1])          # the state that predicts pos
                w = np.exp(-(dist - dist.min()) / knn.settings.temperature)
                top = np.bincount(knn.values[labels], weights=w).argmax()
                rows.append((float(dist.min()), top == tokens[pos], scored.topk_ids[pos, 0] == tokens[pos]))
        engine.store.close()
    rows = np.array(rows, dtype=float)
    out = []
    for lo, hi in [(0, .2), (.2, .4), (.4, .6), (.6, .8), (.8, 1.0), (1.0, 1.2), (1.2, 4)]:
        m = (rows[:, 0] >= lo) & (rows[:, 0] < hi)
        if m.any():
            out.append([f"{lo:.1f}-{hi:.1f}", int(m.sum()), f"{rows[m, 1].mean():.0%}", f"{rows[m, 2].mean():.0%}"])
    return table(["nearest stored context (squared distance)", "positions", "kNN top token right",
                  "model top token right"], out)


def main() -> None:
    global AS_TYPED, TYPED_PERSONAS, MODEL
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", choices=("dev", "test", "both", "all"), default="both")
    ap.add_argument("--configs", nargs="*", default=None, help=f"some of: {', '.join([*CONFIGS, *OPTIONAL_CONFIGS])}")
    ap.add_argument("--sweep", action="store_true", help="keystroke savings against the threshold, and a plot")
    ap.add_argument("--knn-distance", action="store_true", help="kNN-LM accuracy by distance to the nearest context")
    ap.add_argument("--threshold", type=float, default=None, help="instead of Settings().threshold")
    ap.add_argument("--natural-end", action="store_true", help="sweep where suggestions end (Settings.unsure_below)")
    ap.add_argument("--forget-typed-over", action="store_true",
                    help="ask afresh at every pause, as the editor did before it left out chunks typed over")
    ap.add_argument("--chunk-shown", action="store_true",
                    help="learned store, defaults: when each chunk's text is out, and what its decode after that takes")
    ap.add_argument("--pause-in-words", type=int, default=0, metavar="N",
                    help="the user also pauses N letters into a word nothing suggested (default 0: between words only)")
    ap.add_argument("--as-typed", action="store_true",
                    help="leave a word the user is in the middle of as the tokenizer cut it (no token healing)")
    ap.add_argument("--primer", type=int, default=0, metavar="N",
                    help="tried: put the persona's last N sent emails before every prompt (in-context examples)")
    ap.add_argument("--personas", nargs="+", default=list(TYPED_PERSONAS), metavar="NAME",
                    help="whose new emails to type (default: mara teo; rhea: the persona of recurring emails)")
    ap.add_argument("--model", default=None, metavar="PATH",
                    help="a GGUF file, or 'gemma' (the optional extra), instead of the bundled model")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    AS_TYPED = args.as_typed
    MODEL = args.model
    TYPED_PERSONAS = tuple(args.personas)
    print(f"Machine: {machine()}\n")
    OUT.mkdir(exist_ok=True)
    splits = ("dev", "test") if args.split == "both" else (args.split,)
    with tempfile.TemporaryDirectory() as tmp:
        for split in splits:
            report(split, Path(tmp), args)


def report(split: str, tmp: Path, args) -> None:
    if args.knn_distance:
        print(f"### {split} split\n\n" + knn_distance(split, tmp))
        return
    if args.sweep:
        print(sweep(split, tmp))
        return
    if args.natural_end:
        print(f"### {split} split\n\n" + end_sweep(split, tmp))
        return
    if args.chunk_shown:
        run(split, {"learned, defaults": CONFIGS["learned, defaults"]}, tmp, chunk_clock=True)
        print(f"### {split} split: chunks shown before their decode (learned store, defaults)\n\n" + CLOCK.table())
        return
    configs = {k: v for k, v in CONFIGS.items() if args.configs is None or k in args.configs}
    configs |= {k: v for k, v in OPTIONAL_CONFIGS.items() if args.configs and k in args.configs}
    results = run(split, configs, tmp, args.verbose, threshold=args.threshold, remember=not args.forget_typed_over,
                  primer_n=args.primer,
                  pause_in_words=args.pause_in_words)
    print(f"\n### {split} split ({sum(n for _t, n in results.values()) // max(len(results), 1)} emails)\n")
    print(table(HEADERS, [t.row(name, n) for name, (t, n) in results.items()]))
    (OUT / f"keystrokes{typed_suffix()}-{split}.json").write_text(json.dumps(
        {name: {**t.__dict__, "emails": n} for name, (t, n) in results.items()}, indent=1))


if __name__ == "__main__":
    main()
