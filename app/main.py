"""Start the desktop editor: ``python main.py``."""
from __future__ import annotations

import sys


def _no_display() -> bool:
    import os

    return (sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM")
            and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"))


def crash_report(exc_type, exc, tb) -> str:
    """What an unexpected error reports: its type and where, never its message.

    Messages can quote the user's text (a chunk, a line of the email); the
    frames say where to look without it.
    """
    import traceback

    frames = "".join(traceback.format_tb(tb, limit=8))
    return f"chunkwise: internal error: {exc_type.__name__}\n{frames}"


def _install_excepthook(window_ref: list) -> None:
    def hook(exc_type, exc, tb):
        print(crash_report(exc_type, exc, tb), file=sys.stderr, flush=True)
        window = window_ref[0] if window_ref else None
        if window is not None:
            try:
                window.autosave_now()
                from PySide6.QtWidgets import QMessageBox

                QMessageBox.warning(window, "Chunkwise",
                                    f"Something went wrong inside Chunkwise ({exc_type.__name__}). "
                                    "Your email is saved; you can keep writing.")
            except Exception:   # noqa: BLE001 - a crash handler must not crash
                pass

    sys.excepthook = hook


def run_app(argv: list[str] | None = None) -> int:
    if _no_display():
        print("chunkwise: error: no display found. Run the editor in a desktop session (or under Xvfb), "
              "or use the command line: python main.py --help", file=sys.stderr)
        return 1
    from PySide6.QtWidgets import QApplication, QMessageBox

    from .passphrase import ask_passphrase
    from .settings import load_settings, settings_path
    from .window import ComposeWindow
    from .worker import finish_worker_threads

    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication

    from chunkwise.core.paths import data_dir

    from . import instance as editor_lock
    from .resources import apply_resources
    from .theme import apply_desktop_theme

    if QApplication.instance() is None:     # fractional scale factors (150%) as the desktop sets them, not rounded
        QGuiApplication.setHighDpiScaleFactorRoundingPolicy(Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv)
    app.setApplicationName("Chunkwise")
    apply_desktop_theme(app)
    apply_resources(app)                 # icon and stylesheet; without them the editor still starts
    folder = data_dir()
    lock = editor_lock.hold_editor_lock(folder)          # held until the window has closed
    if lock is None:
        if editor_lock.ask_to_raise(folder):
            return 0                                     # the open editor came to the front
        if not editor_lock.ask_open_anyway():
            return 0
        lock = editor_lock.take_over(folder)
    settings, notes = load_settings()
    if not ask_passphrase(store=settings.store_path()):
        notes.append("No passphrase given: the chunk store stays locked for this session; "
                     "suggestions come from the model alone. Tools → Unlock library… unlocks it later.")
    window_ref: list = []
    _install_excepthook(window_ref)
    window = ComposeWindow(settings, settings_path())
    window_ref.append(window)
    window.show()
    second_starts = editor_lock.listen_for_second_starts(folder, window)   # a second start raises this window
    if notes:
        QMessageBox.information(window, "Chunkwise settings", "\n".join(notes))
    code = app.exec()
    if second_starts is not None:
        second_starts.close()            # a start from now on gets the message until the lock is let go
    window.shutdown()
    lock.unlock()                        # the emails in progress are saved: another editor may start
    finish_worker_threads()              # a step that outlasted the window's second: let it end, never abort
    return code


if __name__ == "__main__":
    sys.exit(run_app())
