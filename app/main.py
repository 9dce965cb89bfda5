"""Start the desktop editor: ``python main.py``."""
from __future__ import annotations

import sys


def run_app(argv: list[str] | None = None) -> int:
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
