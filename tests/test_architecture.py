"""core/ is the engine: it never imports Qt or app/, so it runs anywhere."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_core_sources_do_not_import_qt_or_app():
    offenders = []
    for path in (ROOT / "core").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] in ("PySide6", "PyQt5", "PyQt6", "app"):
                    offenders.append(f"{path.name}: {name}")
    assert offenders == []


def test_importing_the_engine_loads_no_qt():
    code = "import sys, core, core.cli, core.engine; print(any(m.startswith(('PySide6','app')) for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_front_door_is_small():
    import core

    assert {"Engine", "GenerationRequest", "ChunkStore", "ChunkwiseError"} <= set(core.__all__)
    assert len(core.__all__) <= 15


def test_qt_signals_keep_reference_counts_straight():
    """PySide6 6.12.0's Signal.emit dropped a reference to True on every call: after enough
    keystrokes the interpreter aborted ("bool_dealloc") on exit. pyproject.toml excludes that
    release; this catches any other release with the same fault."""
    import sys

    pytest.importorskip("PySide6")
    from PySide6.QtCore import QObject, Signal

    class Emitter(QObject):
        fired = Signal(int)

    emitter = Emitter()
    emitter.fired.connect(lambda i: None)
    before = sys.getrefcount(True)
    for i in range(200):
        emitter.fired.emit(i)
    assert sys.getrefcount(True) >= before - 5
