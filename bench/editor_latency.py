"""Editor latency: time to the first suggested token after a typing pause.

Replays a typing session of an email (bench/data/typing_session.json: the text
and the pause after each character, in ms) into the real editor window,
offscreen, through the same code path a person uses: key events -> debounce ->
request to the model worker -> pieces back by signal -> ghost text. For every
request it records the time from the request (the end of the typing pause) to
the first piece painted, and how many prompt tokens were found in the KV cache.

Two stores, one after the other in one run: an empty one, and the store users
have after a day: a persona's profile (bench/data/personas/profiles.json) plus
Tools -> Learn from my writing on the persona's 16 sent emails (chunks and kNN
data), so matching, the slot classifier and the kNN-LM all run, with the
editor's default settings.

    python bench/editor_latency.py
    python bench/editor_latency.py --complete   # time to the whole suggestion, with and without chunks
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.common import machine, save_plot, table  # noqa: E402

SESSION = Path(__file__).resolve().parent / "data" / "typing_session.json"


def make_session(text: str, seed: int = 3) -> list[list]:
    """A plausible recording: ~110 ms per key, longer after words and sentences."""
    rng = np.random.default_rng(seed)
    out = []
    for ch in text:
        pause = rng.normal(110, 30)
        if ch == " ":
            pause += rng.exponential(120)
        if ch in ".,\n":
            pause += rng.uniform(300, 900)
        out.append([ch, int(max(40, pause))])
    return out


def populated_store(tmp: Path) -> Path:
    """Profile plus learned store of persona mara, built as bench/keystrokes.py builds it."""
    from bench.keystrokes import learned_engine

    engine = learned_engine(tmp, "mara", None, learn=True)
    path = Path(engine.store.path)
    engine.close()
    return path


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="chunkwise-typing-"))
    session = json.loads(SESSION.read_text())
    rows, lats = [], {}
    for name, db in (("empty store", tmp / "empty.db"), ("profile + learned store", populated_store(tmp))):
        lat, cache, typed, sent = measure(session, db, tmp)
        lats[name] = lat
        rows.append([name, f"{len(lat)} of {sent}", f"{np.percentile(lat, 50):.0f}", f"{np.percentile(lat, 90):.0f}",
                     f"{lat.max():.0f}",
                     f"{np.median([a / max(b, 1) for a, b in cache]) * 100:.0f}% of {int(np.median([b for _, b in cache]))}"])
        print(rows[-1], flush=True)
    print(f"Machine: {machine()}\nModel: bundled SmolLM2-135M-Instruct; default settings (debounce 250 ms); "
          f"{len(session['keys'])} keys typed in {typed:.0f} s per run\n")
    print(table(["store", "requests answered (with a suggestion)", "p50 ms", "p90 ms", "max ms", "prompt tokens reused (median)"], rows))
    print("(time from the end of the typing pause, when the request is sent, to the first suggested token "
          "arriving in the window; add the 250 ms pause for time since the last key)")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    for name, lat in lats.items():
        ax.hist(lat, bins=30, alpha=0.6, label=name)
    ax.axvline(100, color="red", linestyle="--", label="100 ms (Smart Compose p90 target)")
    ax.set_xlabel("time to first suggested token, ms")
    ax.set_ylabel("requests")
    ax.legend(fontsize=8)
    print("plot:", save_plot(fig, "typing.png"))


def measure(session: dict, db_path: Path, tmp: Path, changes: dict | None = None, word_pause: int | None = None,
            done: dict | None = None):
    """Type the session into a fresh window on *db_path*: (latencies ms, cache reuse, seconds typed).

    *changes*: Settings fields other than the defaults; *word_pause*: wait this long (ms) after each
    word instead of the recorded pause, so every suggestion there runs to its end; *done* collects,
    per request that ended on its own (not cancelled), the ms to its end and its length in characters.
    """
    from PySide6.QtCore import QEventLoop, Qt, QTimer
    from PySide6.QtTest import QTest

    def wait(ms: int) -> None:
        """Let time pass with the event loop running and the GIL free for the model worker.

        (QTest.qWait keeps the GIL while it sleeps: the worker thread then
        starves, and latencies come out 10-20x too long.)
        """
        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()
    from PySide6.QtWidgets import QApplication

    from chunkwise.app.settings import Settings
    from chunkwise.app.window import ComposeWindow

    app = QApplication.instance() or QApplication(sys.argv)  # noqa: F841 (kept alive)
    from chunkwise.app.autosave import AutosaveFile

    window = ComposeWindow(Settings(db_path=str(db_path), **(changes or {})), tmp / "settings.json",
                           autosave_file=AutosaveFile(tmp / "draft.json"))
    window.confirm_close = False
    window.show()
    while not window.model_ready:
        wait(50)
    sent, first, reused = {}, {}, {}
    original = window.suggest_now

    def timed_suggest():
        before = window.current_id
        original()
        if window.current_id != before:
            sent[window.current_id] = time.perf_counter()

    window.debounce.timeout.disconnect()
    window.debounce.timeout.connect(timed_suggest)
    from PySide6.QtCore import QObject, Slot

    class Arrivals(QObject):
        """Lives in the GUI thread, so the time is when a piece reaches the window."""

        @Slot(int, object)
        def piece(self, rid, piece):
            first.setdefault(rid, time.perf_counter())
            chars[rid] = chars.get(rid, 0) + len(piece.text)

        @Slot(int, dict)
        def finished(self, rid, stats):
            reused.setdefault(rid, (stats["prompt_reused"], stats["prompt_tokens"]))
            if done is not None and rid in sent and rid in first and stats.get("stop_reason") != "cancelled":
                done[rid] = ((time.perf_counter() - sent[rid]) * 1000, chars.get(rid, 0), stats.get("stop_reason"))

    chars: dict[int, int] = {}
    arrivals = Arrivals()
    window.worker.piece.connect(arrivals.piece)
    window.worker.finished.connect(arrivals.finished)
    body = window.body_edit
    body.setFocus()
    start = time.perf_counter()
    for ch, pause in session["keys"]:
        if ch == "\n":
            QTest.keyClick(body, Qt.Key_Return)
        else:
            QTest.keyClicks(body, ch)
        wait(word_pause if word_pause is not None and ch == " " else pause)
    wait(1500)
    typed = time.perf_counter() - start
    lat = np.array([(first[r] - sent[r]) * 1000 for r in sent if r in first])
    cache = [reused[r] for r in sent if r in reused]
    window.shutdown()
    window.close()
    window.deleteLater()
    wait(200)
    return lat, cache, typed, len(sent)


COMPLETE_CONFIGS = {
    "empty store": (False, {}),
    "profile + learned store": (True, {}),
    "profile + learned store, chunks off": (True, {"chunks_enabled": False}),
    "profile + learned store, natural end off": (True, {"natural_end": False}),
}


def complete() -> None:
    """Time to the first token and to the whole suggestion, pausing 2 s after each word of the session
    (so each suggestion there runs to its end), for the editor with and without chunks and natural end."""
    tmp = Path(tempfile.mkdtemp(prefix="chunkwise-complete-"))
    session = json.loads(SESSION.read_text())
    populated = populated_store(tmp)
    rows, whole = [], {}
    for name, (learned, changes) in COMPLETE_CONFIGS.items():
        db = populated if learned else tmp / "empty.db"
        done: dict = {}
        lat, _cache, _typed, sent = measure(session, db, tmp, changes, word_pause=2000, done=done)
        ends = np.array([d[0] for d in done.values()])
        length = np.array([d[1] for d in done.values()])
        whole[name] = ends
        rows.append([name, f"{len(done)} of {sent}", f"{np.percentile(lat, 50):.0f} / {np.percentile(lat, 90):.0f}",
                     f"{np.percentile(ends, 50):.0f} / {np.percentile(ends, 90):.0f}", f"{np.median(length):.0f}",
                     f"{sum(d[2] == 'end' for d in done.values())}"])
        print(rows[-1], flush=True)
    print(f"Machine: {machine()}\nModel: bundled SmolLM2-135M-Instruct; default settings except as named; "
          f"a 2 s pause after each word of the session (bench/data/typing_session.json)\n")
    print(table(["editor", "suggestions that ran to their end", "first token p50 / p90 ms",
                 "whole suggestion p50 / p90 ms", "median length (chars)", "ended at a natural end"], rows))
    print("(from the end of the typing pause, when the request is sent, to the first piece and to the "
          "suggestion's end arriving in the window)")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    ax.boxplot(list(whole.values()), orientation="horizontal", tick_labels=[n.replace("profile + learned store", "populated")
                                                          for n in whole], whis=(10, 90), showfliers=False)
    ax.set_xlabel("time to the whole suggestion, ms (box: p25-p75, whiskers: p10-p90)")
    fig.tight_layout()
    print("plot:", save_plot(fig, "whole-suggestion.png"))


if __name__ == "__main__":
    if "--complete" in sys.argv:
        complete()
    elif "--record" in sys.argv:    # regenerate the session file from its text
        data = json.loads(SESSION.read_text())
        data["keys"] = make_session(data["text"])
        SESSION.write_text(json.dumps(data, indent=0))
    else:
        main()
