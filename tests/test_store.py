import sqlite3

import numpy as np
import pytest

from chunkwise.core import database
from chunkwise.core.errors import StoreError
from chunkwise.core.store import SCHEMA_VERSION, ChunkStore, Encoding, source_hash


def test_add_get_list_and_search(store):
    a = store.add_chunk("(555) 123-4567", "pii", ["Call me at", "My number is"], label="phone")
    b = store.add_chunk("Kind regards,\nJohn", "snippet", ["Thanks again."])
    assert store.get_chunk(a).contexts[1].text == "My number is"
    assert [c.id for c in store.list_chunks(kind="pii")] == [a]
    assert [c.id for c in store.list_chunks(search="regards")] == [b]
    assert [c.id for c in store.list_chunks(search="number is")] == [a]   # searches contexts too
    assert store.count() == (2, 3)


@pytest.mark.parametrize("text,kind,contexts,message", [
    ("", "pii", ["x"], "non-empty text"),
    ("   ", "pii", ["x"], "non-empty text"),
    ("v", "pii", [], "at least one trigger context"),
    ("v", "pii", ["  "], "non-empty"),
    ("v", "Bad Kind", ["x"], "Unknown chunk kind"),
    ("a\x00b", "pii", ["x"], "NUL"),
    ("v", "pii", "not a list", "list of texts"),
])
def test_invalid_chunks_are_refused_and_nothing_is_written(store, text, kind, contexts, message):
    with pytest.raises(StoreError, match=message):
        store.add_chunk(text, kind, contexts)
    assert store.count() == (0, 0)


def test_update_keeps_unchanged_contexts_and_their_encodings(store):
    cid = store.add_chunk("value", "snippet", ["keep me", "drop me"])
    model = store.model_id("m:1:abc", "m", 4)
    keep = store.get_chunk(cid).contexts[0]
    enc = [Encoding(c.id, 1, (2, 3), np.ones(4), np.ones(4), source_hash(c.text, "value"))
           for c in store.get_chunk(cid).contexts]
    store.save_encodings(model, enc)
    assert store.pending_encodings(model) == []
    store.update_chunk(cid, contexts=["keep me", "new one"])
    chunk = store.get_chunk(cid)
    assert chunk.contexts[0].id == keep.id
    assert [p.context for p in store.pending_encodings(model)] == ["new one"]
    # Changing the chunk text makes every encoding of it stale.
    store.update_chunk(cid, text="other value")
    assert len(store.pending_encodings(model)) == 2
    assert store.valid_encodings(model) == []


def test_remove_deletes_contexts_and_encodings(store):
    cid = store.add_chunk("value", "snippet", ["a", "b"])
    model = store.model_id("m:1:abc", "m", 4)
    store.save_encodings(model, [Encoding(c.id, 1, (2,), np.ones(4), np.ones(4), "h")
                                 for c in store.get_chunk(cid).contexts])
    store.remove_chunk(cid)
    assert store.count() == (0, 0)
    assert store.db.execute("select count(*) from encodings").fetchone()[0] == 0
    with pytest.raises(StoreError, match="no chunk with id"):
        store.remove_chunk(cid)


def test_vectors_round_trip_as_float16(store):
    cid = store.add_chunk("value", "snippet", ["ctx"])
    model = store.model_id("m:1:abc", "m", 3)
    ctx = store.get_chunk(cid).contexts[0]
    store.save_encodings(model, [Encoding(ctx.id, 7, (1, 2), np.array([0.5, -1, 2]), np.array([1, 1, 1]),
                                          source_hash("ctx", "value"))])
    (row,) = store.valid_encodings(model)
    assert row.entry_token == 7 and row.chunk_tokens == (1, 2)
    np.testing.assert_allclose(store.encoding_vectors([row.label]), [[0.5, -1, 2]])
    np.testing.assert_allclose(store.encoding_vectors([row.label], "vector_local"), [[1, 1, 1]])


def test_file_store_is_private_wal_and_versioned(tmp_path):
    path = tmp_path / "sub" / "chunks.db"
    with ChunkStore(path) as s:
        s.add_chunk("v", "phrase", ["c"])
        assert s.schema_version == SCHEMA_VERSION
        assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        for side in ("-wal", "-shm"):
            assert (path.with_name(path.name + side).stat().st_mode & 0o777) == 0o600
    assert (path.stat().st_mode & 0o777) == 0o600
    assert (path.parent.stat().st_mode & 0o777) == 0o700          # a folder of the user's own
    with ChunkStore(path) as s:
        assert s.count() == (1, 1)


def test_migrates_a_version_1_store(tmp_path):
    from chunkwise.core import store_schema

    path = tmp_path / "old.db"
    import sqlite_utils

    db = sqlite_utils.Database(path)
    db["meta"].create({"key": str, "value": str}, pk="key")
    store_schema._migrate_1(db)
    db["meta"].insert({"key": "schema_version", "value": "1"})
    db.execute("INSERT INTO chunks (text, kind, use_count) VALUES ('old', 'snippet', 0)")
    db.conn.commit()
    db.close()
    with ChunkStore(path) as s:
        assert s.schema_version == SCHEMA_VERSION
        assert s.list_chunks()[0].text == "old"
        assert "model_stats" in s.db.table_names()


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "new.db"
    with ChunkStore(path) as s:
        s.db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
        s.db.conn.commit()
    with pytest.raises(StoreError, match="newer Chunkwise"):
        ChunkStore(path)


def test_corrupted_file_gets_a_clear_message(tmp_path):
    path = tmp_path / "bad.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="unreadable or corrupted"):
        ChunkStore(path)
    assert path.read_bytes().startswith(b"this is not sqlite")  # left untouched


def test_locked_store_gets_a_clear_message(tmp_path):
    path = tmp_path / "locked.db"
    with ChunkStore(path) as s:
        s.add_chunk("v", "phrase", ["c"])
    other = ChunkStore(path)
    other.db.conn.execute("BEGIN EXCLUSIVE")
    try:
        with ChunkStore(path) as s:
            s.db.conn.execute("PRAGMA busy_timeout = 100")
            with pytest.raises(StoreError, match="locked by another"):
                s.add_chunk("w", "phrase", ["d"])
    finally:
        other.db.conn.rollback()
        other.close()
    with ChunkStore(path) as s:
        assert s.count() == (1, 1)


class PortableLimit:
    """The store's connection as SQLite builds with a portable variable limit behave: a statement
    with more than *limit* '?' fails (the bundled SQLCipher allows 250,000, and its Python
    bindings cannot lower the limit)."""

    def __init__(self, conn, limit: int = 1000):
        self._conn, self._limit = conn, limit

    def execute(self, sql, *args):
        if sql.count("?") > self._limit:
            raise database.OperationalError("too many SQL variables")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def test_long_id_lists_work_on_sqlite_builds_with_the_portable_variable_limit(tmp_path):
    """Debian's SQLite and the bundled SQLCipher allow 250,000 '?' in a statement; others stop at
    32,766 (or 999). With the limit at 1,000, listing, searching learned contexts and removing 2,500
    of them must work: one IN (...) per call failed with 'too many SQL variables'."""
    from chunkwise.core.store import LEARNED

    with ChunkStore(tmp_path / "many.db") as s:
        ids = s.add_many([{"text": f"snippet {i}", "kind": "snippet", "contexts": [f"context {i}"]}
                          for i in range(2500)])
        learned = [s.add_context(cid, f"learned before {i}", LEARNED) for i, cid in enumerate(ids)]
        s.db.conn = PortableLimit(s.db.conn)
        chunks = s.list_chunks(ids=ids)
        assert [c.id for c in chunks] == sorted(ids) and all(len(c.contexts) == 2 for c in chunks)
        assert len(s.learned_contexts()) == 2500
        assert s.remove_contexts(learned) == 2500
        assert all(len(c.contexts) == 1 for c in s.list_chunks(ids=ids))


class SeesBeforeOther:
    """The store's connection, where another process writes between this one's first look at a
    table and what it does next (the race a check-then-insert loses)."""

    def __init__(self, conn, looks_at: str, other_writes):
        self._conn, self._looks_at, self._other_writes = conn, looks_at, other_writes

    def execute(self, sql, *args):
        result = self._conn.execute(sql, *args)
        if self._other_writes is not None and self._looks_at in sql:
            rows, writes, self._other_writes = result.fetchall(), self._other_writes, None
            writes()                                   # after our read, before our write
            return _Rows(rows)
        return result

    def __getattr__(self, name):
        return getattr(self._conn, name)


class _Rows(list):
    def fetchone(self):
        return self[0] if self else None

    def fetchall(self):
        return list(self)


def test_two_instances_registering_one_model_share_its_row(tmp_path):
    """Bug caught: model_id looked for the model, then inserted it in a separate step; a second
    Chunkwise registering it in between made the first fail on the unique identity."""
    path = tmp_path / "shared.db"
    with ChunkStore(path) as first, ChunkStore(path) as second:
        first.db.conn = SeesBeforeOther(first.db.conn, "FROM models",
                                        lambda: second.model_id("model-x", "m", 8))
        mid = first.model_id("model-x", "m", 8)
        assert mid == second.model_id("model-x", "m", 8)
        assert first.db.execute("SELECT count(*) FROM models").fetchone()[0] == 1


def test_the_encodings_table_has_one_writer():
    """Refresh, mining and the benchmarks' synthetic stores all write encodings through
    ChunkStore._write_encodings; nothing outside the store (core/store.py and its parts,
    core/store_*.py) writes its tables with SQL of its own (bench/retrieval.py's fill_store did:
    rows a keyed store would seal another way, or not at all)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    writes, raw = [], []
    for folder in ("core", "app", "bench", "tools"):
        for path in sorted((root / folder).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            name = str(path.relative_to(root))
            writes += [name] * len(re.findall(r"INSERT\s+INTO\s+encodings\b", source, re.IGNORECASE))
            if not re.fullmatch(r"core/store(_\w+)?\.py", name) and re.search(
                    r"\.db\.conn|\.conn\.execute|\bstore\._\w+\(", source):
                raw.append(name)
    assert writes == ["core/store_encodings.py"]
    assert raw == []


def test_mined_chunks_are_stored_with_their_encodings(store):
    """add_mined writes through the same writer as save_encodings: tokens, vectors and hashes alike."""
    from types import SimpleNamespace

    model = store.model_id("m:1:abc", "m", 4)
    ctx = SimpleNamespace(text="Warm regards", entry_token=7, vector=np.full(4, 0.5), vector_local=np.ones(4))
    mined = SimpleNamespace(text=",\nAna", tokens=(11, 12), contexts=[ctx])
    added = store.add_mined(model, "self", [mined])
    (row,) = store.valid_encodings(model)
    assert added == (1, 1, [row.chunk_id])
    # Mined again: nothing new, and no chunk for matching to follow.
    assert store.add_mined(model, "self", [mined]) == (0, 0, [])
    assert (row.entry_token, row.chunk_tokens) == (7, (11, 12))
    assert row.source_hash == source_hash("Warm regards", ",\nAna")
    np.testing.assert_array_equal(store.encoding_vectors([row.label], "vector"), [np.full(4, 0.5)])
    np.testing.assert_array_equal(store.encoding_vectors([row.label], "vector_local"), [np.ones(4)])
    assert store.pending_encodings(model) == []


def test_the_benchmarks_synthetic_store_is_written_as_a_refresh_writes(tmp_path):
    """bench/retrieval.py's fill_store goes through add_many and save_encodings: every context is
    encoded, labelled in row order, and a keyed store seals its tokens (they open again)."""
    from types import SimpleNamespace

    from bench.retrieval import fill_store

    stats = SimpleNamespace(whitener=np.eye(6, dtype=np.float32), mean=np.zeros(6, np.float32))
    with ChunkStore(tmp_path / "bench.db") as s:
        assert s.key is not None                        # tests run with CHUNKWISE_PASSPHRASE
        model = s.model_id("m:1:abc", "m", 6)
        centres, _ = fill_store(s, model, stats, 20, per_chunk=5)
        rows = s.valid_encodings(model)
        assert centres.shape == (4, 6) and s.count() == (4, 20)
        assert [r.label for r in rows] == list(range(1, 21)) and {r.chunk_tokens for r in rows} == {(1, 2, 3)}
        assert s.get_chunk(rows[-1].chunk_id).label == "s4" and s.pending_encodings(model) == []


def test_learning_looks_a_mined_chunk_up_by_its_text_through_an_index(store):
    """add_mined asks for each mined chunk by text and kind: without an index on both that was a scan
    of every mined chunk per chunk learned (quadratic; minutes at 25k mined chunks)."""
    plan = store.db.conn.execute("EXPLAIN QUERY PLAN SELECT id FROM chunks WHERE text=? AND kind=?",
                                 ("Thanks again.", "self")).fetchall()
    assert any("idx_chunks_kind_text" in str(row) for row in plan), plan


def test_deleting_a_context_finds_its_encodings_through_an_index(store):
    """Editing or deleting an entry deletes its contexts' encodings by context id: without an index
    led by context_id each deleted context scanned every encoding (seconds at 100k contexts)."""
    plan = store.db.conn.execute("EXPLAIN QUERY PLAN DELETE FROM encodings WHERE context_id=?", (1,)).fetchall()
    assert any("idx_encodings_context_id" in str(row) for row in plan), plan
