"""The kNN-LM datastore: one row per mined token position of the user's writing, per model.

Written by mining (core/distill.py, in the same transaction as the mined chunks through
``ChunkStore.add_mined``), read whole by the kNN-LM (core/knn.py).  :class:`StoreKnn` is mixed
into :class:`chunkwise.core.store.ChunkStore`.
"""
from __future__ import annotations

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

    def knn_data(self, model_id: int):
        """(keys (n, d) float32, values (n,), topk_ids (n, t) | None, topk_probs (n, t) | None, teacher)."""
        rows = self.db.conn.execute(
            "SELECT vector, next_token, topk_ids, topk_probs, teacher FROM knn_entries WHERE model_id=? ORDER BY id",
            (model_id,)).fetchall()
        if not rows:
            return np.empty((0, 0), np.float32), np.empty(0, np.int64), None, None, None
        keys = np.stack([np.frombuffer(r[0], dtype=np.float16) for r in rows]).astype(np.float32)
        values = np.asarray([r[1] for r in rows], dtype=np.int64)
        teachers = {r[4] for r in rows}
        if all(r[2] is not None for r in rows) and len(teachers) == 1:
            ids = np.stack([np.frombuffer(r[2], dtype=np.int32) for r in rows])
            probs = np.stack([np.frombuffer(r[3], dtype=np.float16) for r in rows]).astype(np.float32)
            return keys, values, ids, probs, teachers.pop()
        return keys, values, None, None, None

    def knn_extent(self, model_id: int) -> tuple[int, int]:
        """(rows, newest row id) of this model's datastore: rows are only ever added or all cleared,
        so the pair names its content (a kept kNN index is for this datastore or not)."""
        n, last = self.db.conn.execute("SELECT count(*), coalesce(max(id), 0) FROM knn_entries WHERE model_id=?",
                                       (model_id,)).fetchone()
        return int(n), int(last)

    def knn_count(self, model_id: int) -> int:
        return self.db.conn.execute("SELECT count(*) FROM knn_entries WHERE model_id=?", (model_id,)).fetchone()[0]

    def clear_knn(self, model_id: int) -> int:
        with self._guard():
            return self.db.conn.execute("DELETE FROM knn_entries WHERE model_id=?", (model_id,)).rowcount
