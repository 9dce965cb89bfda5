"""Start the desktop editor: ``python main.py``."""
from __future__ import annotations

import sys


def _no_display() -> bool:
    import os

    return (sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM")
            and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"))


def run_app(argv: list[str] | None = None) -> int:
    if _no_display():
        print("chunkwise: error: no display found. Run the editor in a desktop session (or under Xvfb), "
              "or use the command line: python main.py --help", file=sys.stderr)
        return 1
    from PySide6.QtWidgets import QApplication, QMessageBox

    from .settings import load_settings, settings_path
    from .window import ComposeWindow

    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv)
    app.setApplicationName("Chunkwise")
    settings, notes = load_settings()
    window = ComposeWindow(settings, settings_path())
    window.show()
    if notes:
        QMessageBox.information(window, "Chunkwise settings", "\n".join(notes))
    code = app.exec()
    window.shutdown()
    return code


if __name__ == "__main__":
    sys.exit(run_app())
