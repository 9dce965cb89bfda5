"""Regenerate docs/img/editor.png: the editor with a suggestion whose chunk is highlighted.

    python tools/screenshot.py            # offscreen (QT_QPA_PLATFORM=offscreen is set if no display)
    python tools/screenshot.py --theme dark   # the same in a dark desktop theme: docs/img/*-dark.png
    xvfb-run -a python tools/screenshot.py  # in a real X window

Uses a temporary store with the CD-LM paper's synthetic PII profile and
temporary settings, so the user's own files are never touched.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("CHUNKWISE_PASSPHRASE", "chunkwise-screenshot-only")  # its own temporary store
if not os.environ.get("DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main(out: Path = ROOT / "docs" / "img" / "editor.png", theme: str = "light") -> None:
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from chunkwise.app.settings import Settings
    from chunkwise.app.window import ComposeWindow
    from chunkwise.core import ChunkStore

    tmp = Path(tempfile.mkdtemp(prefix="chunkwise-shot-"))
    db = tmp / "chunks.db"
    profile = json.loads((ROOT / "tests/data/pii_profile_paper.json").read_text())
    with ChunkStore(db) as store:
        for field, entry in profile.items():
            if not field.startswith("_"):
                store.add_chunk(entry["value"], "pii", entry["contexts"][:4], label=field)
        store.add_chunk("Looking forward to hearing from you.", "phrase",
                        ["Thanks again for your help.", "Let me know what you think."], label="closing")
    app = QApplication.instance() or QApplication(sys.argv)
    from chunkwise.app.theme import apply_desktop_theme

    os.environ["CHUNKWISE_THEME"] = theme
    apply_desktop_theme(app)
    suffix = "" if theme == "light" else f"-{theme}"
    out = out.with_name(f"{out.stem}{suffix}{out.suffix}")
    from chunkwise.app.autosave import AutosaveFile

    window = ComposeWindow(Settings(db_path=str(db), debounce_ms=150), tmp / "settings.json",
                           autosave_file=AutosaveFile(tmp / "draft.json"))
    window.confirm_close = False
    window.resize(860, 520)
    window.show()

    def wait(predicate, ms=120_000):
        loop = QEventLoop()
        timer = QTimer()
        timer.timeout.connect(lambda: predicate() and loop.quit())
        timer.start(50)
        QTimer.singleShot(ms, loop.quit)
        loop.exec()
        timer.stop()
        return predicate()

    if not wait(lambda: window.model_ready):
        raise SystemExit("model did not load")
    window.to_edit.setText("tom.baker@example.org")
    window.subject_edit.setPlainText("Quarterly report")
    body = window.body_edit
    body.setFocus()
    body.setPlainText("Hi Tom,\n\nThanks for the quick reply, the numbers look good. "
                      "If anything comes up, please give me a call at")
    body.moveCursor(body.textCursor().MoveOperation.End)
    window.current_editor = body
    window.suggest_now()
    wait(lambda: bool(window.last_stats) and body.pieces and any(p.from_chunk for p in body.pieces), 60_000)
    QTest.qWait(300)
    out.parent.mkdir(parents=True, exist_ok=True)
    window.grab().save(str(out))
    print(f"saved {out}; ghost: {body.ghost_text!r}")

    # accepted text keeps its mark; the settings dialog measures the draft for its plot
    body.accept_ghost()
    from chunkwise.app.library import LibraryDialog
    from chunkwise.app.settings_dialog import SettingsDialog

    settings = SettingsDialog(window, window.settings)
    settings.show()
    wait(lambda: not settings.plot.note, 60_000)
    QTest.qWait(200)
    settings.grab().save(str(out.with_name(f"settings{suffix}.png")))
    settings.reject()
    library = LibraryDialog(window)
    library.show()
    wait(lambda: bool(library.chunks), 60_000)
    QTest.qWait(200)
    library.grab().save(str(out.with_name(f"library{suffix}.png")))
    library.accept()
    window.grab().save(str(out.with_name(f"editor-accepted{suffix}.png")))
    print(f"saved settings{suffix}.png, library{suffix}.png, editor-accepted{suffix}.png")
    window.shutdown()
    window.close()


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--theme", choices=["light", "dark"], default="light")
    main(theme=parser.parse_args().theme)
