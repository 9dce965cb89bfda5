"""SIGKILL in the middle of an import, a mining run and an index save: after a restart the
store holds all or none of the interrupted change, and matching works.

Each child process prints KILL-ME at a point inside the change (mid-transaction, or
between writing the index and renaming it into place) and then waits; the test kills
it there with SIGKILL, so the timing is exact, not a guess.
"""
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chunkwise.core.store import ChunkStore

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="SIGKILL")]


def run_until_marker(code: str, tmp_path: Path, timeout: float = 120.0) -> None:
    """Run *code* in a child, kill -9 it when it prints KILL-ME."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        said = []
        for line in proc.stdout:
            if line.strip() == "KILL-ME":
                os.kill(proc.pid, signal.SIGKILL)
                break
            said.append(line)
        else:
            raise AssertionError("child ended without reaching the kill point: "
                                 f"{''.join(said)[-2000:]}{proc.stderr.read()[-2000:]}")
        proc.wait(timeout=timeout)
        assert proc.returncode == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_kill_during_import_keeps_all_or_nothing(tmp_path):
    db = tmp_path / "chunks.db"
    with ChunkStore(db) as store:
        store.add_chunk("(555) 123-4567", "pii", ["Call me at"], label="phone")
    records = [{"text": f"snippet {i}", "kind": "snippet", "contexts": [f"context {i}"]} for i in range(5000)]
    (tmp_path / "big.json").write_text(json.dumps(records), encoding="utf-8")
    run_until_marker(f"""
        import time
        from chunkwise.core import store as s
        original, calls = s.ChunkStore._insert, [0]
        def slow_insert(self, *a):
            calls[0] += 1
            if calls[0] == 2500:                      # half-way through the one transaction
                print("KILL-ME", flush=True)
                time.sleep(60)
            return original(self, *a)
        s.ChunkStore._insert = slow_insert
        from chunkwise.core.cli import main
        main(["chunks", "import", "big.json", "--db", {str(db)!r}])
    """, tmp_path)
    with ChunkStore(db) as store:
        assert store.count() == (1, 1)                 # none of the import; the old chunk intact
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    from chunkwise.core.portable import import_file

    with ChunkStore(db) as store:                      # and the same import now goes through whole
        assert len(import_file(store, tmp_path / "big.json")) == 5000
        assert store.count() == (5001, 5001)


def test_kill_during_mining_keeps_all_or_nothing(tmp_path):
    db = tmp_path / "chunks.db"
    corpus = tmp_path / "sent"
    corpus.mkdir()
    from tests.test_distill import EMAILS

    for i, text in enumerate(EMAILS):
        (corpus / f"{i}.txt").write_text(text, encoding="utf-8")
    run_until_marker(f"""
        import time
        from chunkwise.core import store as s
        original = s.ChunkStore._insert_knn
        def slow(self, *a):                             # chunks written, kNN rows next: same transaction
            print("KILL-ME", flush=True)
            time.sleep(60)
            return original(self, *a)
        s.ChunkStore._insert_knn = slow
        from chunkwise.core.cli import main
        main(["mine", "--corpus", "sent", "--gamma", "0.5", "--knn", "--db", {str(db)!r}])
    """, tmp_path)
    with ChunkStore(db) as store:
        assert store.count() == (0, 0)
        assert store.db.execute("SELECT count(*) FROM knn_entries").fetchone()[0] == 0
        assert store.db.execute("SELECT count(*) FROM encodings").fetchone()[0] == 0
    from chunkwise.core.cli import main

    assert main(["mine", "--corpus", str(corpus), "--gamma", "0.5", "--knn", "--db", str(db)]) == 0
    with ChunkStore(db) as store:
        assert store.count()[0] > 0 and store.db.execute("SELECT count(*) FROM knn_entries").fetchone()[0] > 0


def test_kill_during_index_save_is_repaired_on_start(tmp_path, make_engine):
    """Killed between writing a save's data file and its manifest, after a chunk was deleted: the
    next start must load the previous save whole and repair it (format 1 loaded the new data with
    the old sidecar: the deleted chunk's labels raised 'already deleted' or never matched)."""
    from chunkwise.core import GenerationRequest
    from tests.conftest import paper_profile

    db = tmp_path / "chunks.db"
    with ChunkStore(db) as store:
        for field, entry in paper_profile().items():
            store.add_chunk(entry["value"], "pii", entry["contexts"][:4], label=field)
    first = make_engine(store=ChunkStore(db))
    first.refresh()                                          # a complete save
    first.store.close()
    run_until_marker(f"""
        import os, time
        from chunkwise.core import ChunkStore
        original = os.replace
        def replace_then_die(src, dst):
            if str(dst).endswith(".hnsw"):
                print("KILL-ME", flush=True)                 # the new data file is written, the manifest not yet
                time.sleep(60)
            return original(src, dst)
        os.replace = replace_then_die
        from chunkwise.core import Engine
        store = ChunkStore({str(db)!r})
        (email,) = [c for c in store.list_chunks() if c.label == "email"]
        store.remove_chunk(email.id)
        Engine(store=store, n_threads=2).refresh()
    """, tmp_path)
    engine = make_engine(store=ChunkStore(db))
    engine.refresh()
    assert engine.index_status == "repaired"                 # the old save, loaded whole, then brought up to date
    expected = sum(min(4, len(e["contexts"])) for f, e in paper_profile().items() if f != "email")
    assert len(engine.matcher) == expected
    assert set(engine.matcher.index.hashes) == {r.label for r in engine.store.valid_encodings(engine.model_id)}
    out = engine.generate(GenerationRequest("Hi Tom,\n\nPlease give me a call at", max_tokens=12))
    assert out.spans and out.spans[0].kind == "pii"
    engine.refresh()                                         # saved again: one data file is left
    from chunkwise.core.index import data_files
    assert len(data_files(engine.index_path)) == 1


def test_kill_during_a_migration_leaves_a_store_that_opens(tmp_path):
    """A store one schema version behind is opened by a Chunkwise killed between the two statements
    of the last migration.  Without a transaction around each step the first ALTER TABLE stayed,
    the version did not, and every later open failed ('duplicate column name: origin')."""
    from chunkwise.core import store as s

    db = tmp_path / "old.db"
    run_until_marker(f"""
        from chunkwise.core import store as s
        s.SCHEMA_VERSION, s.MIGRATIONS = 4, s.MIGRATIONS[:4]
        s.ChunkStore({str(db)!r}).add_chunk("+44 7700 900123", "pii", ["Call me on"], label="phone")
        print("CREATED", flush=True)
        import importlib, time
        importlib.reload(s)
        def half_migration(database):
            database["contexts"].add_column("origin", str)
            print("KILL-ME", flush=True)
            time.sleep(60)
        s.MIGRATIONS[4] = half_migration
        s.ChunkStore({str(db)!r})
    """, tmp_path)
    with s.ChunkStore(db) as store:
        assert store.schema_version == s.SCHEMA_VERSION
        assert [c.text for c in store.list_chunks()] == ["+44 7700 900123"]
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert {"origin", "learned_at"} <= {r[1] for r in store.db.execute("PRAGMA table_info(contexts)")}


@pytest.mark.parametrize("kill_in", ["the edit", "the mined write"])
def test_kill_during_a_library_edit_made_while_mining(tmp_path, kill_in):
    """Issue 12: the library edits through the model worker's lane, between the steps of a mining
    run (one connection, no "locked" failure).  Killed inside the edit's transaction, or inside the
    mining's after the edit went in: the store opens, passes integrity_check, holds the edit whole
    (or not at all) and none of the mining."""
    db = tmp_path / "chunks.db"
    corpus = tmp_path / "sent"
    corpus.mkdir()
    from tests.test_distill import EMAILS

    for i, text in enumerate(EMAILS):
        (corpus / f"{i}.txt").write_text(text, encoding="utf-8")
    with ChunkStore(db) as store:
        phone = store.add_chunk("(555) 123-4567", "pii", ["Call me at"], label="phone")
    run_until_marker(f"""
        import time
        from chunkwise.core import store as s
        from chunkwise.app.worker import ModelWorker

        def die(*a, **k):
            print("KILL-ME", flush=True)
            time.sleep(60)

        if {kill_in!r} == "the edit":                     # inside its transaction: label and context changed
            original_delete = s.ChunkStore._delete_contexts
            def delete_then_die(self, ids):
                original_delete(self, ids)
                die()
            s.ChunkStore._delete_contexts = delete_then_die

        worker = ModelWorker()
        worker.load({{"db_path": {str(db)!r}}})
        assert worker.engine is not None and not worker.locked
        # what the library dialog's Edit sends: one update, one transaction
        worker.submit(1, lambda store: store.update_chunk({phone}, label="mobile", contexts=["Ring me on"]))
        answers = []
        worker.job_done.connect(lambda job, result: answers.append(job))
        worker.job_failed.connect(lambda job, message, locked: print("EDIT FAILED", message, flush=True))
        worker.learn_failed.connect(lambda message: print("LEARNING FAILED", message, flush=True))
        original = s.ChunkStore._insert_knn
        def checked(self, *a):                            # the mining's one transaction, chunks written
            assert answers == [1], "the edit ran between mining steps, before the mined write"
            die()
        s.ChunkStore._insert_knn = checked
        worker.learn({{"paths": [{str(corpus)!r}], "gamma": 0.5, "knn": True}})
        print("NOT KILLED", flush=True)
    """, tmp_path)
    with ChunkStore(db) as store:
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        kinds = sorted(c.kind for c in store.list_chunks())
        assert store.db.execute("SELECT count(*) FROM knn_entries").fetchone()[0] == 0     # none of the mining
        (chunk,) = [c for c in store.list_chunks() if c.id == phone]
        assert kinds == ["pii"]                                                         # no mined chunk
        if kill_in == "the edit":
            assert chunk.label == "phone" and [c.text for c in chunk.contexts] == ["Call me at"]
        else:
            assert chunk.label == "mobile" and [c.text for c in chunk.contexts] == ["Ring me on"]


def test_kill_while_rekeying_an_older_store_leaves_it_whole(tmp_path, monkeypatch):
    """Issue 12 (older stores migrate on open, all or nothing): killed with the re-keyed copy written
    but not yet renamed over the store, the old store still opens with its passphrase, whole, and
    is re-keyed on that open."""
    from chunkwise.core import crypto, database

    db = tmp_path / "chunks.db"
    with monkeypatch.context() as patched:
        patched.setattr(crypto, "KDF_NEW", "v1")                  # a store made with N = 2^14
        with ChunkStore(db) as store:
            phone = store.add_chunk("(555) 123-4567", "pii", ["Call me at"], label="phone")
    run_until_marker("""
        import os, time
        from chunkwise.core import database
        def replace_later(*a):
            print("KILL-ME", flush=True)
            time.sleep(60)
        database.os.replace = replace_later
        from chunkwise.core.store import ChunkStore
        ChunkStore(%r)
    """ % str(db), tmp_path)
    salt = db.read_bytes()[:16]
    passphrase = os.environ["CHUNKWISE_PASSPHRASE"]
    (stale,) = tmp_path.glob(".chunks.db.*.encrypting")            # the killed run's whole copy ...
    os.utime(stale, (stale.stat().st_atime - 7200, stale.stat().st_mtime - 7200))
    database.connect(str(db), crypto.derive(passphrase, salt, "v1")).close()     # untouched: the old key
    with ChunkStore(db) as store:
        assert store.get_chunk(phone).text == "(555) 123-4567"
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    database.connect(str(db), crypto.derive(passphrase, salt, "v2")).close()     # re-keyed on this open
    assert not stale.exists()                                      # ... removed by the next conversion
