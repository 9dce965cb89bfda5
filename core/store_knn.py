"""The kNN-LM datastore: one row per mined token position of the user's writing, per model.

Written by mining (core/distill.py, in the same transaction as the mined chunks through
``ChunkStore.add_mined``), read by the kNN-LM (core/knn.py ``datastore``): whole, or the rows its
graph lacks.  :class:`StoreKnn` is mixed into :class:`chunkwise.core.store.ChunkStore`.
"""
from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np


class StoreKnn:
    """The ``knn_entries`` table, for :class:`chunkwise.core.store.ChunkStore` (it provides ``db`` and ``_guard``)."""

    def knn_documents(self, model_id: int) -> set[str]:
        """Hashes of the documents already in this model's kNN datastore."""
        return {r[0] for r in self.db.conn.execute(
            "SELECT DISTINCT doc_hash FROM knn_entries WHERE model_id=?", (model_id,))}

    def add_knn(self, model_id: int, rows: Sequence[tuple], teacher: str | None) -> int:
        """Add (doc_hash, key (d,), next_token, topk_ids (t,) or None, topk_probs (t,) or None) rows at once."""
        with self._guard():
            self._insert_knn(model_id, rows, teacher)
        return len(rows)

    def _insert_knn(self, model_id: int, rows: Sequence[tuple], teacher: str | None) -> None:
        self.db.conn.executemany(
                "INSERT INTO knn_entries (model_id, doc_hash, vector, next_token, topk_ids, topk_probs, teacher) "
                "VALUES (?,?,?,?,?,?,?)",
                [(model_id, h, np.asarray(k, dtype=np.float16).tobytes(), int(v),
                  None if ids is None else np.asarray(ids, dtype=np.int32).tobytes(),
                  None if probs is None else np.asarray(probs, dtype=np.float16).tobytes(), teacher)
                 for h, k, v, ids, probs in rows])

    def knn_data(self, model_id: int, after: int = 0, upto: int | None = None, keys: bool = True):
        """(keys (n, d) float32, values (n,), topk_ids (n, t) | None, topk_probs (n, t) | None, teacher) of
        this model's rows in id order.  *after* / *upto*: only the rows with a higher id / an id up to
        that one (what learning added since a datastore was read; what a kept graph covers).  *keys*:
        False where a graph already holds them (keys then (0, 0)): they are nine tenths of the bytes.
        Teacher probabilities come only where every row has them, from one teacher."""
        cap = upto if upto is not None else 2 ** 62
        rows = self.db.conn.execute(
            f"SELECT {'vector' if keys else 'NULL'}, next_token, topk_ids, topk_probs, teacher FROM knn_entries "
            "WHERE model_id=? AND id>? AND id<=? ORDER BY id", (model_id, after, cap)).fetchall()
        if not rows:
            return np.empty((0, 0), np.float32), np.empty(0, np.int64), None, None, None
        vectors = (np.stack([np.frombuffer(r[0], dtype=np.float16) for r in rows]).astype(np.float32) if keys
                   else np.empty((0, 0), np.float32))
        values = np.asarray([r[1] for r in rows], dtype=np.int64)
        teachers = {r[4] for r in rows}
        if all(r[2] is not None for r in rows) and len(teachers) == 1:
            ids = np.stack([np.frombuffer(r[2], dtype=np.int32) for r in rows])
            probs = np.stack([np.frombuffer(r[3], dtype=np.float16) for r in rows]).astype(np.float32)
            return vectors, values, ids, probs, teachers.pop()
        return vectors, values, None, None, None

    def knn_extent(self, model_id: int, upto: int | None = None) -> tuple[int, int, str]:
        """(rows, newest row id, digest) of this model's datastore, which name its content: a kept
        kNN graph is for it or not.  Rows are only ever added or all cleared, but cleared ids are
        used again, so the digest names which documents' rows hold them (each document's hash and
        row count, in order).  *upto*: of the rows with an id up to that one (what a datastore kept
        before learning added more holds)."""
        cap = upto if upto is not None else 2 ** 62
        n, last = self.db.conn.execute(
            "SELECT count(*), coalesce(max(id), 0) FROM knn_entries WHERE model_id=? AND id<=?",
            (model_id, cap)).fetchone()
        docs = self.db.conn.execute(
            "SELECT doc_hash, count(*) FROM knn_entries WHERE model_id=? AND id<=? GROUP BY doc_hash "
            "ORDER BY min(id)", (model_id, cap)).fetchall()
        digest = hashlib.sha1("\n".join(f"{h}:{c}" for h, c in docs).encode("utf-8")).hexdigest()[:16]
        return int(n), int(last), digest

    def knn_count(self, model_id: int) -> int:
        return self.db.conn.execute("SELECT count(*) FROM knn_entries WHERE model_id=?", (model_id,)).fetchone()[0]

    def clear_knn(self, model_id: int) -> int:
        with self._guard():
            return self.db.conn.execute("DELETE FROM knn_entries WHERE model_id=?", (model_id,)).rowcount
