"""The persisted HNSW index never disagrees with the database."""
import numpy as np
import pytest

from chunkwise.core.crypto import StoreKey
from chunkwise.core.index import VectorIndex, data_files, index_files
from chunkwise.core.store import ChunkStore
from tests.conftest import paper_profile
from tests.test_privacy_at_rest import holds_vector


def _vectors(n, dim=8, seed=0):
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_upsert_remove_query():
    idx = VectorIndex(dim=8, capacity=4)
    vecs = _vectors(50)
    idx.upsert(list(range(50)), vecs, [f"h{i}" for i in range(50)])       # grows past capacity
    labels, sims = idx.query(vecs[7], k=3)
    assert labels[0] == 7 and np.isclose(sims[0], 1.0, atol=1e-5)
    idx.remove([7])
    assert 7 not in idx.query(vecs[7], k=3)[0].tolist()
    idx.upsert([7], vecs[8:9], ["changed"])                               # revive with a new vector
    assert idx.query(vecs[8], k=2)[0].tolist()[:2] in ([7, 8], [8, 7])


KEY = StoreKey(bytes(range(32)), "test")


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "sealed"])
def test_load_repairs_a_stale_index(tmp_path, key):
    path = tmp_path / "x.hnsw"
    vecs = _vectors(20)
    idx = VectorIndex(dim=8)
    idx.upsert(list(range(10)), vecs[:10], ["a"] * 10)
    idx.save(path, "model-A", key=key)
    fetch = lambda labels: vecs[np.asarray(labels)]
    loaded, status = VectorIndex.load_or_build(path, "model-A", 8, {i: "a" for i in range(10)}, fetch, key=key)
    assert status == "loaded" and loaded.query(vecs[4], k=1)[0].tolist() == [4]
    wanted = {i: "a" for i in range(3, 15)}          # 0-2 deleted, 10-14 new
    wanted[5] = "b"                                   # 5 changed
    loaded, status = VectorIndex.load_or_build(path, "model-A", 8, wanted, fetch, key=key)
    assert status == "repaired" and loaded.hashes == wanted
    assert set(loaded.query(vecs[0], k=20)[0].tolist()) == set(wanted)
    # another model's index, or a broken sidecar, is rebuilt from the database
    _, status = VectorIndex.load_or_build(path, "model-B", 8, wanted, fetch, key=key)
    assert status == "rebuilt"
    path.write_text("{not json")
    rebuilt, status = VectorIndex.load_or_build(path, "model-A", 8, wanted, fetch, key=key)
    assert status == "rebuilt" and rebuilt.hashes == wanted
    rebuilt.save(path, "model-A", key=key)
    (data,) = data_files(path)                        # earlier saves' data files are gone
    _, status = VectorIndex.load_or_build(path, "model-A", 8, wanted, fetch, key=key)
    assert status == "loaded"
    data.write_bytes(data.read_bytes()[:-8])          # a data file that is not the one the manifest names
    _, status = VectorIndex.load_or_build(path, "model-A", 8, wanted, fetch, key=key)
    assert status == "rebuilt"


def test_a_sealed_index_hides_its_vectors_and_opens_with_its_own_key_and_files_only(tmp_path):
    """Bugs caught: context vectors (hidden states of the user's text) readable in the index file;
    a sealed index that another key opens, or whose data file can be swapped for another save's."""
    path = tmp_path / "x.hnsw"
    vecs = _vectors(10)
    idx = VectorIndex(dim=8)
    idx.upsert(list(range(10)), vecs, ["h"] * 10)
    idx.save(path, "model-A", key=KEY)
    written = b"".join(p.read_bytes() for p in index_files(path))
    assert not holds_vector(written, vecs[3]) and b'"labels"' not in written
    idx.save(tmp_path / "plain.hnsw", "model-A")                # the control: a plain save holds them
    assert holds_vector(b"".join(p.read_bytes() for p in index_files(tmp_path / "plain.hnsw")), vecs[3])
    wanted, fetch = {i: "h" for i in range(10)}, (lambda labels: vecs[np.asarray(labels)])
    other = StoreKey(bytes(32), "test")
    assert VectorIndex.load_or_build(path, "model-A", 8, wanted, fetch, key=other)[1] == "rebuilt"
    (first,) = data_files(path)
    kept = first.read_bytes()
    idx.save(path, "model-A", key=KEY)                 # a second save: another data file name
    (second,) = data_files(path)
    second.write_bytes(kept)                           # the first save's data under the second's name
    assert VectorIndex.load_or_build(path, "model-A", 8, wanted, fetch, key=KEY)[1] == "rebuilt"


def test_engine_keeps_the_index_in_step_with_the_store(tmp_path, make_engine):
    db = tmp_path / "chunks.db"
    engine = make_engine(store=ChunkStore(db))
    profile = paper_profile()
    for field in ("phone", "email"):
        engine.store.add_chunk(profile[field]["value"], "pii", profile[field]["contexts"][:3], label=field)
    assert engine.refresh() == 6
    assert engine.index_status == "rebuilt" and engine.index_path.exists()
    assert (engine.index_path.stat().st_mode & 0o777) == 0o600
    assert engine.refresh() == 0 and engine.index_status == "loaded"
    # the database changes behind the index's back (another process, a crash before saving)
    engine.store.add_chunk(profile["website"]["value"], "pii", profile["website"]["contexts"][:2], label="website")
    (email,) = [c for c in engine.store.list_chunks() if c.label == "email"]
    engine.store.remove_chunk(email.id)
    engine.refresh()
    assert engine.index_status == "repaired"
    assert len(engine.matcher) == 5
    labels = {r.label for r in engine.store.valid_encodings(engine.model_id)}
    assert set(engine.matcher.index.hashes) == labels
    engine.index_path.unlink()
    engine.refresh()
    assert engine.index_status == "rebuilt" and len(engine.matcher) == 5


def test_refresh_can_be_cancelled_and_resumes(make_engine, tmp_path):
    engine = make_engine(store=ChunkStore(tmp_path / "many.db"))
    engine.store.add_many([{"text": f"snippet {i}", "kind": "snippet", "label": None,
                            "contexts": [f"Context number {i} leads to"]} for i in range(150)])
    seen = []
    done = engine.refresh(progress=lambda d, t: seen.append((d, t)), cancelled=lambda: len(seen) >= 1)
    assert done == 64 and seen == [(64, 150)]                      # stopped between batches
    assert len(engine.store.pending_encodings(engine.model_id)) == 150 - 64   # finished work was kept
    assert engine.refresh() == 150 - 64 and len(engine.matcher) == 150
