"""Render the application icon's PNGs from its SVG: ``python tools/render_icons.py``.

Writes resources/icons/hicolor/<N>x<N>/apps/chunkwise.png for every size in SIZES (the
freedesktop icon-theme layout, so the folder can be copied into ~/.local/share/icons as it is).
Desktops and window managers that cannot scale SVGs, and taskbars that want an exact size,
pick one of these.  The PNGs are committed; run this again after editing the SVG.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SVG = ROOT / "resources" / "icons" / "chunkwise.svg"
SIZES = (16, 22, 24, 32, 48, 64, 128, 256)     # the sizes desktop icon themes ship


def png_path(size: int, root: Path = ROOT) -> Path:
    return root / "resources" / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "chunkwise.png"


def render(svg: Path = SVG, sizes=SIZES, root: Path = ROOT) -> list[Path]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")   # no window is needed, nor a display
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # noqa: F841 - QPainter needs one
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"cannot read {svg}")
    written = []
    for size in sizes:
        image = QImage(size, size, QImage.Format_ARGB32)
        image.fill(Qt.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.Antialiasing)
        renderer.render(painter)
        painter.end()
        out = png_path(size, root)
        out.parent.mkdir(parents=True, exist_ok=True)
        if not image.save(str(out), "PNG"):
            raise SystemExit(f"cannot write {out}")
        written.append(out)
    return written


if __name__ == "__main__":
    for path in render():
        print(path.relative_to(ROOT))
