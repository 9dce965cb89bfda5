"""Measure the bundled model once and ship the results (core/data/stats-<model>.npz, slots-<model>.npz).

Every user of the bundled model would otherwise measure the same whitening statistics (8-9 s on
two cores) and train the same slot classifier (1028 s here: every fragment is read packed and alone)
at first start; with the files, the engine loads both in milliseconds.  Other models measure and train once and keep the
results in the store.

    python tools/train_slots.py                 # both
    python tools/train_slots.py --only stats    # the statistics alone (the classifier is kept)
    python tools/train_slots.py --model gemma --only slots   # the optional Gemma 3 270M's classifier

For a model other than the bundled one only the classifier is worth shipping: training it reads
about 100k tokens with every position's output and then each fragment again alone (43 minutes for
Gemma 3 270M here, bench/out/train_slots-gemma.txt), while its statistics take seconds.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chunkwise.core import slots  # noqa: E402
from chunkwise.core.encoding import ModelStats  # noqa: E402
from chunkwise.core.engine import Engine  # noqa: E402
from chunkwise.core.llama_runtime import LlamaRuntime  # noqa: E402
from chunkwise.core.paths import resolve_model_path  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["stats", "slots"])
    parser.add_argument("--model", default=None, help="a model file or alias (default: the bundled model)")
    args = parser.parse_args()
    start = time.perf_counter()
    runtime = LlamaRuntime(resolve_model_path(args.model), n_threads=2)
    if args.only != "slots":
        path = ModelStats.compute(runtime).ship(runtime.identity)     # measured afresh, never read back
        print(f"statistics in {time.perf_counter() - start:.1f} s -> {path}")
    if args.only != "stats":
        engine = Engine(runtime=runtime)          # an in-memory store: trains the classifier (or loads the shipped file)
        clf = engine.matcher.slots
        source = f"{slots.source_id()}|{ModelStats.source_id()}"
        path = slots.save_shipped(runtime.identity, source, clf)
        print(f"classifier ready in {time.perf_counter() - start:.1f} s -> {path}")


if __name__ == "__main__":
    main()
