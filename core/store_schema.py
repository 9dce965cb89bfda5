"""The chunk store's tables: the schema, its migrations, and the SQL shapes every part shares.

``MIGRATIONS[n - 1]`` brings a store from schema n - 1 to n; ``ChunkStore._migrate`` (core/store.py)
runs the missing steps on open, each in its own transaction.  A new table or column is a new step
here and ``SCHEMA_VERSION`` one higher: a step that has shipped is never edited, since stores
already past it would not run it again.

>>> list(batches(range(5), size=2)), marks([7, 8, 9])
([[0, 1], [2, 3], [4]], '?,?,?')
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Iterator, Sequence

import sqlite_utils

SCHEMA_VERSION = 7


def timestamp() -> str:
    """What the ``*_at`` columns hold: UTC, ISO 8601, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# SQLite builds other than Debian's refuse more than 32,766 "?" in one statement (999 before 3.32).
IN_BATCH = 900


def batches(ids: Sequence[int], size: int = IN_BATCH) -> Iterator[list[int]]:
    """*ids* in parts small enough for one ``IN (?, ...)`` on any SQLite build."""
    ids = list(ids)
    for start in range(0, len(ids), size):
        yield ids[start:start + size]


def marks(part: Sequence) -> str:
    return ",".join("?" * len(part))


# ---------------------------------------------------------------- migrations


def _migrate_1(db: sqlite_utils.Database) -> None:
    db["chunks"].create(
        {"id": int, "text": str, "kind": str, "label": str, "created_at": str,
         "updated_at": str, "use_count": int},
        pk="id", not_null={"text", "kind"}, defaults={"use_count": 0},
    )
    db["contexts"].create(
        {"id": int, "chunk_id": int, "text": str},
        pk="id", foreign_keys=[("chunk_id", "chunks", "id")], not_null={"text", "chunk_id"},
    )
    db["contexts"].create_index(["chunk_id"])
    db["models"].create(
        {"id": int, "identity": str, "name": str, "dim": int, "created_at": str},
        pk="id", not_null={"identity"},
    )
    db["models"].create_index(["identity"], unique=True)
    db["encodings"].create(
        {"id": int, "context_id": int, "model_id": int, "entry_token": int,
         "chunk_tokens": bytes, "vector": bytes, "vector_local": bytes, "source_hash": str},
        pk="id",
        foreign_keys=[("context_id", "contexts", "id"), ("model_id", "models", "id")],
    )
    db["encodings"].create_index(["model_id", "context_id"], unique=True)


def _migrate_2(db: sqlite_utils.Database) -> None:
    # The whitening statistics of ordinary text, per model (see encoding.ModelStats).
    db["chunks"].create_index(["kind"])
    db["model_stats"].create(
        {"model_id": int, "source": str, "mean": bytes, "whitener": bytes, "background": bytes},
        pk="model_id", foreign_keys=[("model_id", "models", "id")],
    )


def _migrate_3(db: sqlite_utils.Database) -> None:
    # kNN-LM datastore (core/knn.py): one row per mined token position, per model.
    db["knn_entries"].create(
        {"id": int, "model_id": int, "doc_hash": str, "vector": bytes, "next_token": int,
         "topk_ids": bytes, "topk_probs": bytes, "teacher": str},
        pk="id", foreign_keys=[("model_id", "models", "id")], not_null={"model_id", "next_token"},
    )
    db["knn_entries"].create_index(["model_id", "doc_hash"])


def _migrate_4(db: sqlite_utils.Database) -> None:
    # The slot classifier trained for a model (core/slots.py): no user data, only the shipped corpus's weights.
    db["slot_models"].create(
        {"model_id": int, "source": str, "classes": str, "weights": bytes, "bias": bytes},
        pk="model_id", foreign_keys=[("model_id", "models", "id")],
    )


def _migrate_5(db: sqlite_utils.Database) -> None:
    # Learning while writing: where a context came from and when (Context.origin).
    db["contexts"].add_column("origin", str)
    db["contexts"].add_column("learned_at", str)


def _migrate_6(db: sqlite_utils.Database) -> None:
    # Learning looks each mined chunk up by its text (ChunkStore.add_mined): with the kind index alone
    # that scanned every mined chunk, once per chunk learned -- quadratic in a learned store's size
    # (minutes to write 25k mined chunks, bench/library_update.py's learned store).
    db["chunks"].create_index(["kind", "text"], if_not_exists=True)
    # Deleting or editing a chunk deletes its contexts' encodings by context id, which the (model_id,
    # context_id) index cannot serve: a scan of every encoding, vectors and all, per context (0.4 s to
    # edit and 1.5 s to delete one entry at 100k contexts, bench/library_update.py).
    db["encodings"].create_index(["context_id"], if_not_exists=True)


def _migrate_7(db: sqlite_utils.Database) -> None:
    # A lone word learned as a lead-in: "I'm" counted as two words ("i", "m") before text.learnable
    # counted words as written, and a value typed after it came back after every later "I'm".  Such
    # learned contexts go, with their encodings (the vector index drops them on its next load).
    # The rule as it stood when this step shipped (text.learnable), copied: a shipped step never changes.
    def learnable(phrase: str) -> bool:
        n = sum(any(ch.isalnum() for ch in part) for part in phrase.split())
        return n >= 2 or (n == 1 and phrase.rstrip().endswith(":"))

    lone = [row[0] for row in db.execute("SELECT id, text FROM contexts WHERE origin = 'learned'").fetchall()
            if not learnable(row[1])]
    for part in batches(lone):
        db.execute(f"DELETE FROM encodings WHERE context_id IN ({marks(part)})", part)
        db.execute(f"DELETE FROM contexts WHERE id IN ({marks(part)})", part)


MIGRATIONS = [_migrate_1, _migrate_2, _migrate_3, _migrate_4, _migrate_5, _migrate_6, _migrate_7]
assert len(MIGRATIONS) == SCHEMA_VERSION
