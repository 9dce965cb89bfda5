"""The chunk store's crypto glue: opening the encrypted file, the store's key, sealed values.

The file is encrypted whole (core/database.py, SQLCipher); inside it, PII values and every chunk's
token ids are sealed once more with the store's key (core/crypto.py), each bound to its row.
:class:`StoreCrypto` is mixed into :class:`chunkwise.core.store.ChunkStore`; the rest of the store calls
``_seal`` / ``_open_text`` / ``_hash`` / ``_seal_tokens`` / ``_open_tokens`` and never the key itself.
"""
from __future__ import annotations

import base64
import glob
import secrets
from pathlib import Path

from . import database
from .errors import StoreError
from .store_records import source_hash

# Before a plain text that begins like a sealed value: "enc0:enc1:…" is the text "enc1:…" (StoreCrypto._seal).
PLAIN = "enc0:"


class StoreCrypto:
    """Opening, keying and sealing for :class:`chunkwise.core.store.ChunkStore` (it provides ``path``, ``db``,
    ``key``, ``_use``, ``_migrate`` and ``_guard``)."""

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

    def _seal(self, text: str, kind: str, chunk_id: int | None) -> str:
        """A chunk's text as stored: a PII value sealed where the store has a key; any other text as it is,
        unless it begins like a sealed value ("enc1:…", a snippet a user may well keep) or like PLAIN,
        which then goes before it, so that reading it back does not try to open it."""
        from .crypto import PLACED, PREFIX

        if self.key is not None and kind == "pii":
            return self.key.encrypt_text(text, f"chunks.text:{chunk_id}")
        return PLAIN + text if text.startswith((PREFIX, PLACED, PLAIN)) else text

    def _open_text(self, text: str, chunk_id: int) -> str:
        from .crypto import PLACED, PREFIX

        if text.startswith(PLAIN):
            return text[len(PLAIN):]
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
