"""Train the slot classifier for the bundled model and ship it (core/data/slots-<model>.npz).

Every user of the bundled model would otherwise train the same classifier at first start (about
a minute on two cores); with the file, the engine loads it in milliseconds. Other models train
theirs once and keep it in the store.

    python tools/train_slots.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core import slots  # noqa: E402
from core.encoding import ModelStats  # noqa: E402
from core.engine import Engine  # noqa: E402


def main() -> None:
    start = time.perf_counter()
    engine = Engine(n_threads=2)                 # an in-memory store: the engine trains (or loads the shipped file)
    clf = engine.matcher.slots
    source = f"{slots.source_id()}|{ModelStats.source_id()}"
    path = slots.save_shipped(engine.runtime.identity, source, clf)
    print(f"ready in {time.perf_counter() - start:.1f} s -> {path}")


if __name__ == "__main__":
    main()
