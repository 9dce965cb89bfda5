"""The whole benchmark suite, one command (not timed end to end; docs/benchmarks.md gives each script's time):

    python bench/run_all.py            # writes bench/out/*.txt and docs/img/*.png

Each script runs in its own process, one after another, so they do not share
the CPU; their tables go to bench/out/<name>.txt and to the terminal.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ["first_start.py", "decoding.py", "matching.py", "retrieval.py", "store_load.py", "editor_latency.py",
           "drafting.py",
           "anchors.py", "distill.py", "personal.py", "entities.py", "prose.py", "next_word.py", "cli_profile.py", "slot_reading.py", "keystrokes.py", "midword.py", "siblings.py",
           "midword.py --split test", "word_as_typed.py", "soak.py",
           "library_update.py", "learn_latency.py", "overhead.py", "decoding.py --editor-path", "model_readings.py",
           "slot_features.py", "slot_layers.py", "model_evidence.py", "probes.py", "repeats.py"]
# An entry with arguments writes bench/out/<script>-<arguments>.txt ("decoding.py --editor-path" ->
# decoding-editor-path.txt), beside the script's plain run.
# Not here: bench/retrieval.py --million (half an hour, most of it building a 1,000,000-context index),
# whose figures the docs quote with that command and the commit they were run at.


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--skip", nargs="*", default=[], metavar="SCRIPT", help="leave these out (say why in the docs)")
    ap.add_argument("--only", nargs="*", default=None, metavar="SCRIPT")
    args = ap.parse_args()
    out_dir = HERE / "out"
    out_dir.mkdir(exist_ok=True)
    failed = []
    for script in SCRIPTS:
        name, *extra = script.split()          # --only / --skip name scripts: all of a script's entries
        if name in args.skip or (args.only is not None and name not in args.only):
            continue
        start = time.perf_counter()
        print(f"== {script}", flush=True)
        proc = subprocess.run([sys.executable, str(HERE / name), *extra], capture_output=True, text=True)
        text = proc.stdout + (f"\n[stderr]\n{proc.stderr}" if proc.returncode else "")
        out_name = "-".join([Path(name).stem, *(a.lstrip("-") for a in extra)])
        (out_dir / f"{out_name}.txt").write_text(text, encoding="utf-8")
        print(text, flush=True)
        print(f"== {script}: {'ok' if proc.returncode == 0 else 'FAILED'} in {time.perf_counter() - start:.0f} s\n")
        if proc.returncode:
            failed.append(script)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
