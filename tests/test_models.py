"""Model files Chunkwise makes itself (core/models.py): requantised copies of the bundled model and
the optional Gemma 3 270M, each made once, atomically, and checked by loading it."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from chunkwise.core.errors import ModelError
from chunkwise.core.llama_runtime import LlamaRuntime
from chunkwise.core.models import GEMMA_PACKAGE, gemma_path, requantised
from chunkwise.core.paths import bundled_model_path, resolve_model_path


def test_a_requantised_copy_is_a_working_model_of_the_new_type_made_once(tmp_path):
    """Catches: a copy that does not load, keeps the source's bytes, or is made again on every call."""
    source = bundled_model_path()
    path = requantised(source, "Q4_0", tmp_path)
    assert path.name == "SmolLM2-135M-Instruct.Q4_0.gguf" and path.parent == tmp_path
    assert path.stat().st_size != source.stat().st_size        # rewritten, not copied
    stamp = path.stat().st_mtime_ns
    assert requantised(source, "q4_0", tmp_path) == path and path.stat().st_mtime_ns == stamp
    rt = LlamaRuntime(path, n_ctx=128, n_threads=2)
    try:
        tokens = rt.tokenize("Dear Anna, thank you for")
        logits = rt.eval(tokens, hidden=False).logits[-1]
        assert np.all(np.isfinite(logits)) and rt.detokenize([int(np.argmax(logits))]).strip()
    finally:
        rt.close()
    assert [p.name for p in tmp_path.iterdir()] == [path.name]    # no temporary file left beside it


def test_a_failed_requantisation_leaves_nothing_and_says_why(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ModelError, match="broken"):
        requantised(bad, "Q8_0", tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []
    with pytest.raises(ModelError, match="Q8_0"):
        requantised(bundled_model_path(), "Q3_XYZ", tmp_path / "out")


def test_gemma_without_the_extra_names_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, GEMMA_PACKAGE, None)         # import fails as if not installed
    with pytest.raises(ModelError, match=r"chunkwise\[gemma\]"):
        gemma_path(tmp_path)
    with pytest.raises(ModelError, match=r"chunkwise\[gemma\]"):
        resolve_model_path("gemma")
    from chunkwise.core.errors import ChunkwiseError
    from chunkwise.core.learning import load_teacher

    with pytest.raises(ChunkwiseError, match=r"teacher model could not be loaded.*chunkwise\[gemma\]"):
        load_teacher("gemma")                       # chunkwise mine --teacher gemma


def _fake_package(monkeypatch, assemble):
    pkg = types.SimpleNamespace(MODEL_NAME="gemma-test.gguf", assemble=assemble)
    monkeypatch.setitem(sys.modules, GEMMA_PACKAGE, pkg)
    return pkg


def test_gemma_is_assembled_once_and_a_bad_assembly_leaves_no_file(tmp_path, monkeypatch):
    """Catches: a half-assembled file left where the next start would load it, or assembling at
    every start (253 MB written each time)."""
    calls = []

    def bad(path, overwrite=False):
        path.write_bytes(b"half")
        raise ValueError("Assembled file sha256 did not match expected value")

    _fake_package(monkeypatch, bad)
    with pytest.raises(ModelError, match="sha256"):
        gemma_path(tmp_path)
    assert list(tmp_path.iterdir()) == []

    def good(path, overwrite=False):
        calls.append(path)
        path.write_bytes(b"GGUF whole")
        return path

    _fake_package(monkeypatch, good)
    first = gemma_path(tmp_path)
    assert first == tmp_path / "gemma-test.gguf" and first.read_bytes() == b"GGUF whole"
    assert gemma_path(tmp_path) == first and len(calls) == 1


def test_the_examples_in_models_hold():
    import doctest

    from chunkwise.core import models

    result = doctest.testmod(models)
    assert result.failed == 0 and result.attempted >= 2


def test_the_gemma_name_is_not_shadowed_by_a_folder_of_that_name(tmp_path, monkeypatch):
    """Catches: `--model gemma` run from a folder that holds a `gemma/` directory (a download
    folder, a checkout) failing with "Model path is a folder"; only a file named so is taken."""
    _fake_package(monkeypatch, lambda path, overwrite=False: path.write_bytes(b"GGUF whole") or path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gemma").mkdir()
    resolved = resolve_model_path("gemma")
    assert resolved.is_file() and resolved.name == "gemma-test.gguf"
    (tmp_path / "gemma").rmdir()
    (tmp_path / "gemma").write_bytes(b"GGUF mine")
    assert resolve_model_path("gemma").resolve() == (tmp_path / "gemma").resolve()
