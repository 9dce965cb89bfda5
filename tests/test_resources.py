"""resources/: the icon at every size, the stylesheet, the desktop entry, and how a wheel carries them."""
from __future__ import annotations

import configparser
import importlib
import importlib.util
import re
from pathlib import Path

import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QGuiApplication, QIcon, QImage

from chunkwise.app import resources
from tests.conftest import stub_run_app
from chunkwise.app.resources import ICON_NAME, ICON_SIZES, app_icon, apply_resources, icon_png, resource_path, stylesheet

ROOT = Path(__file__).resolve().parents[1]

try:
    import tomllib
except ImportError:                    # Python 3.10
    tomllib = pytest.importorskip("tomli")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


@pytest.fixture
def app_state(qapp):
    """run_app and apply_resources change the one QApplication every test shares: put it back."""
    saved = (qapp.styleSheet(), qapp.windowIcon(), qapp.applicationName(), QGuiApplication.desktopFileName())
    yield qapp
    qapp.setStyleSheet(saved[0])
    qapp.setWindowIcon(saved[1])
    qapp.setApplicationName(saved[2])
    QGuiApplication.setDesktopFileName(saved[3])


def test_a_checkout_finds_the_repository_folder():
    assert resources.resources_dir() == ROOT / "resources"
    assert resource_path("style.qss") == ROOT / "resources" / "style.qss"


def test_the_icon_has_every_size_desktops_use(qapp):
    render = importlib.util.spec_from_file_location("render_icons", ROOT / "tools" / "render_icons.py")
    tool = importlib.util.module_from_spec(render)
    render.loader.exec_module(tool)
    assert tuple(tool.SIZES) == ICON_SIZES          # the script renders what the app loads
    for size in ICON_SIZES:
        assert icon_png(size) == tool.png_path(size)
        image = QImage(str(icon_png(size)))
        assert not image.isNull(), icon_png(size)
        assert (image.width(), image.height()) == (size, size)
        assert image.hasAlphaChannel()               # rounded corners, not a white square
    icon = app_icon()
    assert {QSize(s, s) for s in ICON_SIZES} <= set(icon.availableSizes())
    assert icon.pixmap(QSize(512, 512)).width() == 512   # past 256 px


def test_the_svg_is_a_square_icon(qapp):
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(resource_path("icons", f"{ICON_NAME}.svg")))
    assert renderer.isValid()
    box = renderer.viewBox()
    assert box.width() == box.height() > 0


def test_the_stylesheet_parses_and_names_no_fixed_colour(app_state, qtbot, qtlog):
    from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QMainWindow, QVBoxLayout

    sheet = stylesheet()
    assert sheet.strip()
    app_state.setStyleSheet(sheet)
    window = QMainWindow()            # Qt parses an application stylesheet when it polishes a widget
    qtbot.addWidget(window)
    window.statusBar().addPermanentWidget(QLabel("3 words from your library"))
    dialog = QDialog()
    qtbot.addWidget(dialog)
    QVBoxLayout(dialog).addWidget(QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel))
    window.show()
    dialog.show()
    qtbot.waitExposed(dialog)
    assert not [r.message for r in qtlog.records if "parse" in r.message.lower()]
    # Colours come from the palette (app/theme.py follows the desktop's light or dark scheme).
    code = re.sub(r"/\*.*?\*/", "", sheet, flags=re.S)
    assert not re.search(r"#[0-9a-fA-F]{3,8}\b|\b(rgba?|hsla?|hsva?)\s*\(", code)
    for prop, value in re.findall(r"([\w-]+)\s*:\s*([^;{}]+);", code):
        if "color" in prop or "background" in prop or prop.startswith("border"):
            assert value.strip().startswith("palette(") or value.strip() in ("none", "transparent", "0", "0px"), \
                (prop, value)


def test_missing_assets_leave_the_app_as_it_was(app_state, tmp_path, monkeypatch):
    monkeypatch.setattr(resources, "_PLACES", (tmp_path / "gone", tmp_path / "also-gone"))
    assert app_icon().isNull()
    assert stylesheet() == ""
    app_state.setStyleSheet("")
    apply_resources(app_state)                       # no exception, no stylesheet, no icon
    assert app_state.styleSheet() == ""


def test_an_installed_copy_is_looked_up_first(tmp_path, monkeypatch):
    installed, checkout = tmp_path / "app" / "_resources", tmp_path / "resources"
    for folder in (installed, checkout):
        folder.mkdir(parents=True)
        (folder / "style.qss").write_text(f"/* {folder.name} */", encoding="utf-8")
    monkeypatch.setattr(resources, "_PLACES", (installed, checkout))
    assert stylesheet() == "/* _resources */"


def test_run_app_sets_the_icon_the_stylesheet_and_the_desktop_entry_name(app_state, monkeypatch):
    """run_app's own code, with the window, the passphrase prompt and the event loop left out."""
    from chunkwise.app import main

    shown = []

    class FakeWindow:
        def __init__(self, *_args):
            pass

        def show(self):
            shown.append(True)

        def shutdown(self):
            pass

    stub_run_app(monkeypatch, app_state, FakeWindow)
    app_state.setStyleSheet("")
    app_state.setWindowIcon(QIcon())

    assert main.run_app([]) == 0
    assert shown
    assert app_state.styleSheet() == stylesheet() != ""
    assert not app_state.windowIcon().isNull()
    assert {QSize(s, s) for s in ICON_SIZES} <= set(app_state.windowIcon().availableSizes())
    entry = _desktop_entry()
    assert QGuiApplication.desktopFileName() == ICON_NAME == resource_path("chunkwise.desktop").stem
    assert app_state.applicationName() == entry["StartupWMClass"]   # X11's WM_CLASS class is this name


def _desktop_entry() -> dict:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str                          # keys are case-sensitive
    parser.read_string(resource_path("chunkwise.desktop").read_text(encoding="utf-8"))
    assert parser.sections() == ["Desktop Entry"]
    return dict(parser["Desktop Entry"])


def test_the_desktop_entry_is_valid_and_points_at_real_things():
    entry = _desktop_entry()
    known = {"Type", "Version", "Name", "GenericName", "NoDisplay", "Comment", "Icon", "Hidden", "OnlyShowIn",
             "NotShowIn", "DBusActivatable", "TryExec", "Exec", "Path", "Terminal", "Actions", "MimeType",
             "Categories", "Implements", "Keywords", "StartupNotify", "StartupWMClass", "PrefersNonDefaultGPU",
             "SingleMainWindow"}
    assert set(entry) <= known, set(entry) - known   # a misspelt key is silently ignored by desktops
    assert entry["Type"] == "Application"
    assert entry["Name"] == "Chunkwise"
    assert entry["GenericName"] and entry["Comment"]
    assert entry["Terminal"] == "false"
    assert entry["Categories"].endswith(";")
    assert {"Office", "TextEditor", "Utility"} <= set(entry["Categories"].split(";"))
    # Icon= is a theme name (no path, no extension) that the rendered PNGs carry.
    assert entry["Icon"] == ICON_NAME and all(icon_png(s).name == f"{ICON_NAME}.png" for s in ICON_SIZES)
    # Exec= runs a command this package declares, and that command's function exists.
    command = entry["Exec"].split()[0]
    project = _pyproject()["project"]
    scripts = {**project.get("scripts", {}), **project.get("gui-scripts", {})}
    assert command in project.get("gui-scripts", {}), scripts   # a GUI script: no console window on Windows
    module, _, func = scripts[command].partition(":")
    assert callable(getattr(importlib.import_module(module), func))


def test_a_wheel_carries_every_file_in_resources():
    """`pip install .` copies only what pyproject.toml names: every file under resources/ must be."""
    setuptools = _pyproject()["tool"]["setuptools"]
    package = next(name for name, folder in setuptools["package-dir"].items() if folder == "resources")
    assert package == "chunkwise.app._resources"            # where app/resources.py looks in an installed copy
    assert resources._PLACES[0] == Path(resources.__file__).resolve().parent / "_resources"
    assert package in setuptools["packages"]
    folder = ROOT / "resources"
    shipped = {path for pattern in setuptools["package-data"][package] for path in folder.glob(pattern)}
    present = {path for path in folder.rglob("*") if path.is_file() and "__pycache__" not in path.parts}
    assert present and present == shipped, sorted(str(p.relative_to(folder)) for p in present ^ shipped)
