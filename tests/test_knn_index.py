"""The kNN-LM's HNSW graph is built in the learning job, kept beside the store (sealed) and read
back on the next start instead of being built again on the first suggestion (core/knn.py
save_index / load_index, Engine.knn)."""
from __future__ import annotations

import numpy as np

import chunkwise.core.knn as knn_module
from chunkwise.core.corpus import Document
from chunkwise.core.learning import mine
from chunkwise.core.store import ChunkStore
from test_distill import EMAILS
from test_privacy_at_rest import holds_vector


def _learn(engine, texts=EMAILS):
    return mine(engine, [Document(f"e{i}", t) for i, t in enumerate(texts)], gamma=0.5, knn=True)


def _probe(engine) -> np.ndarray:
    rt = engine.runtime
    out = engine.runtime_states(rt.tokenize("Hi Sam,\n\nThank you for your email. I hope this", add_special=True))
    return out.hidden[-1]                                                       # (d,)


def test_learning_keeps_the_graph_and_the_next_start_reads_it_back(make_engine, tmp_path, monkeypatch):
    path = tmp_path / "chunks.db"
    engine = make_engine(store=ChunkStore(path))
    built = []
    real_build = knn_module.build_index
    monkeypatch.setattr(knn_module, "build_index", lambda *a, **k: built.append(1) or real_build(*a, **k))
    _learn(engine)
    assert built == [1] and engine.knn_index_path.exists()        # built once, in the learning job
    hidden = _probe(engine)
    before = engine.knn.neighbours(hidden)
    assert built == [1]                                          # the first suggestion builds nothing
    engine.store.close()

    again = make_engine(store=ChunkStore(path))                  # the next start
    after = again.knn.neighbours(hidden)
    assert built == [1]                                          # read back, not built
    assert after[0].tolist() == before[0].tolist() and np.allclose(after[1], before[1])
    assert len(again.knn) == again.store.knn_count(again.model_id)


def test_a_graph_of_other_rows_or_a_damaged_one_is_built_again(make_engine, tmp_path):
    path = tmp_path / "chunks.db"
    engine = make_engine(store=ChunkStore(path))
    _learn(engine, EMAILS[:2])
    first = engine.knn_index_path.read_bytes()
    _learn(engine, EMAILS[2:])                                    # more rows: the kept graph is for fewer
    assert engine.knn_index_path.read_bytes() != first
    assert engine.knn.index.get_current_count() == engine.store.knn_count(engine.model_id)
    engine.store.close()
    damaged = bytearray(engine.knn_index_path.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    engine.knn_index_path.write_bytes(bytes(damaged))
    again = make_engine(store=ChunkStore(path))
    assert again.knn.index.get_current_count() == again.store.knn_count(again.model_id)   # built, no error
    assert knn_module.load_index(again.knn_index_path, again._knn_signature(), again.store.key) is not None


def test_forgetting_what_was_learned_removes_the_kept_graph(make_engine, tmp_path):
    engine = make_engine(store=ChunkStore(tmp_path / "chunks.db"))
    _learn(engine)
    assert engine.knn_index_path.exists()
    engine.forget_learned()
    assert not engine.knn_index_path.exists()
    assert not engine.has_knn


def test_the_kept_graph_is_sealed_with_the_store_key(make_engine, tmp_path):
    engine = make_engine(store=ChunkStore(tmp_path / "chunks.db"))
    _learn(engine)
    key_row = engine.matcher.stats.transform(engine.store.knn_data(engine.model_id)[0][:1])[0]   # as the graph keeps it
    assert not holds_vector(engine.knn_index_path.read_bytes(), key_row)
    plain = tmp_path / "plain.knn.hnsw"                               # the control: unsealed, the vector is there
    knn_module.save_index(engine.knn.index, plain, "sig", key=None)
    assert holds_vector(plain.read_bytes(), key_row)
    assert knn_module.load_index(plain, "another datastore") is None
    assert knn_module.load_index(engine.knn_index_path, engine._knn_signature(), key=None) is None   # sealed
