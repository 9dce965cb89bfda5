"""The application's assets in resources/: its icon, its stylesheet and its desktop entry.

One place finds them.  From a checkout or an editable install (``pip install -e .``) they are
the repository's resources/ beside app/; a wheel (``pip install .``) carries the same folder as
chunkwise/app/_resources, because pyproject.toml maps it there as package data (a top-level folder that is
no package would not be installed at all).  A missing or unreadable asset never stops the editor:
it starts without an icon or without the stylesheet.
"""
from __future__ import annotations

from pathlib import Path

_APP = Path(__file__).resolve().parent
# The installed copy first: in a wheel install app/.. is site-packages, where a folder called
# "resources" could belong to any other distribution.
_PLACES = (_APP / "_resources", _APP.parent / "resources")

ICON_NAME = "chunkwise"          # the .desktop file's Icon=, the PNGs' file name, the Wayland app id
ICON_SIZES = (16, 22, 24, 32, 48, 64, 128, 256)   # tools/render_icons.py renders these


def _exists(path: Path, kind: str = "file") -> bool:
    try:                 # is_file/is_dir raise on a folder the user may not read: count it as missing
        return path.is_file() if kind == "file" else path.is_dir()
    except OSError:
        return False


def resources_dir() -> Path:
    for place in _PLACES:
        if _exists(place, "dir"):
            return place
    return _PLACES[-1]


def resource_path(*parts: str) -> Path:
    """Path of an asset, e.g. ``resource_path("style.qss")``; it may not exist."""
    return resources_dir().joinpath(*parts)


def icon_png(size: int) -> Path:
    return resource_path("icons", "hicolor", f"{size}x{size}", "apps", f"{ICON_NAME}.png")


def app_icon():
    """Every rendered size plus the SVG; a null QIcon when none of them is there.

    The PNGs go in first: that makes Qt keep a pixmap icon whose availableSizes() lists each
    size, and the window system is handed all of them (an icon made from the SVG first lists
    none, and X11 then gets a few scaled guesses).  The SVG covers sizes past 256 px.
    """
    from PySide6.QtCore import QSize
    from PySide6.QtGui import QIcon

    icon = QIcon()
    for size in ICON_SIZES:
        if _exists(icon_png(size)):
            icon.addFile(str(icon_png(size)), QSize(size, size))
    svg = resource_path("icons", f"{ICON_NAME}.svg")
    if _exists(svg):
        icon.addFile(str(svg))
    return icon


def stylesheet() -> str:
    """The application stylesheet, or "" when it cannot be read (Qt's defaults then)."""
    try:
        return resource_path("style.qss").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def apply_resources(app) -> None:
    """Icon, desktop entry name and stylesheet for the running application (run_app calls this
    after the theme, so the stylesheet's palette() references see the desktop's palette)."""
    from PySide6.QtGui import QGuiApplication

    # Wayland matches windows to chunkwise.desktop by this name (X11 uses StartupWMClass).
    QGuiApplication.setDesktopFileName(ICON_NAME)
    icon = app_icon()
    if not icon.isNull():
        app.setWindowIcon(icon)
    sheet = stylesheet()
    if sheet:
        app.setStyleSheet(sheet)
