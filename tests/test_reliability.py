"""Models that change, vanish or do not fit; a second instance on the same store."""
import shutil
import struct

import pytest

from chunkwise.core import ChunkStore, Engine, GenerationRequest
from chunkwise.core.errors import ChunkwiseError, ModelError
from chunkwise.core.llama_runtime import LlamaRuntime
from tests.conftest import paper_profile


def fill(store, n=4):
    for field, entry in list(paper_profile().items())[:n]:
        store.add_chunk(entry["value"], "pii", entry["contexts"][:3], label=field)


def test_switching_models_keeps_chunks_and_switching_back_recomputes_nothing(tmp_path, runtime):
    db = tmp_path / "chunks.db"
    with ChunkStore(db) as store:
        fill(store)
        before = store.count()
    other_file = tmp_path / "SmolLM2-other-copy.gguf"         # another file is another model identity
    shutil.copy(runtime.model_path, other_file)

    first = Engine(runtime=runtime, store=ChunkStore(db))
    assert first.refresh() == before[1]
    first.store.close()
    other_rt = LlamaRuntime(other_file, n_ctx=1024, n_threads=2)
    try:
        second = Engine(runtime=other_rt, store=ChunkStore(db))
        assert second.store.count() == before                   # every chunk kept
        assert second.refresh() == before[1]                    # derived data built for the new model
        second.store.close()
    finally:
        other_rt.close()
    back = Engine(runtime=runtime, store=ChunkStore(db))
    assert back.refresh() == 0 and back.index_status == "loaded"  # still valid: nothing recomputed
    assert len(back.matcher) == before[1]
    back.store.close()


def test_model_file_deleted_while_running(tmp_path, runtime):
    path = tmp_path / "model.gguf"
    shutil.copy(runtime.model_path, path)
    engine = Engine(path, ChunkStore(":memory:"), n_ctx=512, n_threads=2)
    try:
        first = engine.generate(GenerationRequest("Dear Ms. Smith,\n\nThank you for", max_tokens=6)).text
        path.unlink()                                          # the loaded model stays usable
        again = engine.generate(GenerationRequest("Dear Ms. Smith,\n\nThank you for", max_tokens=6)).text
        assert again == first
    finally:
        engine.close()
    with pytest.raises(ModelError, match="not found"):
        Engine(path, ChunkStore(":memory:"))


def _gguf_with_architecture(path, arch: bytes):
    """A minimal GGUF v3 header: no tensors, one key general.architecture = arch."""
    key = b"general.architecture"
    data = b"GGUF" + struct.pack("<I", 3) + struct.pack("<Q", 0) + struct.pack("<Q", 1)
    data += struct.pack("<Q", len(key)) + key + struct.pack("<I", 8) + struct.pack("<Q", len(arch)) + arch
    path.write_bytes(data)


def test_unknown_architecture_gets_a_clear_message(tmp_path):
    path = tmp_path / "future.gguf"
    _gguf_with_architecture(path, b"quantum-transformer-9000")
    with pytest.raises(ModelError, match="architecture"):
        LlamaRuntime(path)


def test_context_larger_than_memory_allows(runtime):
    with pytest.raises(ChunkwiseError) as info:
        LlamaRuntime(runtime.model_path, n_ctx=1 << 30, n_threads=2)   # a billion tokens of KV cache
    assert "context" in str(info.value).lower()


def test_second_instance_on_the_same_store_does_not_corrupt_it(tmp_path, runtime):
    """Two windows on one store: writes queue or fail with a clear message, never corrupt."""
    db = tmp_path / "chunks.db"
    one = Engine(runtime=runtime, store=ChunkStore(db))
    two = Engine(runtime=runtime, store=ChunkStore(db))
    fill(one.store, 2)
    one.refresh()
    dana = two.store.add_chunk("Best, Dana", "snippet", ["Thanks again,"])
    two.refresh()
    one.refresh()
    assert one.store.count() == two.store.count() and one.store.count()[0] == 3
    one.store.db.conn.execute("BEGIN IMMEDIATE")               # the first holds the write lock ...
    two.store.db.conn.execute("PRAGMA busy_timeout = 100")
    with pytest.raises(ChunkwiseError, match="locked by another"):
        two.store.add_chunk("x", "phrase", ["y"])              # ... the second is told, not broken
    one.store.db.conn.rollback()
    two.store.add_chunk("x", "phrase", ["y"])
    assert one.store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    two.refresh()                                              # the second sees every write, its own included
    out = two.generate(GenerationRequest("Thanks again,", max_tokens=4))
    assert out.spans and out.spans[0].chunk_id == dana
    one.store.close()
    two.store.close()
