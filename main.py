"""Chunkwise entry point.

``python main.py`` opens the editor when it is installed (the desktop UI
lives in ``app/``); with arguments it runs the command line, the same as
``python -m core`` or ``chunkwise``.
"""
import sys


def run() -> int:
    if len(sys.argv) > 1:
        from core.cli import main

        return main(sys.argv[1:])
    try:
        from app.main import run_app  # the desktop editor
    except ImportError:
        from core.cli import main

        print("The desktop editor is not part of this build yet; here is the command line.\n")
        return main([])
    return run_app()


if __name__ == "__main__":
    sys.exit(run())
