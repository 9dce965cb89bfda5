"""Typing soak: 100,000 stored contexts, 10 keystrokes a second for a minute, in the real window.

The store is filled with synthetic encodings shaped like the model's own (as in
bench/retrieval.py); the editor opens it offscreen and a timer types an email at
10 keys per second with no pauses, so nearly every request is cancelled by the next
key (the typing pause is set to 50 ms) -- the worst case for cancellation.  Recorded every second: the process's
resident memory.  Checked at the end: after every piece, the ghost text on screen was text the request
current at that moment had sent (nothing stale or spliced painted), the worker is alive
and answers, and memory after the first 10 s grew less than the stated bound.

    python bench/soak.py [--contexts 100000] [--seconds 60]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine, save_plot, table  # noqa: E402
from bench.retrieval import fill_store, rss_mb  # noqa: E402

BOUND_MB = 50          # growth allowed from 10 s to the end (caches warming, Qt's allocator)
TEXT = ("Hi Laura,\n\nThanks for sending the slides so quickly. I went through them this morning and I think "
        "the structure works well. Could we move the budget section before the timeline? I would also like to "
        "add a short summary at the start. Let me know if Thursday still works for a call. If anything comes "
        "up, you can reach me at the office or on my mobile. ")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--contexts", type=int, default=100_000)
    ap.add_argument("--seconds", type=int, default=60)
    args = ap.parse_args()
    from PySide6.QtCore import QEventLoop, QObject, Qt, QTimer, Slot
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from chunkwise.app.autosave import AutosaveFile
    from chunkwise.app.settings import Settings
    from chunkwise.app.window import ComposeWindow
    from chunkwise.core import ChunkStore, Engine

    def wait(ms: int) -> None:
        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()

    tmp = Path(tempfile.mkdtemp(prefix="chunkwise-soak-"))
    db = tmp / "chunks.db"
    t0 = time.perf_counter()
    engine = Engine(store=ChunkStore(db), n_threads=2)
    fill_store(engine.store, engine.model_id, engine.matcher.stats, args.contexts)
    engine.close()
    build = time.perf_counter() - t0

    app = QApplication.instance() or QApplication(sys.argv)
    # A 50 ms typing pause at 10 keys/s: every key starts a request and the next key cancels it.
    window = ComposeWindow(Settings(db_path=str(db), debounce_ms=50), tmp / "settings.json",
                           autosave_file=AutosaveFile(tmp / "draft.json"))
    window.confirm_close = False
    window.show()
    t1 = time.perf_counter()
    while not window.model_ready:
        wait(100)
    opened = time.perf_counter() - t1

    stale, painted, requests, emitted = [], [0], [0], {}
    original = window._on_piece

    class Observer(QObject):
        """Lives in the GUI thread, so its slots run there, as the window's own do."""

        @Slot(int, object)
        def piece(self, rid, piece):
            # What is on screen after each piece must be text the current request sent: a piece of
            # an older request (stale) or two requests spliced would show text the current one never sent.
            emitted[rid] = emitted.get(rid, "") + piece.text
            original(rid, piece)
            shown = window.body_edit.ghost_text
            if shown:
                painted[0] += 1
                if shown not in emitted.get(window.current_id, ""):
                    stale.append(rid)

        @Slot(int, dict)
        def finished(self, rid, stats):
            requests[0] += 1

    observer = Observer()
    window.worker.piece.disconnect(window._on_piece)
    window.worker.piece.connect(observer.piece)
    window.worker.finished.connect(observer.finished)
    body = window.body_edit
    body.setFocus()
    samples = []
    start = time.perf_counter()
    i = 0
    next_sample = start
    while time.perf_counter() - start < args.seconds:
        ch = TEXT[i % len(TEXT)]
        i += 1
        if ch == "\n":
            QTest.keyClick(body, Qt.Key_Return)
        else:
            QTest.keyClicks(body, ch)
        if len(body.toPlainText()) > 1500:            # keep the document a realistic size
            body.clear()
        wait(100)
        if time.perf_counter() >= next_sample:
            samples.append((time.perf_counter() - start, rss_mb()))
            next_sample += 1.0
    wait(2000)                                        # the last suggestion
    alive = window.worker_thread.thread.isRunning() and window.model_ready
    final_pieces = len(body.pieces)
    window.shutdown()
    window.close()
    early = [m for t, m in samples if t >= 10]
    growth = (max(early) - early[0]) if early else 0.0
    print(f"Machine: {machine()}\n{args.contexts:,} stored contexts (store built in {build:.0f} s, "
          f"editor ready in {opened:.0f} s); typed {i} keys in {args.seconds} s at 10 per second\n")
    print(table(["RSS at 10 s", "RSS max", "growth 10 s → end", f"bound", "requests finished",
                 "ghost updates painted", "painted text not from the current request", "worker alive, last suggestion shown"],
                [[f"{early[0]:.0f} MB" if early else "-", f"{max(m for _, m in samples):.0f} MB",
                  f"{growth:+.0f} MB", f"{BOUND_MB} MB", requests[0], painted[0], len(stale),
                  f"{alive}, {final_pieces > 0}"]]))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot([t for t, _ in samples], [m for _, m in samples])
    ax.set_xlabel("seconds of typing (10 keys/s)")
    ax.set_ylabel("resident memory, MB")
    ax.set_title(f"{args.contexts:,} contexts in the store")
    print("plot:", save_plot(fig, "soak.png"))
    ok = growth < BOUND_MB and not stale and alive and final_pieces > 0 and requests[0] > 0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
