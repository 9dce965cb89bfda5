"""Chunkwise entry point.

``python main.py`` opens the editor (``app/``); with arguments it runs the
command line, the same as ``python -m chunkwise.core`` or ``chunkwise``.
"""
import sys


def run() -> int:
    if len(sys.argv) > 1:
        from chunkwise.core.cli import main

        return main(sys.argv[1:])
    from chunkwise.app.main import run_app  # the desktop editor

    return run_app()


if __name__ == "__main__":
    sys.exit(run())
