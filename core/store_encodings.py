"""The models a store knows and each one's encodings of the library's (context, chunk) pairs.

An encoding is keyed by model and context and remembers the hash of the text it was computed
from, so an edit makes it pending again (core/encoding.py computes them, core/index.py indexes
them).  :class:`StoreEncodings` is mixed into :class:`chunkwise.core.store.ChunkStore`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .store_records import DISMISSED, Encoding, PendingEncoding, StoredEncoding
from .store_schema import batches, marks, timestamp


class StoreEncodings:
    """The ``models`` and ``encodings`` tables, for :class:`chunkwise.core.store.ChunkStore` (it provides ``db``,
    ``_guard`` and the sealing of core/store_crypto.py)."""

    def model_id(self, identity: str, name: str, dim: int) -> int:
        """Register a model (idempotent) and return its row id."""
        row = self.db.conn.execute("SELECT id FROM models WHERE identity=?", (identity,)).fetchone()
        if row:
            return row[0]
        with self._guard():      # another process may have registered it since: look again under the lock
            row = self.db.conn.execute("SELECT id FROM models WHERE identity=?", (identity,)).fetchone()
            if row:
                return row[0]
            cur = self.db.conn.execute(
                "INSERT INTO models (identity, name, dim, created_at) VALUES (?,?,?,?)",
                (identity, name, dim, timestamp()),
            )
            return cur.lastrowid

    def pending_encodings(self, model_id: int, chunk_ids: Sequence[int] | None = None) -> list[PendingEncoding]:
        """Pairs whose encoding for this model is missing or computed from older text
        (dismissed places are compared by their words, never encoded); only those of
        *chunk_ids* when given (an edit of a few chunks)."""
        rows = []
        for part in ([None] if chunk_ids is None else batches(list(chunk_ids))):
            where, args = ("", ()) if part is None else (f" AND c.id IN ({marks(part)})", tuple(part))
            rows += self.db.conn.execute(
                f"""SELECT x.id, c.id, x.text, c.text, e.source_hash, c.kind
                   FROM contexts x JOIN chunks c ON c.id = x.chunk_id
                   LEFT JOIN encodings e ON e.context_id = x.id AND e.model_id = ?
                   WHERE (x.origin IS NULL OR x.origin != ?){where}
                   ORDER BY x.id""",
                (model_id, DISMISSED, *args),
            ).fetchall()
        pending = []
        for ctx_id, chunk_id, ctx, chunk, old_hash, kind in rows:
            chunk = self._open_text(chunk, chunk_id)
            h = self._hash(ctx, chunk, kind)
            if old_hash != h:
                pending.append(PendingEncoding(ctx_id, chunk_id, ctx, chunk, h))
        return pending

    def save_encodings(self, model_id: int, encodings: Sequence[Encoding]) -> None:
        """Write encodings in one transaction (replacing older ones)."""
        with self._guard():
            self._write_encodings(model_id, encodings)

    def _write_encodings(self, model_id: int, encodings: Sequence[Encoding]) -> None:
        """The one writer of the ``encodings`` table (inside the caller's transaction): each row
        replaces the model's older one for its context; tokens sealed to their row, vectors float16."""
        self.db.conn.executemany(
            """INSERT INTO encodings (context_id, model_id, entry_token, chunk_tokens, vector,
                                      vector_local, source_hash)
               VALUES (?,?,?,?,?,?,?)
               ON CONFLICT(model_id, context_id) DO UPDATE SET
                 entry_token=excluded.entry_token, chunk_tokens=excluded.chunk_tokens,
                 vector=excluded.vector, vector_local=excluded.vector_local,
                 source_hash=excluded.source_hash""",
            [
                (e.context_id, model_id, int(e.entry_token),
                 self._seal_tokens(np.asarray(e.chunk_tokens, dtype=np.int32).tobytes(), model_id, e.context_id),
                 np.asarray(e.vector, dtype=np.float16).tobytes(),
                 np.asarray(e.vector_local, dtype=np.float16).tobytes(), e.source_hash)
                for e in encodings
            ],
        )

    def valid_encodings(self, model_id: int, chunk_ids: Sequence[int] | None = None) -> list[StoredEncoding]:
        """Encodings of this model that match the current chunk and context text (of *chunk_ids* only, when given)."""
        columns = """e.id, e.context_id, c.id, e.entry_token, e.chunk_tokens, e.source_hash, x.text, c.text,
                     c.kind, x.origin"""
        if chunk_ids is None:
            rows = self.db.conn.execute(
                f"""SELECT {columns}
                   FROM encodings e JOIN contexts x ON x.id = e.context_id JOIN chunks c ON c.id = x.chunk_id
                   WHERE e.model_id = ? ORDER BY e.id""", (model_id,)).fetchall()
        else:
            # A few chunks: from them to their contexts to those encodings.  CROSS JOIN keeps that order
            # (SQLite's planner otherwise walked every encoding of the model by the model_id index: 30-100
            # ms at 100k contexts, bench/library_update.py).
            rows = []
            for part in batches(list(chunk_ids)):
                rows += self.db.conn.execute(
                    f"""SELECT {columns}
                       FROM chunks c CROSS JOIN contexts x ON x.chunk_id = c.id
                            CROSS JOIN encodings e ON e.context_id = x.id AND e.model_id = ?
                       WHERE c.id IN ({marks(part)})""", (model_id, *part)).fetchall()
            rows.sort(key=lambda r: r[0])
        out = []
        for label, ctx_id, chunk_id, entry, toks, h, ctx, chunk, kind, origin in rows:
            if h == self._hash(ctx, self._open_text(chunk, chunk_id), kind):
                toks = self._open_tokens(toks, model_id, ctx_id)
                out.append(StoredEncoding(label, ctx_id, chunk_id, entry,
                                          tuple(np.frombuffer(toks, dtype=np.int32).tolist()), h, origin))
        return out

    def encoding_vectors(self, labels: Sequence[int], column: str = "vector") -> np.ndarray:
        """Vectors (n, dim) float32 of the encodings with these row ids, in that order."""
        if column not in ("vector", "vector_local"):
            raise ValueError(column)
        found: dict[int, np.ndarray] = {}
        labels = list(labels)
        for part in batches(labels):
            for rid, blob in self.db.conn.execute(f"SELECT id, {column} FROM encodings WHERE id IN ({marks(part)})", part):
                found[rid] = np.frombuffer(blob, dtype=np.float16)
        return np.stack([found[l] for l in labels]).astype(np.float32) if labels else np.empty((0, 0), np.float32)
