"""The user's chunk store: SQLite through sqlite-utils.

Holds chunks (the text to insert), their trigger contexts (the text that
leads into a chunk) and, per model, the derived data that matching needs
(token ids, entry token, context vector).  Derived data is keyed by the
model's identity because vectors from one model mean nothing to another.

>>> store = ChunkStore(":memory:")
>>> cid = store.add_chunk("(555) 123-4567", kind="pii", label="phone",
...                       contexts=["You can call me at"])
>>> store.get_chunk(cid).contexts[0].text
'You can call me at'
"""
from __future__ import annotations

import base64
import glob
import hashlib
import os
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import sqlite_utils

from . import database
from .errors import StoreError

SCHEMA_VERSION = 5
KINDS = ("pii", "snippet", "phrase")
# How a hidden personal value is shown (CLI, library): fixed, so it does not give away the value's length.
PII_MASK = "\u2022" * 10
_KIND_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
MAX_CHUNK_CHARS = 20_000
MAX_CONTEXT_CHARS = 4_000


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def source_hash(context: str, chunk: str) -> str:
    """Fingerprint of what an encoding was computed from (edits invalidate it)."""
    return hashlib.sha1(f"{context}\x00{chunk}".encode("utf-8")).hexdigest()


LEARNED = "learned"       # context origin: the phrase before a value the user typed by hand
DISMISSED = "dismissed"   # context origin: where the user dismissed this chunk (counts against it there)


@dataclass(frozen=True)
class Context:
    """A trigger context.  ``origin``: None (typed into the library, imported or mined),
    LEARNED or DISMISSED, with ``learned_at`` saying when."""

    id: int
    text: str
    origin: str | None = None
    learned_at: str | None = None


@dataclass
class Chunk:
    id: int
    text: str
    kind: str
    label: str | None
    contexts: list[Context] = field(default_factory=list)   # where it belongs (library, mined, learned)
    created_at: str = ""
    updated_at: str = ""
    use_count: int = 0
    avoid: list[Context] = field(default_factory=list)      # where the user dismissed it (DISMISSED)

    def shown(self, reveal: bool = False) -> str:
        """The text as a list shows it: a personal value hidden behind PII_MASK unless *reveal*.

        >>> Chunk(1, "+1 555 0100", "pii", "phone").shown(), Chunk(2, "Best,", "snippet", None).shown()
        ('••••••••••', 'Best,')
        """
        return self.text if (reveal or self.kind != "pii") else PII_MASK

    def as_record(self) -> dict:
        """The portable form used by import/export (no ids, no timestamps)."""
        return {
            "text": self.text,
            "kind": self.kind,
            "label": self.label,
            "contexts": [c.text for c in self.contexts],
        }


@dataclass(frozen=True)
class PendingEncoding:
    """A (chunk, context) pair whose derived data is missing or stale for a model."""

    context_id: int
    chunk_id: int
    context: str
    chunk: str
    source_hash: str


@dataclass(frozen=True)
class Encoding:
    """Derived data for one context of one chunk, for one model.

    ``vector``: the final hidden state after the context's last (entry)
    token, the context vector f_theta.  ``vector_local``: the mean of the
    states over the context's last few tokens.  Both (dim,) float32; stored
    as float16, which changes cosine similarities by less than 1e-3.
    """

    context_id: int
    entry_token: int
    chunk_tokens: tuple[int, ...]
    vector: np.ndarray
    vector_local: np.ndarray
    source_hash: str


@dataclass(frozen=True)
class StoredEncoding:
    """An encoding as read back, with the ids matching needs."""

    label: int  # encodings row id: the HNSW label
    context_id: int
    chunk_id: int
    entry_token: int
    chunk_tokens: tuple[int, ...]
    source_hash: str
    origin: str | None = None


# ---------------------------------------------------------------- validation


def validate_chunk(text: str, kind: str, label: str | None, contexts: Sequence[str]) -> list[str]:
    """Check one chunk's fields; return its cleaned context list or raise StoreError."""
    if not isinstance(text, str) or not text.strip():
        raise StoreError("A chunk needs non-empty text.")
    if "\x00" in text:
        raise StoreError("Chunk text contains a NUL character.")
    if len(text) > MAX_CHUNK_CHARS:
        raise StoreError(f"Chunk text is {len(text):,} characters; the limit is {MAX_CHUNK_CHARS:,}.")
    if not isinstance(kind, str) or not _KIND_RE.match(kind):
        raise StoreError(
            f"Unknown chunk kind {kind!r}: use pii, snippet or phrase "
            "(lower-case letters, digits, '-' or '_')."
        )
    if label is not None and (not isinstance(label, str) or "\x00" in label):
        raise StoreError("A chunk label must be text without NUL characters.")
    if isinstance(contexts, str) or not isinstance(contexts, (list, tuple)):
        raise StoreError("A chunk's contexts must be a list of texts.")
    cleaned: list[str] = []
    for ctx in contexts:
        if not isinstance(ctx, str) or not ctx.strip():
            raise StoreError("A trigger context must be non-empty text.")
        if "\x00" in ctx:
            raise StoreError("A trigger context contains a NUL character.")
        if len(ctx) > MAX_CONTEXT_CHARS:
            raise StoreError(f"A trigger context is {len(ctx):,} characters; the limit is {MAX_CONTEXT_CHARS:,}.")
        if ctx not in cleaned:
            cleaned.append(ctx)
    if not cleaned:
        raise StoreError("A chunk needs at least one trigger context (the text that leads into it).")
    return cleaned


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


MIGRATIONS = [_migrate_1, _migrate_2, _migrate_3, _migrate_4, _migrate_5]
assert len(MIGRATIONS) == SCHEMA_VERSION


# ---------------------------------------------------------------- the store


class ChunkStore:
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

    # -- the encrypted file (core/database.py, core/crypto.py)

    def _open_file(self, encrypted: bool):
        """(connection, (raw key, salt, source, new) or None) for the file at self.path."""
        from . import crypto

        state, salt = database.file_state(self.path)
        if not encrypted:
            if state == "encrypted":
                raise StoreError(f"The chunk store {self.path} is encrypted; open it with its key.")
            return database.connect(self.path), None
        if state == "damaged":
            raise database.DatabaseError("file is not a database")
        if state == "plain":
            self._encrypt_older_file()
            state, salt = database.file_state(self.path)
            if state != "encrypted":
                raise StoreError(f"The chunk store {self.path} could not be encrypted; it is unchanged.")
        if state == "new":
            salt = secrets.token_bytes(database.SALT_BYTES)
            raw, source = crypto.new_file_key(salt)
            return database.connect(self.path, raw, salt), (raw, salt, source, True)

        def opens(raw: bytes) -> bool:
            try:
                database.connect(self.path, raw).close()
                return True
            except database.WrongKey:
                return False

        raw, source, upgrade = crypto.file_key(salt, opens)
        if upgrade is not None:
            raw = self._upgrade_key(raw, upgrade, salt)
        try:
            return database.connect(self.path, raw), (raw, salt, source, False)
        except database.WrongKey:       # the file was replaced between the two opens
            raise StoreError(f"The chunk store {self.path} changed while it was being opened; open it again.") \
                from None

    def _upgrade_key(self, old: bytes, new: bytes, salt: bytes) -> bytes:
        """A store keyed with an older, faster scrypt (N = 2^14): the file re-encrypted with the current
        scheme's key, all or nothing; the key that sealed its values inside (PII, token ids, index
        files) goes in with it as the store's data key, read only through the file's new key.
        Returns the key that now opens the file (the old one if re-keying failed: it still opens)."""
        meta = {"data_key": base64.b64encode(old).decode()}
        conn = database.connect(self.path, old)
        try:
            rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        finally:
            conn.close()
        if rows.get("data_key"):
            meta = {}                            # sealed with an earlier data key: keep that one
        try:
            database.rekey_file(self.path, old, new, salt, meta)
        except (database.Error, OSError):
            return old                           # left as it was; tried again on the next open
        for index_file in Path(self.path).parent.glob(f"{glob.escape(Path(self.path).name)}.*.hnsw*"):
            index_file.unlink(missing_ok=True)   # sealed with the old key: rebuilt, sealed with the new one
        return new

    def _encrypt_older_file(self) -> None:
        """A store made before file encryption (plain SQLite; its PII sealed with its meta key): bring
        its schema up to date, take its key, and replace the file by an encrypted copy, all or nothing.
        The copy's salt is the old key's salt, so a passphrase derives the same key next time."""
        from . import crypto

        self._use(database.connect(self.path))
        try:
            self._migrate()
            key = self._open_key()
            meta = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        finally:
            self.db.conn.close()
        salt = base64.b64decode(meta["key_salt"])
        if key.source == "keychain":     # found by the file's salt from now on
            crypto.remember_in_keychain(salt, key.raw)
        try:
            database.encrypt_file(self.path, key.raw, salt)
        except database.Error as exc:
            if database.file_state(self.path)[0] == "encrypted":
                return                           # another Chunkwise encrypted it meanwhile: open theirs
            raise StoreError(f"Could not encrypt the chunk store {self.path} ({exc}); it is unchanged.") from None
        except OSError as exc:
            raise StoreError(f"Could not encrypt the chunk store {self.path} ({exc}); it is unchanged. "
                             "Free some disk space and open it again.") from None

    def _store_key(self, raw: bytes, salt: bytes, source: str, new: bool):
        """The key object for PII values and fingerprints, with the scheme the store records."""
        from . import crypto

        meta = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        files = None
        if meta.get("data_key"):                 # the file was re-keyed; values inside keep their key
            raw, files = base64.b64decode(meta["data_key"]), raw
        if new or "key_kdf" not in meta and "key_check" not in meta:
            key = crypto.StoreKey(raw, source, crypto.KDF_NEW)
            with self.db.conn:
                for k, v in {"store_id": salt.hex(), "key_source": source, "key_kdf": crypto.KDF_NEW,
                             "key_salt": base64.b64encode(salt).decode(),
                             "key_check": key.encrypt_text(crypto.CHECK_PLAINTEXT)}.items():
                    self.db.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (k, v))
            return key
        key = crypto.StoreKey(raw, source, meta.get("key_kdf", "v1"), files=files)
        try:
            ok = key.decrypt_text(meta.get("key_check", "")) == crypto.CHECK_PLAINTEXT
        except StoreError:
            ok = False
        if not ok:
            raise StoreError(f"The chunk store {self.path} opens, but its key check fails: it was damaged. "
                             "Move it aside and restore a backup or an export.")
        return key

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

    # -- encryption of PII values (core/crypto.py)

    def _open_key(self):
        from . import crypto

        meta = dict(self.db.execute("SELECT key, value FROM meta").fetchall())

        def save(values: dict) -> None:
            with self.db.conn:
                for k, v in values.items():
                    self.db.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (k, v))

        return crypto.open_key(meta, save)

    @property
    def encryption(self) -> str:
        """How the store is protected at rest, in words."""
        if self.key is None:
            return "not encrypted (in-memory store)" if self.path == ":memory:" else "not encrypted"
        return ("encrypted (the whole file, AES-256), key in the system keychain" if self.key.source == "keychain"
                else "encrypted (the whole file, AES-256), key from your passphrase")

    # Sealed values are bound to their place (associated data): a value copied into another row
    # does not open there, so rows cannot be swapped unnoticed even by someone who can write the file.

    def _seal(self, text: str, kind: str, chunk_id: int) -> str:
        return self.key.encrypt_text(text, f"chunks.text:{chunk_id}") if (self.key is not None and kind == "pii") \
            else text

    def _open_text(self, text: str, chunk_id: int) -> str:
        from .crypto import PLACED, PREFIX

        if text.startswith((PREFIX, PLACED)):
            if self.key is None:
                raise StoreError("This value is encrypted and the store has no key.")
            return self.key.decrypt_text(text, f"chunks.text:{chunk_id}")
        return text

    def _hash(self, context: str, chunk: str, kind: str) -> str:
        """source_hash, keyed for PII (a plain hash of a phone number can be brute-forced)."""
        if self.key is not None and kind == "pii":
            return self.key.fingerprint(f"{context}\x00{chunk}")
        return source_hash(context, chunk)

    def _seal_tokens(self, blob: bytes, model_id: int, context_id: int) -> bytes:
        return self.key.encrypt_blob(blob, f"encodings.chunk_tokens:{model_id}:{context_id}") \
            if self.key is not None else blob

    def _open_tokens(self, blob: bytes, model_id: int, context_id: int) -> bytes:
        return self.key.decrypt_blob(blob, f"encodings.chunk_tokens:{model_id}:{context_id}") \
            if self.key is not None else blob

    def _encrypt_plain_pii(self) -> None:
        """Seal, bound to its place, what older stores left plain (PII before schema 4, or imported as
        files) or sealed unbound (enc1: before places were bound), once and in one transaction."""
        from .crypto import PLACED, PLACED_PREFIX, PREFIX

        rows = self.db.conn.execute(
            "SELECT id, text FROM chunks WHERE kind='pii' AND substr(text, 1, ?) != ?", (len(PLACED), PLACED)
        ).fetchall()
        # Token blobs are sealed on every write once a key exists: the scan of the whole
        # encodings table (gigabytes at a million contexts) is needed once per store, not per start.
        sealed = self.db.execute("SELECT value FROM meta WHERE key='tokens_placed'").fetchone()
        blobs = [] if sealed else self.db.conn.execute(
            "SELECT id, model_id, context_id, chunk_tokens FROM encodings WHERE substr(chunk_tokens, 1, ?) != ?",
            (len(PLACED_PREFIX), PLACED_PREFIX)).fetchall()
        if not rows and not blobs and sealed:
            return
        with self._guard():
            self.db.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('tokens_placed', '1')")
            for chunk_id, text in rows:
                was_plain = not text.startswith(PREFIX)
                text = self._open_text(text, chunk_id)
                self.db.conn.execute("UPDATE chunks SET text=? WHERE id=?", (self._seal(text, "pii", chunk_id), chunk_id))
                if not was_plain:
                    continue                      # its fingerprints were keyed already
                for enc_id, ctx in self.db.conn.execute(
                        "SELECT e.id, x.text FROM encodings e JOIN contexts x ON x.id = e.context_id "
                        "WHERE x.chunk_id=?", (chunk_id,)).fetchall():
                    self.db.conn.execute("UPDATE encodings SET source_hash=? WHERE id=?",
                                         (self._hash(ctx, text, "pii"), enc_id))
            for enc_id, model_id, context_id, blob in blobs:
                self.db.conn.execute("UPDATE encodings SET chunk_tokens=? WHERE id=?", (self._seal_tokens(
                    self._open_tokens(blob, model_id, context_id), model_id, context_id), enc_id))

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
        now = _now()
        cur = self.db.conn.execute(
            "INSERT INTO chunks (text, kind, label, created_at, updated_at, use_count) VALUES (?,?,?,?,?,0)",
            (text if kind != "pii" else "", kind, label, now, now),
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
                (self._seal(new_text, new_kind, chunk_id), new_kind, new_label, _now(), chunk_id),
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
                                (chunk_id, text, origin, _now())).lastrowid

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

    def add_many(self, records: Sequence[dict]) -> list[int]:
        """Add many validated records in one transaction (all or nothing)."""
        cleaned = [(r["text"], r["kind"], r.get("label"),
                    validate_chunk(r["text"], r["kind"], r.get("label"), r["contexts"])) for r in records]
        with self._guard():
            return [self._insert(*c) for c in cleaned]

    def add_mined(self, model_id: int, kind: str, chunks: Sequence, max_contexts: int = 32,
                  knn_rows: Sequence[tuple] = (), teacher: str | None = None) -> tuple[int, int]:
        """Store mined chunks with their encodings, all in one transaction.

        *chunks*: objects with ``text``, ``tokens`` and ``contexts`` (each with
        ``text``, ``entry_token``, ``vector``, ``vector_local``), as
        :class:`core.distill.MinedChunk`.  A chunk already stored with the
        same text and kind gains the new contexts (up to *max_contexts*), so
        mining the same corpus twice changes nothing.  *knn_rows* (see
        :meth:`add_knn`) go in the same transaction, skipping documents
        already there.  Returns (new chunks, new contexts).
        """
        if kind == "pii":
            raise StoreError("Mined chunks are phrases, never personal information: store them as another kind.")
        for c in chunks:
            validate_chunk(c.text, kind, None, [x.text for x in c.contexts])
        new_chunks = new_contexts = 0
        encoded: list[Encoding] = []
        with self._guard():
            conn = self.db.conn
            for c in chunks:
                row = conn.execute("SELECT id FROM chunks WHERE text=? AND kind=?",   # mined kinds: never PII
                                   (c.text, kind)).fetchone()
                if row:
                    chunk_id = row[0]
                else:
                    now = _now()
                    chunk_id = conn.execute(
                        "INSERT INTO chunks (text, kind, label, created_at, updated_at, use_count) "
                        "VALUES (?,?,NULL,?,?,0)", (c.text, kind, now, now)).lastrowid
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
            self._write_encodings(model_id, encoded)      # in context order: row ids as if written one by one
            if knn_rows:
                seen = {r[0] for r in conn.execute(
                    "SELECT DISTINCT doc_hash FROM knn_entries WHERE model_id=?", (model_id,))}
                self._insert_knn(model_id, [r for r in knn_rows if r[0] not in seen], teacher)
        return new_chunks, new_contexts

    # -- models and derived data

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
                (identity, name, dim, _now()),
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
        rows = []
        for part in ([None] if chunk_ids is None else batches(list(chunk_ids))):
            where, args = ("", ()) if part is None else (f" AND c.id IN ({marks(part)})", tuple(part))
            rows += self.db.conn.execute(
                f"""SELECT e.id, e.context_id, c.id, e.entry_token, e.chunk_tokens, e.source_hash, x.text, c.text,
                          c.kind, x.origin
                   FROM encodings e JOIN contexts x ON x.id = e.context_id JOIN chunks c ON c.id = x.chunk_id
                   WHERE e.model_id = ?{where} ORDER BY e.id""",
                (model_id, *args),
            ).fetchall()
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

    # -- kNN-LM datastore

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

    def knn_count(self, model_id: int) -> int:
        return self.db.conn.execute("SELECT count(*) FROM knn_entries WHERE model_id=?", (model_id,)).fetchone()[0]

    def clear_knn(self, model_id: int) -> int:
        with self._guard():
            return self.db.conn.execute("DELETE FROM knn_entries WHERE model_id=?", (model_id,)).rowcount

    def context_owner(self) -> dict[int, int]:
        """context id -> chunk id."""
        return dict(self.db.conn.execute("SELECT id, chunk_id FROM contexts").fetchall())
