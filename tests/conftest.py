"""Shared fixtures: the real default model (loaded once), in-memory stores,
and an environment that keeps tests away from the user's real files."""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

PAPER_PROFILE = ROOT / "tests" / "data" / "pii_profile_paper.json"  # a copy of shared/data/
PHRASINGS = ROOT / "tests" / "data" / "pii_phrasings.json"


@pytest.fixture(autouse=True)
def _private_paths(tmp_path, monkeypatch):
    """Every test gets its own data directory: the user's store is never touched."""
    monkeypatch.setenv("CHUNKWISE_DB", str(tmp_path / "user-data" / "chunks.db"))
    monkeypatch.setenv("CHUNKWISE_CONFIG", str(tmp_path / "user-config" / "settings.json"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    # The session's runtime folder (the editor's socket for second starts, app/instance.py): a private
    # one of the test's, short enough for a socket's path, which tmp_path may not be.
    runtime_dir = tempfile.mkdtemp(prefix="cw-run-")                    # mode 0700
    monkeypatch.setenv("XDG_RUNTIME_DIR", runtime_dir)
    monkeypatch.delenv("CHUNKWISE_MODEL", raising=False)
    # No keychain on a test machine: file stores take their key from this passphrase
    # (tests/test_crypto.py covers the keychain path with an in-memory keyring).
    monkeypatch.setenv("CHUNKWISE_PASSPHRASE", "correct horse battery staple")
    yield
    shutil.rmtree(runtime_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def runtime():
    from chunkwise.core.llama_runtime import LlamaRuntime
    from chunkwise.core.paths import bundled_model_path

    rt = LlamaRuntime(bundled_model_path(), n_ctx=2048, n_threads=2)
    yield rt
    rt.close()


@pytest.fixture
def store():
    from chunkwise.core.store import ChunkStore

    s = ChunkStore(":memory:")
    yield s
    s.close()


@pytest.fixture
def make_engine(runtime):
    """Engines over the shared runtime, each with its own (in-memory by default) store."""
    from chunkwise.core.engine import Engine
    from chunkwise.core.store import ChunkStore

    made = []

    def factory(store=None, **kwargs):
        engine = Engine(runtime=runtime, store=store if store is not None else ChunkStore(":memory:"), **kwargs)
        made.append(engine)
        return engine

    yield factory
    for e in made:
        e.store.close()
    runtime.reset()


def paper_profile() -> dict:
    data = json.loads(PAPER_PROFILE.read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_")}


def phrasings() -> dict:
    return json.loads(PHRASINGS.read_text(encoding="utf-8"))


@pytest.fixture
def pii_engine(make_engine):
    """The paper's profile stored with its first four prefixes per field."""
    engine = make_engine()
    for field, entry in paper_profile().items():
        engine.store.add_chunk(entry["value"], "pii", entry["contexts"][:4], label=field)
    engine.refresh()
    return engine


def stub_run_app(monkeypatch, app, window_class) -> None:
    """run_app's own code alone (app/main.py): the window is *window_class*, the passphrase prompt says
    yes, settings are empty, and the event loop returns at once."""
    import types

    fakes = {
        "chunkwise.app.passphrase": types.SimpleNamespace(ask_passphrase=lambda **_: True),
        "chunkwise.app.settings": types.SimpleNamespace(
            load_settings=lambda: (types.SimpleNamespace(store_path=lambda: None), []), settings_path=lambda: None),
        "chunkwise.app.window": types.SimpleNamespace(ComposeWindow=window_class),
        "chunkwise.app.worker": types.SimpleNamespace(finish_worker_threads=lambda: None),
    }
    for name, module in fakes.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    monkeypatch.setattr(app, "exec", lambda: 0)
