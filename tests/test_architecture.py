"""core/ is the engine: it never imports Qt or app/, so it runs anywhere."""
import ast
import os
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
            elif isinstance(node, ast.ImportFrom):
                names = ["." * node.level + (node.module or "")]
            for name in names:
                if name.split(".")[0] in ("PySide6", "PyQt5", "PyQt6", "app") or name.startswith(("chunkwise.app", "..")):
                    offenders.append(f"{path.name}: {name}")
    assert offenders == []


def test_importing_the_engine_loads_no_qt():
    code = ("import sys, chunkwise.core, chunkwise.core.cli, chunkwise.core.engine; "
            "print(any(m.startswith(('PySide6', 'chunkwise.app')) for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_everything_is_installed_under_one_name():
    """pyproject.toml installs chunkwise.core and chunkwise.app, never a top-level `core` or `app`
    that another distribution could overwrite.  Run from the checkout, where `core/` is importable
    by accident: a module that still imported `core.x` would work here and fail in a wheel, so
    every module is imported and no top-level `core` or `app` may appear."""
    try:
        import tomllib
    except ModuleNotFoundError:                       # Python 3.10
        tomllib = pytest.importorskip("tomli")
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert all(name.startswith("chunkwise.") for name in setuptools["packages"])
    # Every import anywhere in the tree, also those inside functions and in the shell scripts'
    # Python: a bench, tool or test that imported `core` would load a second copy of the engine.
    stray = []
    for folder in ("core", "app", "bench", "tools", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
                stray += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in ("core", "app")]
    for path in [ROOT / "main.py", *(ROOT / "tools").glob("*.sh")]:
        text = path.read_text(encoding="utf-8")
        stray += [f"{path.relative_to(ROOT)}: {line.strip()}" for line in text.splitlines()
                  if line.strip().startswith(("from core", "import core", "from app", "import app"))]
    assert stray == []
    code = ("import importlib, pkgutil, sys\n"
            "import chunkwise.core, chunkwise.app\n"
            "for pkg in (chunkwise.core, chunkwise.app):\n"
            "    for info in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + '.'):\n"
            "        if not info.name.endswith('__main__'):\n"
            "            importlib.import_module(info.name)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('core', 'app')))")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "[]"


def test_front_door_is_small():
    import chunkwise.core as core

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


# ------------------------------------------------------------ one owner of the KV state (core/llama_runtime.py)

KV_OWNER = ROOT / "core" / "llama_runtime.py"
KV_STATE = {"tokens", "dropped"}                     # the runtime's KV bookkeeping: read-only properties
KV_PRIVATE = {"_tokens", "_dropped", "_memory"}      # what stands behind them, and llama.cpp's memory handle
RUNTIME_NAMES = {"rt", "runtime", "_rt", "teacher"}  # what the tree calls a LlamaRuntime
KV_BINDINGS = ("llama_memory_", "llama_kv_", "llama_decode", "llama_encode", "llama_batch_", "llama_get_memory",
               "llama_state_", "llama_set_embeddings")
MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "add", "update", "discard",
            "difference_update", "intersection_update", "symmetric_difference_update"}


def _name(node: ast.AST) -> str | None:
    """The last name of ``rt``, ``self.rt``, ``engine.runtime``: what the expression is called."""
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _runtime_state(node: ast.AST) -> bool:
    """``rt.tokens``, ``self.runtime.dropped``, ``rt._tokens``, ``rt.tokens[3:]``... (another class's own
    ``self._tokens`` is its business)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if not isinstance(node, ast.Attribute):
        return False
    return node.attr in KV_STATE | KV_PRIVATE and _name(node.value) in RUNTIME_NAMES


def kv_offences(source: str, where: str = "") -> list[str]:
    """Places in *source* that change the runtime's KV state or call llama.cpp's KV functions."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        found += [f"{line}: assigns {ast.unparse(t)}" for t in targets if _runtime_state(t)]
        if isinstance(node, ast.Attribute) and node.attr in KV_PRIVATE and _runtime_state(node):
            found.append(f"{line}: reaches into {ast.unparse(node)}")
        if isinstance(node, ast.Call):
            func = node.func
            name = _name(func) or ""
            if name.startswith(KV_BINDINGS):
                found.append(f"{line}: calls {name}")
            if isinstance(func, ast.Attribute) and func.attr in MUTATORS and _runtime_state(func.value):
                found.append(f"{line}: mutates {ast.unparse(func.value)}")
    return sorted(set(found))


def test_the_offence_finder_finds_offences():
    source = """
rt.tokens = []
self.rt.dropped |= {3}
del runtime.tokens[4:]
engine.runtime.tokens.append(7)
self.rt.dropped.update(range(3))
rt._tokens += (1,)
n = len(rt._dropped)
rt._lib.llama_memory_seq_rm(rt._memory, 0, 3, -1)
lib.llama_kv_self_clear(ctx)
llama_decode(ctx, batch)
"""
    lines = {int(found.split(":")[1]) for found in kv_offences(source)}
    assert lines == set(range(2, 12))                    # every line above is caught
    clean = ("self.stats.tokens += 3\nreport.tokens = 0\nself._tokens = []\nlast = rt.tokens[-1]\n"
             "rt.truncate(len(rt.tokens) - 2)\n")
    assert kv_offences(clean) == []


def test_only_the_runtime_changes_the_kv_state():
    """core/llama_runtime.py owns the KV cache, ``tokens`` and ``dropped``; everything else asks it."""
    offenders = []
    for folder in ("core", "app", "bench", "tools", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == KV_OWNER or path == Path(__file__).resolve():
                continue
            offenders += kv_offences(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert offenders == []


def test_the_architecture_page_names_only_what_exists():
    """docs/architecture.md is a map: a renamed or removed module, class or function in it would
    send the next engineer looking for something that is not there."""
    import re

    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    names = set(re.findall(r"`([^`\s]+)`", page))
    source = "\n".join(p.read_text(encoding="utf-8") for d in ("core", "app") for p in (ROOT / d).rglob("*.py"))
    missing = []
    for name in sorted(names):
        if "/" in name or name.endswith((".py", ".md")):
            if not (ROOT / name).exists():
                missing.append(name)
            continue
        for part in name.split("."):
            if not re.search(rf"\b{re.escape(part)}\b", source):
                missing.append(name)
                break
    assert names and missing == []
