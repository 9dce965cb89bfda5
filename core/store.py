"""The user's chunk store: SQLite through sqlite-utils.

Holds chunks (the text to insert), their trigger contexts (the text that
leads into a chunk) and, per model, the derived data that matching needs
(token ids, entry token, context vector).  Derived data is keyed by the
model's identity because vectors from one model mean nothing to another.

``ChunkStore`` is the one class callers use.  This module holds opening,
transactions and the chunks and contexts themselves; each other concern has
its own module, mixed in:

* core/store_records.py: ``Chunk``, ``Context``, the encoding records, ``validate_chunk``
* core/store_schema.py: the tables and their migrations
* core/store_crypto.py: the encrypted file, the key, sealed values
* core/store_encodings.py: models and their encodings
* core/store_stats.py: whitening statistics and slot classifier weights
* core/store_knn.py: the kNN-LM datastore

>>> store = ChunkStore(":memory:")
>>> cid = store.add_chunk("(555) 123-4567", kind="pii", label="phone",
...                       contexts=["You can call me at"])
>>> store.get_chunk(cid).contexts[0].text
'You can call me at'
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Sequence

import sqlite_utils

from . import database
from .errors import StoreError
from .store_crypto import StoreCrypto
from .store_encodings import StoreEncodings
from .store_knn import StoreKnn
from .store_records import (
    DISMISSED, KINDS, LEARNED, MAX_CHUNK_CHARS, MAX_CONTEXT_CHARS, PII_MASK, Chunk, Context, Encoding,
    Mined, PendingEncoding, StoredEncoding, source_hash, validate_chunk,
)
# _migrate reads SCHEMA_VERSION and MIGRATIONS through this module's names, so tests/test_kill.py can
# pin an older schema by rebinding core.store's.
from .store_schema import IN_BATCH, MIGRATIONS, SCHEMA_VERSION, batches, marks, timestamp
from .store_stats import StoreModelStats

# Callers import the records and limits from here: one name to remember for everything the store is.
__all__ = [
    "ChunkStore", "Chunk", "Context", "Encoding", "PendingEncoding", "StoredEncoding",
    "KINDS", "PII_MASK", "LEARNED", "DISMISSED", "MAX_CHUNK_CHARS", "MAX_CONTEXT_CHARS",
    "SCHEMA_VERSION", "MIGRATIONS", "IN_BATCH", "batches", "marks", "source_hash", "validate_chunk",
]


class ChunkStore(StoreCrypto, StoreEncodings, StoreModelStats, StoreKnn):
    """A chunk store in one SQLite file (or ``":memory:"`` for tests)."""

    def __init__(self, path: str | os.PathLike = ":memory:", *, encrypted: bool = True):
        """Open (or create) the store at *path*.  File stores are encrypted whole (core/database.py);
        ``encrypted=False`` makes a plain file, for benchmarks that compare the two only."""
        self.path = str(path)
        self.key = None
        try:
            if self.path != ":memory:":
                if "\x00" in self.path:
                    raise StoreError("The chunk store's path contains a NUL character.")
                folder = Path(self.path).expanduser().parent
                try:
                    folder.mkdir(parents=True, mode=0o700)   # the user's own: nobody else lists it
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise StoreError(f"Cannot create the store's folder {folder}: {exc.strerror}.") from None
                if not os.access(folder, os.W_OK):
                    raise StoreError(f"Cannot write to the store's folder {folder}.")
                try:   # born owner-only: no moment where others could read it
                    os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise StoreError(f"Cannot create the chunk store {self.path}: {exc.strerror}.") from None
                conn, file_key = self._open_file(encrypted)
            else:
                conn, file_key = database.connect(":memory:"), None
            self._use(conn)
            self._migrate()
            if file_key is not None:
                self.key = self._store_key(*file_key)
                self._encrypt_plain_pii()
        except database.DatabaseError as exc:
            raise StoreError(self._explain(exc)) from None

    def _use(self, conn) -> None:
        self.db = sqlite_utils.Database(conn)
        self.db.execute("PRAGMA foreign_keys = ON")
        if self.path != ":memory:":
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA secure_delete = ON")   # deleted text is overwritten, not left in free pages

    # -- plumbing

    def _explain(self, exc: database.Error) -> str:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return f"The chunk store {self.path} is locked by another Chunkwise instance; try again when it is closed."
        if "not a database" in text or "malformed" in text or "corrupt" in text:
            return (f"The chunk store {self.path} is unreadable or corrupted ({text}). "
                    "Move it aside or point --db / CHUNKWISE_DB at another file.")
        return f"The chunk store {self.path} could not be used: {text}"

    def _migrate(self) -> None:
        if "meta" not in self.db.table_names():
            self.db["meta"].create({"key": str, "value": str}, pk="key")
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"The chunk store {self.path} was written by a newer Chunkwise (schema {version}); "
                f"this version understands up to {SCHEMA_VERSION}."
            )
        conn = self.db.conn
        for number in range(version + 1, SCHEMA_VERSION + 1):
            # One explicit transaction per step: SQLite's DDL is transactional, but Python's sqlite3
            # runs it outside any implicit transaction, so without BEGIN a kill between two
            # statements would leave half a migration that fails on every later open.
            conn.execute("BEGIN IMMEDIATE")
            try:
                MIGRATIONS[number - 1](self.db)
                conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (str(number),))
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def rollback(self) -> None:
        """Undo a transaction left open by code that failed half-way through it (else nothing)."""
        if self.db.conn.in_transaction:
            self.db.conn.rollback()

    def close(self) -> None:
        self.db.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def schema_version(self) -> int:
        return int(self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])

    def _guard(self):
        """Context manager: one transaction, sqlite errors turned into StoreError."""
        store = self

        class _Tx:
            def __enter__(self_inner):
                try:
                    store.db.conn.execute("BEGIN IMMEDIATE")
                except database.Error as exc:
                    raise StoreError(store._explain(exc)) from None

            def __exit__(self_inner, exc_type, exc, tb):
                if exc_type is None:
                    store.db.conn.commit()
                    return False
                store.db.conn.rollback()
                if isinstance(exc, database.Error):
                    raise StoreError(store._explain(exc)) from None
                return False

        return _Tx()

    # -- chunks

    def add_chunk(self, text: str, kind: str, contexts: Sequence[str], label: str | None = None) -> int:
        """Add one chunk with its trigger contexts; return its id."""
        cleaned = validate_chunk(text, kind, label, contexts)
        with self._guard():
            return self._insert(text, kind, label, cleaned)

    def _insert(self, text: str, kind: str, label: str | None, contexts: list[str]) -> int:
        now = timestamp()
        cur = self.db.conn.execute(
            "INSERT INTO chunks (text, kind, label, created_at, updated_at, use_count) VALUES (?,?,?,?,?,0)",
            (self._seal(text, kind, None) if kind != "pii" else "", kind, label, now, now),
        )
        chunk_id = cur.lastrowid
        if kind == "pii":              # sealed bound to its row, whose id the insert gave
            self.db.conn.execute("UPDATE chunks SET text=? WHERE id=?", (self._seal(text, kind, chunk_id), chunk_id))
        self.db.conn.executemany(
            "INSERT INTO contexts (chunk_id, text) VALUES (?, ?)", [(chunk_id, c) for c in contexts]
        )
        return chunk_id

    def update_chunk(self, chunk_id: int, *, text: str | None = None, kind: str | None = None,
                     label: str | None = ..., contexts: Sequence[str] | None = None) -> None:
        """Change a chunk.  Contexts that stay the same keep their encodings."""
        with self._guard():      # read and written under one write lock: no other writer in between
            old = self.get_chunk(chunk_id)
            new_text = old.text if text is None else text
            new_kind = old.kind if kind is None else kind
            new_label = old.label if label is ... else label
            new_contexts = [c.text for c in old.contexts] if contexts is None else list(contexts)
            cleaned = validate_chunk(new_text, new_kind, new_label, new_contexts)
            self.db.conn.execute(
                "UPDATE chunks SET text=?, kind=?, label=?, updated_at=? WHERE id=?",
                (self._seal(new_text, new_kind, chunk_id), new_kind, new_label, timestamp(), chunk_id),
            )
            keep = {c.text: c.id for c in old.contexts}        # dismissed places (old.avoid) stay as they are
            for ctx in old.contexts:
                if ctx.text not in cleaned:
                    self._delete_contexts([ctx.id])
            for ctx in cleaned:
                if ctx not in keep:
                    self.db.conn.execute("INSERT INTO contexts (chunk_id, text) VALUES (?, ?)", (chunk_id, ctx))

    def _delete_contexts(self, context_ids: Iterable[int]) -> None:
        ids = list(context_ids)
        self.db.conn.executemany("DELETE FROM encodings WHERE context_id=?", [(i,) for i in ids])
        self.db.conn.executemany("DELETE FROM contexts WHERE id=?", [(i,) for i in ids])

    def remove_chunk(self, chunk_id: int) -> None:
        """Delete a chunk, its contexts and their encodings."""
        self.remove_chunks([chunk_id])

    def remove_chunks(self, chunk_ids: Sequence[int]) -> int:
        """Delete chunks with their contexts and encodings, all in one transaction; how many went.
        A chunk that is gone already (deleted meanwhile) is a StoreError and nothing is deleted."""
        ids = sorted({int(i) for i in chunk_ids})
        with self._guard():
            conn = self.db.conn
            found = {r[0] for part in batches(ids) for r in conn.execute(
                f"SELECT id FROM chunks WHERE id IN ({marks(part)})", part)}
            missing = [i for i in ids if i not in found]
            if missing:                        # checked under the write lock
                raise StoreError(f"There is no chunk with id {missing[0]}; nothing was deleted.")
            for part in batches(ids):
                self._delete_contexts([r[0] for r in conn.execute(
                    f"SELECT id FROM contexts WHERE chunk_id IN ({marks(part)})", part)])
                conn.execute(f"DELETE FROM chunks WHERE id IN ({marks(part)})", part)
        return len(ids)

    # -- learning while writing

    def add_context(self, chunk_id: int, text: str, origin: str) -> int | None:
        """Add one learned (LEARNED) or dismissed (DISMISSED) context to a chunk; its id, or None
        when the chunk already has that text as a context (a duplicate changes nothing).  A learned
        place the user now dismisses, or a dismissed one where they now type the value, flips.

        >>> store = ChunkStore(); cid = store.add_chunk("+1 555 0100", "pii", ["My phone:"])
        >>> store.add_context(cid, "Ring me on", LEARNED) is not None, store.add_context(cid, "My phone:", LEARNED)
        (True, None)
        """
        if origin not in (LEARNED, DISMISSED):
            raise StoreError(f"Unknown context origin {origin!r}.")
        text = text.strip() if isinstance(text, str) else text
        validate_chunk("x", "pii", None, [text])          # the context rules: non-empty, no NUL, not too long
        with self._guard():
            self.get_chunk(chunk_id)                       # a chunk deleted meanwhile: a clear StoreError
            conn = self.db.conn
            row = conn.execute("SELECT id, origin FROM contexts WHERE chunk_id=? AND text=?",
                               (chunk_id, text)).fetchone()
            if row is not None:
                if row[1] in (LEARNED, DISMISSED) and row[1] != origin:   # the user changed their mind here
                    self._delete_contexts([row[0]])
                else:
                    return None                                          # known already (or the library's own)
            return conn.execute("INSERT INTO contexts (chunk_id, text, origin, learned_at) VALUES (?,?,?,?)",
                                (chunk_id, text, origin, timestamp())).lastrowid

    def has_context(self, chunk_id: int, text: str, origin: str) -> bool:
        """Whether *chunk_id* has the context *text* with *origin* (a place turned down: DISMISSED).

        >>> store = ChunkStore(); cid = store.add_chunk("+1 555 0100", "pii", ["My phone:"])
        >>> _ = store.add_context(cid, "Ring me on", DISMISSED)
        >>> store.has_context(cid, "Ring me on", DISMISSED), store.has_context(cid, "Ring me on", LEARNED)
        (True, False)
        """
        return self.db.conn.execute("SELECT 1 FROM contexts WHERE chunk_id=? AND text=? AND origin=?",
                                    (chunk_id, text.strip(), origin)).fetchone() is not None

    def learned_contexts(self) -> list[tuple[Context, Chunk]]:
        """Every learned or dismissed context with its chunk, newest first."""
        ids = [r[0] for r in self.db.conn.execute(
            "SELECT DISTINCT chunk_id FROM contexts WHERE origin IN (?, ?)", (LEARNED, DISMISSED))]
        out = [(ctx, chunk) for chunk in self.list_chunks(ids=ids) if ids
               for ctx in chunk.contexts + chunk.avoid if ctx.origin in (LEARNED, DISMISSED)]
        return sorted(out, key=lambda pair: (pair[0].learned_at or "", pair[0].id), reverse=True)

    def remove_contexts(self, context_ids: Sequence[int]) -> int:
        """Delete learned or dismissed contexts (never the library's own); how many went."""
        ids = sorted({int(i) for i in context_ids})
        with self._guard():
            mine = [r[0] for part in batches(ids) for r in self.db.conn.execute(
                f"SELECT id FROM contexts WHERE origin IN (?, ?) AND id IN ({marks(part)})",
                [LEARNED, DISMISSED, *part])]
            self._delete_contexts(mine)
        return len(mine)

    def forget_learned(self) -> dict[str, int]:
        """Everything learned from the user's writing, in one transaction: learned and dismissed
        contexts, mined chunks (kinds self and teacher) and the kNN data.  The library's own
        entries, of any kind, stay."""
        with self._guard():
            conn = self.db.conn
            ctx = [r[0] for r in conn.execute("SELECT id FROM contexts WHERE origin IN (?, ?)", (LEARNED, DISMISSED))]
            self._delete_contexts(ctx)
            mined = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE kind IN ('self', 'teacher')")]
            for chunk_id in mined:
                self._delete_contexts([r[0] for r in conn.execute(
                    "SELECT id FROM contexts WHERE chunk_id=?", (chunk_id,))])
                conn.execute("DELETE FROM chunks WHERE id=?", (chunk_id,))
            knn = conn.execute("DELETE FROM knn_entries").rowcount
        return {"contexts": len(ctx), "chunks": len(mined), "knn_rows": knn}

    def record_use(self, chunk_id: int, times: int = 1) -> None:
        with self._guard():
            self.db.conn.execute("UPDATE chunks SET use_count = use_count + ? WHERE id=?", (times, chunk_id))

    def get_chunk(self, chunk_id: int) -> Chunk:
        chunks = self.list_chunks(ids=[chunk_id])
        if not chunks:
            raise StoreError(f"There is no chunk with id {chunk_id}.")
        return chunks[0]

    def chunk_texts(self, kinds: Sequence[str]) -> dict[int, str]:
        """chunk id -> text for the chunks of these kinds, without their contexts: cheap enough for
        every typing pause (learning while writing asks it), where list_chunks reads every context."""
        try:
            rows = self.db.conn.execute(
                f"SELECT id, text FROM chunks WHERE kind IN ({marks(kinds)}) ORDER BY id", list(kinds)).fetchall()
        except database.Error as exc:
            raise StoreError(self._explain(exc)) from None
        return {cid: self._open_text(text, cid) for cid, text in rows}

    def list_chunks(self, kind: str | None = None, search: str | None = None,
                    ids: Sequence[int] | None = None) -> list[Chunk]:
        """Chunks in id order, optionally filtered by kind, a search term, or ids."""
        where, args = [], []
        if kind:
            where.append("kind = ?")
            args.append(kind)
        if search:
            # PII values are sealed inside the (encrypted) file, so LIKE cannot see them: every PII row
            # is read and decrypted, and kept below only if the term is in its value, label or contexts.
            where.append("(text LIKE ? OR label LIKE ? OR id IN (SELECT chunk_id FROM contexts WHERE text LIKE ?) "
                         "OR kind = 'pii')")
            args += [f"%{search}%"] * 3
        sql = "SELECT id, text, kind, label, created_at, updated_at, use_count FROM chunks"
        parts = list(batches(ids)) if ids is not None else [None]
        try:
            chunks: dict[int, Chunk] = {}
            for part in parts:
                clauses = where + ([f"id IN ({marks(part)})"] if part is not None else [])
                query = sql + (" WHERE " + " AND ".join(clauses) if clauses else "") + " ORDER BY id"
                for r in self.db.conn.execute(query, args + (part or [])).fetchall():
                    chunks[r[0]] = Chunk(r[0], self._open_text(r[1], r[0]), r[2], r[3], [], r[4], r[5], r[6])
            chunks = dict(sorted(chunks.items()))
            for part in batches(list(chunks)):
                for cid, chunk_id, text, origin, when in self.db.conn.execute(
                    f"SELECT id, chunk_id, text, origin, learned_at FROM contexts WHERE chunk_id IN ({marks(part)}) "
                    "ORDER BY id", part,
                ):
                    ctx = Context(cid, text, origin, when)
                    (chunks[chunk_id].avoid if origin == DISMISSED else chunks[chunk_id].contexts).append(ctx)
        except database.Error as exc:
            raise StoreError(self._explain(exc)) from None
        if search:
            term = search.casefold()
            return [c for c in chunks.values() if c.kind != "pii" or any(
                term in t.casefold() for t in (c.text, c.label or "", *(x.text for x in c.contexts + c.avoid)))]
        return list(chunks.values())

    def count(self) -> tuple[int, int]:
        """(chunks, contexts)."""
        c = self.db.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        x = self.db.conn.execute("SELECT count(*) FROM contexts").fetchone()[0]
        return c, x

    def context_owner(self) -> dict[int, int]:
        """context id -> chunk id."""
        return dict(self.db.conn.execute("SELECT id, chunk_id FROM contexts").fetchall())

    def add_many(self, records: Sequence[dict]) -> list[int]:
        """Add many validated records in one transaction (all or nothing)."""
        cleaned = [(r["text"], r["kind"], r.get("label"),
                    validate_chunk(r["text"], r["kind"], r.get("label"), r["contexts"])) for r in records]
        with self._guard():
            return [self._insert(*c) for c in cleaned]

    def add_mined(self, model_id: int, kind: str, chunks: Sequence, max_contexts: int = 32,
                  knn_rows: Sequence[tuple] = (), teacher: str | None = None) -> "Mined":
        """Store mined chunks with their encodings, all in one transaction.

        *chunks*: objects with ``text``, ``tokens`` and ``contexts`` (each with
        ``text``, ``entry_token``, ``vector``, ``vector_local``), as
        :class:`chunkwise.core.distill.MinedChunk`.  A chunk already stored with the
        same text and kind gains the new contexts (up to *max_contexts*), so
        mining the same corpus twice changes nothing.  *knn_rows* (see
        :meth:`add_knn`) go in the same transaction, skipping documents
        already there.  Returns (new chunks, new contexts) and the ids of the chunks that are new or
        gained contexts (what matching must follow: Engine.refresh(chunk_ids=...)).
        """
        if kind == "pii":
            raise StoreError("Mined chunks are phrases, never personal information: store them as another kind.")
        for c in chunks:
            validate_chunk(c.text, kind, None, [x.text for x in c.contexts])
        new_chunks = new_contexts = 0
        touched: set[int] = set()
        encoded: list[Encoding] = []
        with self._guard():
            conn = self.db.conn
            for c in chunks:
                row = conn.execute("SELECT id FROM chunks WHERE text=? AND kind=?",   # mined kinds: never PII
                                   (self._seal(c.text, kind, None), kind)).fetchone()
                if row:
                    chunk_id = row[0]
                else:
                    now = timestamp()
                    chunk_id = conn.execute(
                        "INSERT INTO chunks (text, kind, label, created_at, updated_at, use_count) "
                        "VALUES (?,?,NULL,?,?,0)", (self._seal(c.text, kind, None), kind, now, now)).lastrowid
                    new_chunks += 1
                have = {r[0] for r in conn.execute("SELECT text FROM contexts WHERE chunk_id=?", (chunk_id,))}
                for ctx in c.contexts:
                    if ctx.text in have or len(have) >= max_contexts:
                        continue
                    have.add(ctx.text)
                    ctx_id = conn.execute("INSERT INTO contexts (chunk_id, text) VALUES (?, ?)",
                                          (chunk_id, ctx.text)).lastrowid
                    encoded.append(Encoding(ctx_id, ctx.entry_token, c.tokens, ctx.vector, ctx.vector_local,
                                            self._hash(ctx.text, c.text, kind)))
                    new_contexts += 1
                    touched.add(chunk_id)
            self._write_encodings(model_id, encoded)      # in context order: row ids as if written one by one
            if knn_rows:
                seen = {r[0] for r in conn.execute(
                    "SELECT DISTINCT doc_hash FROM knn_entries WHERE model_id=?", (model_id,))}
                self._insert_knn(model_id, [r for r in knn_rows if r[0] not in seen], teacher)
        return Mined(new_chunks, new_contexts, sorted(touched))
