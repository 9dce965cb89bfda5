"""Colours that follow the desktop's light or dark theme, with readable contrast in both.

The window takes the palette the desktop gives Qt.  Where the desktop says "dark" but Qt's
platform theme hands out a light palette (common on Linux without a platform theme plugin),
a dark Fusion palette is applied; ``CHUNKWISE_THEME=light|dark`` overrides both.  The ghost
text, the highlight behind library text and the tint of accepted library text are derived
from the palette in use, never fixed, so they stay readable in either theme.

>>> from PySide6.QtGui import QColor
>>> round(contrast(QColor("black"), QColor("white")), 1)
21.0
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette


def _luminance(c: QColor) -> float:
    def channel(v: float) -> float:
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF())


def contrast(a: QColor, b: QColor) -> float:
    """WCAG contrast ratio of two colours (1 to 21; 4.5 is readable body text)."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _mix(a: QColor, b: QColor, t: float) -> QColor:
    return QColor.fromRgbF(a.redF() * (1 - t) + b.redF() * t, a.greenF() * (1 - t) + b.greenF() * t,
                           a.blueF() * (1 - t) + b.blueF() * t)


@dataclass(frozen=True)
class Colours:
    dark: bool
    ghost: QColor              # suggested model text
    chunk_text: QColor         # suggested library text ...
    chunk_background: QColor   # ... on its highlight
    mark_background: QColor    # accepted library text in the email
    warning: QColor            # the locked-library banner, form errors


def colours(palette: QPalette) -> Colours:
    base, text = palette.color(QPalette.Base), palette.color(QPalette.Text)
    dark = base.lightness() < 128
    amber = QColor(255, 200, 60)
    if dark:
        return Colours(True, ghost=_mix(base, text, 0.55), chunk_text=QColor(255, 222, 150),
                       chunk_background=_mix(base, amber, 0.28), mark_background=_mix(base, amber, 0.16),
                       warning=QColor(255, 170, 90))
    return Colours(False, ghost=_mix(base, text, 0.5), chunk_text=QColor(110, 80, 0),
                   chunk_background=_mix(base, amber, 0.4), mark_background=_mix(base, amber, 0.2),
                   warning=QColor(138, 75, 0))


def dark_palette() -> QPalette:
    p = QPalette()
    window, base, text = QColor(45, 45, 48), QColor(30, 30, 32), QColor(230, 230, 230)
    for role, colour in ((QPalette.Window, window), (QPalette.WindowText, text), (QPalette.Base, base),
                         (QPalette.AlternateBase, window), (QPalette.Text, text), (QPalette.Button, window),
                         (QPalette.ButtonText, text), (QPalette.ToolTipBase, window), (QPalette.ToolTipText, text),
                         (QPalette.PlaceholderText, QColor(150, 150, 150)), (QPalette.Highlight, QColor(60, 120, 200)),
                         (QPalette.HighlightedText, QColor(255, 255, 255)), (QPalette.Link, QColor(120, 170, 255))):
        p.setColor(role, colour)
    p.setColor(QPalette.Disabled, QPalette.Text, QColor(120, 120, 120))
    p.setColor(QPalette.Disabled, QPalette.ButtonText, QColor(120, 120, 120))
    p.setColor(QPalette.Disabled, QPalette.WindowText, QColor(120, 120, 120))
    return p


def wanted_scheme() -> str:
    """"dark" or "light": CHUNKWISE_THEME if set, else what the desktop says (Qt 6.5+)."""
    forced = os.environ.get("CHUNKWISE_THEME", "").strip().lower()
    if forced in ("dark", "light"):
        return forced
    hints = QGuiApplication.styleHints()
    scheme = hints.colorScheme() if hasattr(hints, "colorScheme") else None
    return "dark" if scheme == Qt.ColorScheme.Dark else "light"


def apply_desktop_theme(app) -> None:
    """Give the application the palette of the desktop's scheme, now and whenever the desktop switches."""
    default, state = app.palette(), {"forced": False}

    def apply(*_args) -> None:
        dark_now = app.palette().color(QPalette.Base).lightness() < 128
        if wanted_scheme() == "dark" and not dark_now:
            app.setStyle("Fusion")            # the platform style may ignore a dark palette; Fusion follows it
            app.setPalette(dark_palette())
            state["forced"] = True
        elif wanted_scheme() == "light" and state["forced"]:
            app.setPalette(default)
            state["forced"] = False

    apply()
    hints = QGuiApplication.styleHints()
    if hasattr(hints, "colorSchemeChanged"):
        hints.colorSchemeChanged.connect(apply)
