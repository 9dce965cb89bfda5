"""What a model learned from the shipped corpora, saved per model so the next start skips it.

The whitening statistics of ordinary text (core/encoding.py, ``ModelStats``) and the slot
classifier's weights (core/slots.py): neither holds the user's text.  Each row remembers the
source it was computed from; another source reads as nothing saved.  :class:`StoreModelStats`
is mixed into :class:`chunkwise.core.store.ChunkStore`.
"""
from __future__ import annotations

import numpy as np


class StoreModelStats:
    """The ``model_stats`` and ``slot_models`` tables, for :class:`chunkwise.core.store.ChunkStore` (it provides
    ``db`` and ``_guard``)."""

    # -- per-model statistics of ordinary text

    def model_stats(self, model_id: int, source: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(mean, whitener, background) saved for this model and background source, if any."""
        row = self.db.conn.execute(
            "SELECT source, mean, whitener, background FROM model_stats WHERE model_id=?", (model_id,)
        ).fetchone()
        if not row or row[0] != source:
            return None
        mean = np.frombuffer(row[1], dtype=np.float32)
        dim = mean.shape[0]
        whitener = np.frombuffer(row[2], dtype=np.float32).reshape(dim, dim)
        background = np.frombuffer(row[3], dtype=np.float16).reshape(-1, 2 * dim).astype(np.float32)
        return mean, whitener, background

    def has_model_stats(self, model_id: int, source: str) -> bool:
        row = self.db.conn.execute("SELECT source FROM model_stats WHERE model_id=?", (model_id,)).fetchone()
        return bool(row) and row[0] == source

    def save_model_stats(self, model_id: int, source: str, mean: np.ndarray, whitener: np.ndarray,
                         background: np.ndarray) -> None:
        with self._guard():
            self.db.conn.execute(
                "INSERT OR REPLACE INTO model_stats (model_id, source, mean, whitener, background) VALUES (?,?,?,?,?)",
                (model_id, source, mean.astype(np.float32).tobytes(), whitener.astype(np.float32).tobytes(),
                 background.astype(np.float16).tobytes()),
            )

    # -- per-model slot classifier (trained on the shipped corpus, not on the user's text)

    def slot_model(self, model_id: int, source: str) -> tuple[str, bytes, bytes] | None:
        """(classes JSON, weights, bias) saved for this model and training source, if any."""
        row = self.db.conn.execute(
            "SELECT source, classes, weights, bias FROM slot_models WHERE model_id=?", (model_id,)).fetchone()
        return None if not row or row[0] != source else (row[1], row[2], row[3])

    def save_slot_model(self, model_id: int, source: str, classes: str, weights: bytes, bias: bytes) -> None:
        with self._guard():
            self.db.conn.execute(
                "INSERT OR REPLACE INTO slot_models (model_id, source, classes, weights, bias) VALUES (?,?,?,?,?)",
                (model_id, source, classes, weights, bias))
