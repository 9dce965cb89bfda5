"""How long the editor takes from launch to "model ready", on a first start and on the next one.

Each start is a fresh process running the real window (offscreen) with its own data folder,
so the first start pays everything a new user pays: the model file loaded, the library
created, the model measured (unless its statistics ship with Chunkwise), the slot
classifier loaded or trained.  The second start reuses that data folder.

    python bench/first_start.py            # 3 fresh data folders, a first and a second start each
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import OUT, machine, table  # noqa: E402

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from chunkwise.app.settings import load_settings, settings_path
from chunkwise.app.window import ComposeWindow
app = QApplication([])
settings, _notes = load_settings()
window = ComposeWindow(settings, settings_path())
window.confirm_close = False
window.show()
measured = []
def on_progress(what, done, total):
    if what not in measured:
        measured.append(what)
window.worker.progress.connect(on_progress)
def check():
    if window.model_ready or time.perf_counter() - t0 > 300:
        print(json.dumps({"ready": window.model_ready, "seconds": round(time.perf_counter() - t0, 2),
                          "label": window.model_label.text(), "steps": measured}))
        window.close()
        app.quit()
    else:
        QTimer.singleShot(20, check)
QTimer.singleShot(0, check)
app.exec()
window.shutdown()
"""


def start(home: Path) -> dict:
    env = dict(os.environ, HOME=str(home), XDG_DATA_HOME=str(home / "data"),
               XDG_CONFIG_HOME=str(home / "config"), QT_QPA_PLATFORM="offscreen",
               CHUNKWISE_PASSPHRASE=os.environ.get("CHUNKWISE_PASSPHRASE", "first-start-benchmark"),
               PYTHONPATH=str(ROOT))
    env.pop("CHUNKWISE_DB", None)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if not line:
        raise SystemExit(f"the editor did not report: {out.stderr[-2000:]}")
    return json.loads(line[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows, results = [], []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="chunkwise-first-start-") as home:
            first = start(Path(home))
            second = start(Path(home))
        results.append({"first": first, "second": second})
        rows.append([run + 1, f"{first['seconds']:.2f}", f"{second['seconds']:.2f}",
                     ", ".join(first["steps"]) or "-"])
        print(rows[-1], flush=True)
    firsts = sorted(r["first"]["seconds"] for r in results)
    seconds = sorted(r["second"]["seconds"] for r in results)
    text = (f"# First start ({machine()})\n\n"
            + table(["run", "first start (s)", "second start (s)", "what the first start showed"], rows)
            + f"\n\nmedian: first {firsts[len(firsts) // 2]:.2f} s, second {seconds[len(seconds) // 2]:.2f} s"
            " (launch to model ready, Python and Qt start-up included)\n")
    print(text)
    OUT.mkdir(exist_ok=True)
    (OUT / "first_start.md").write_text(text, encoding="utf-8")
    (OUT / "first_start.json").write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
