"""The chunk store's SQLite file, encrypted whole with SQLCipher (the ``sqlcipher3`` bindings).

Everything Chunkwise keeps in the store is personal data: chunk and context
texts of every kind, token ids, context vectors, the kNN datastore.  SQLCipher
encrypts every page of the database and of its write-ahead log (AES-256,
with an HMAC per page, so a changed, swapped or truncated page fails to
read), decrypts pages into memory only, and leaves SQL untouched: searching
the library with ``LIKE`` keeps working.

The key is raw (32 bytes from the keychain or from scrypt, core/crypto.py),
given together with the file's salt, which SQLCipher writes as the file's
first 16 bytes: that salt is all that is readable without the key, and it
is the scrypt salt of a passphrase store, so one file is the whole store.

>>> conn = connect(":memory:")           # tests and benchmarks: plain, in memory
>>> conn.execute("SELECT 1").fetchone()
(1,)
"""
from __future__ import annotations

import glob
import os
from pathlib import Path

from sqlcipher3 import dbapi2 as sqlite

from .paths import atomic_replace, fsync_dir, fsync_file

Error = sqlite.Error
DatabaseError = sqlite.DatabaseError
OperationalError = sqlite.OperationalError
PLAIN_HEADER = b"SQLite format 3\x00"       # an unencrypted SQLite file (stores made before file encryption)
SALT_BYTES = 16
# Chosen with bench/store_load.py (docs/benchmarks.md): a context row holds two 1,152-byte vectors, which
# 16 KiB pages hold without overflow pages (the file is a quarter smaller), and HMAC-SHA256 checks a
# page faster than SQLCipher's default SHA-512; with the defaults, loading matching at 100k contexts
# took 2.07x the plain file's time.  Both are part of the file format: every connection uses them.
CIPHER_SETTINGS = ("cipher_page_size = 16384", "cipher_hmac_algorithm = HMAC_SHA256")


def connect(path: str, key: bytes | None = None, salt: bytes | None = None, timeout: float = 5.0):
    """A connection to *path*, keyed when *key* is given (with *salt* for a new file).

    Raises :class:`WrongKey` when the file does not open with the key.
    """
    conn = sqlite.connect(path, timeout=timeout, check_same_thread=False)
    conn.execute("PRAGMA cipher_log_level = NONE")      # a wrong key is told by our message, not on stderr
    if key is not None:
        conn.execute(f"PRAGMA key = \"x'{key.hex()}{(salt or b'').hex()}'\"")
        for setting in CIPHER_SETTINGS:
            conn.execute(f"PRAGMA {setting}")
        if not opens(conn):
            conn.close()
            raise WrongKey(path)
    return conn


def opens(conn) -> bool:
    """Whether the connection's key reads the file (SQLCipher checks the first page's HMAC).  Only
    "not a database" means another key: a locked or unreadable file raises, and is told as such."""
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return True
    except DatabaseError as exc:
        if "not a database" in str(exc):
            return False
        raise


class WrongKey(Exception):
    """The file is encrypted with another key (or is not a database)."""


def file_state(path: str | os.PathLike) -> tuple[str, bytes | None]:
    """("new", None) for a missing or empty file, ("plain", None) for an unencrypted SQLite file,
    ("damaged", None) for one that cannot be a database (its size is no whole number of pages),
    ("encrypted", salt) otherwise."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(PLAIN_HEADER))
            size = os.fstat(fh.fileno()).st_size
    except FileNotFoundError:
        return "new", None
    except OSError as exc:
        raise OperationalError(f"unable to open database file ({exc.strerror})") from None
    if not head:
        return "new", None
    if head == PLAIN_HEADER:
        return "plain", None
    if size % 512:
        return "damaged", None
    return "encrypted", head[:SALT_BYTES]


def encrypt_file(path: str, key: bytes, salt: bytes) -> None:
    """Replace the plain SQLite file at *path* by an encrypted copy, all or nothing.

    The copy (``sqlcipher_export``) is written beside it, flushed, and renamed
    over the original: a crash before the rename leaves the plain store as it
    was (and a stray encrypted copy), after it the encrypted one.  A second
    Chunkwise that converted the store meanwhile wins; this copy is dropped.
    The plain file's log is checkpointed into it first, so nothing is left behind
    in a ``-wal`` that would outlive the rename.
    """
    _replace_with_copy(path, sqlite.connect(str(path), timeout=5.0), key, salt, expect=("plain", None))


def rekey_file(path: str, old_key: bytes, new_key: bytes, salt: bytes, meta: dict[str, str]) -> None:
    """Re-encrypt the store at *path* from *old_key* to *new_key* (same salt), writing *meta* rows
    into the copy, all or nothing (as :func:`encrypt_file`: a copy, flushed, renamed over it)."""
    _replace_with_copy(path, connect(path, old_key), new_key, salt, expect=("encrypted", salt), meta=meta)


def _remove_stale_copies(target: Path, age_s: float = 3600.0) -> None:
    """Copies left by a conversion that was killed before its rename: a whole (encrypted) library
    each, and one more per failed try.  An hour old is no other Chunkwise's copy in progress."""
    import time

    for stale in target.parent.glob(f".{glob.escape(target.name)}.*.encrypting"):
        try:
            if time.time() - stale.stat().st_mtime > age_s:
                stale.unlink()
        except OSError:
            pass


def _replace_with_copy(path: str, source, key: bytes, salt: bytes, expect: tuple, meta: dict | None = None) -> None:
    """Write *source* (a connection to *path*) into a copy keyed with *key*, then rename it over *path*."""
    target = Path(path)
    _remove_stale_copies(target)
    # A name of its own (owner-only from birth): a second Chunkwise converting the same store at the
    # same moment writes its own copy and never touches this one.
    with atomic_replace(target, suffix=".encrypting") as tmp:
        try:
            source.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            source.execute(f"ATTACH DATABASE ? AS sealed KEY \"x'{key.hex()}{salt.hex()}'\"", (str(tmp),))
            for setting in CIPHER_SETTINGS:
                source.execute(f"PRAGMA sealed.{setting}")
            source.execute("SELECT sqlcipher_export('sealed')")
            for k, v in (meta or {}).items():
                source.execute("INSERT OR REPLACE INTO sealed.meta (key, value) VALUES (?, ?)", (k, v))
            source.commit()
            source.execute("DETACH DATABASE sealed")
            fsync_file(tmp)                               # flushed first: the check stays right before the rename
            if file_state(target) != expect:              # another Chunkwise converted it meanwhile
                raise OperationalError("the store was re-encrypted by another Chunkwise meanwhile")
        except BaseException:
            source.close()                                # before the copy is removed (Windows keeps open files)
            raise
    source.close()
    for side in ("-wal", "-shm", "-journal"):
        Path(f"{target}{side}").unlink(missing_ok=True)
    fsync_dir(target.parent)                              # the old file's sidecars gone for good too
