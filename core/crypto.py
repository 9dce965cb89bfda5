"""The store's key, and sealing with it: AES-256-GCM, a key kept in the OS keychain or derived from a passphrase.

A file store gets a random 256-bit key the first time it is opened.  The key
lives in the operating system's keychain (the ``keyring`` package: macOS
Keychain, Windows Credential Locker, Secret Service on Linux desktops), under
the store file's salt.  Where no keychain exists, the key is derived from a
passphrase with scrypt and that salt: ``CHUNKWISE_PASSPHRASE``, or asked for
(the command line prompts on a terminal; the editor asks in a dialog).

The key opens the whole file (SQLCipher, core/database.py); inside it, PII
values and token ids are sealed once more (AES-256-GCM, bound to their row),
and the HNSW index files beside it are sealed with it (:meth:`StoreKey.seal_file`).
Decrypted data exists only in memory.

>>> key = StoreKey(bytes(32), "test")
>>> token = key.encrypt_text("(555) 123-4567")
>>> token.startswith(PREFIX) and "555" not in token
True
>>> key.decrypt_text(token)
'(555) 123-4567'
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import struct
import threading
from typing import Callable

from .errors import StoreError

PREFIX = "enc1:"                # sealed with no associated data (stores before places were bound)
PLACED = "enc2:"                # sealed bound to its place (table, column, row)
PLACED_PREFIX = b"enc2:"
FILE_MAGIC = b"chunkwise-sealed-1\n"
FRAME = 1 << 26                 # 64 MiB of plaintext per AES-GCM call
BLOB_PREFIX = b"enc1:"
SERVICE = "Chunkwise"
CHECK_PLAINTEXT = "chunkwise-key-check"
# Key schemes, recorded per store (meta ``key_kdf``) so that a store opens with the scheme it was made with.
# "v2" (new stores): scrypt at N = 2^17, about half a second on a 2-core machine (hashlib.scrypt,
# measured 0.50 s; 2^14 took 0.06 s), and the MAC key from HKDF-SHA256.  "v1" (stores made before):
# N = 2^14 and the MAC key as a salted SHA-256 of the key.
KDF_SCHEMES = {"v1": {"n": 2**14, "r": 8, "p": 1}, "v2": {"n": 2**17, "r": 8, "p": 1}}
KDF_NEW = "v2"
KDF_ORDER = ("v2", "v1")      # tried newest first when a store file opens

_lock = threading.Lock()
# A typed passphrase (the editor's dialog) is held only until it has opened a store: then the
# store's key is kept (_unlocked, by the store's salt) and the passphrase dropped, as password
# managers keep the vault key, not the master password.  CHUNKWISE_PASSPHRASE lives in the
# environment for the whole process anyway, so keys derived from it are cached by it (_derived).
_passphrase: str | None = None
_unlocked: dict[tuple[bytes, str], bytes] = {}
_derived: dict[tuple[str, bytes, str], bytes] = {}
PassphrasePrompt = Callable[[bool], "str | None"]   # (new store?) -> passphrase or None
_prompt: PassphrasePrompt | None = None


def set_passphrase(passphrase: str | None) -> None:
    """The passphrase for stores without a keychain (the editor's dialog sets it)."""
    global _passphrase
    _passphrase = passphrase


PROMPT = ("This system has no keychain, so your personal information (phone, address, …) in the chunk store\n"
          "is encrypted with a passphrase. Enter it (a new store takes the one you choose now):")
PROMPT_NEW = ("This system has no keychain, so your personal information (phone, address, …) in your new chunk\n"
              "store will be encrypted with a passphrase. Choose one (nobody can recover it for you):")
PROMPT_AGAIN = "Type the passphrase once more, to be sure:"
DIFFERENT = "The two passphrases differ."


def choose_passphrase(ask: Callable[[str], "str | None"], new: bool, differ: Callable[[], bool]) -> str | None:
    """The one passphrase dialogue, for the editor's dialog and the terminal alike; None: declined.

    *ask(prompt)* shows a prompt and returns the answer (None or empty declines).  A new
    store's passphrase is asked twice, as password managers do, since a mistyped one would
    lock the user out of what they store next; when the two differ, *differ()* says so and
    returns whether to ask again.

    >>> answers = iter(["one", "two", "one", "one"])
    >>> choose_passphrase(lambda _prompt: next(answers), new=True, differ=lambda: True)
    'one'
    """
    while True:
        first = ask(PROMPT_NEW if new else PROMPT)
        if not first:
            return None
        if not new:
            return first
        again = ask(PROMPT_AGAIN)
        if again is None:
            return None
        if again == first:
            return first
        if not differ():
            return None


def set_prompt(prompt: PassphrasePrompt | None) -> None:
    """How to ask for a passphrase when one is needed and none is set (the CLI's getpass)."""
    global _prompt
    _prompt = prompt


class StoreKey:
    """One store's key: encrypts text and blobs, and fingerprints PII without revealing it."""

    def __init__(self, key: bytes, source: str, scheme: str = KDF_NEW, files: bytes | None = None):
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._aead = AESGCM(key)
        # Files beside the store (the index) are sealed with the store file's own key: after a re-key
        # (*files* is the new file key, *key* the data key the values inside keep) nothing outside the
        # file can be checked against passphrase guesses at the older, faster scheme's cost.
        self._file_aead = AESGCM(files) if files is not None else self._aead
        self.raw = key                               # the store file's key too, unless the file was re-keyed
        self._mac_key = mac_key(key, scheme)
        self.source = source                         # "keychain" or "passphrase"

    def encrypt_blob(self, data: bytes, place: str | None = None) -> bytes:
        """*data* sealed; with *place* (table, column and row, say ``"chunks.text:7"``) as associated
        data, so the value only opens where it was written: one swapped into another row fails."""
        nonce = secrets.token_bytes(12)
        if place is None:
            return BLOB_PREFIX + nonce + self._aead.encrypt(nonce, data, None)
        return PLACED_PREFIX + nonce + self._aead.encrypt(nonce, data, place.encode("utf-8"))

    def decrypt_blob(self, data: bytes, place: str | None = None) -> bytes:
        if data.startswith(PLACED_PREFIX):
            raw, aad = data[len(PLACED_PREFIX):], (place or "").encode("utf-8")
        elif data.startswith(BLOB_PREFIX):
            raw, aad = data[len(BLOB_PREFIX):], None            # sealed before places were bound
        else:
            return data
        from cryptography.exceptions import InvalidTag

        try:
            return self._aead.decrypt(raw[:12], raw[12:], aad)
        except InvalidTag:
            raise StoreError("An encrypted value in the chunk store does not decrypt with this key where it "
                             "is (wrong passphrase, or the data was damaged or moved).") from None

    def encrypt_text(self, text: str, place: str | None = None) -> str:
        blob = self.encrypt_blob(text.encode("utf-8"), place)
        prefix = PLACED if place is not None else PREFIX
        return prefix + base64.b64encode(blob[len(prefix):]).decode()

    def decrypt_text(self, text: str, place: str | None = None) -> str:
        for prefix, blob_prefix in ((PLACED, PLACED_PREFIX), (PREFIX, BLOB_PREFIX)):
            if text.startswith(prefix):
                return self.decrypt_blob(blob_prefix + base64.b64decode(text[len(prefix):]), place).decode("utf-8")
        return text

    def seal_file(self, data: bytes, purpose: str) -> bytes:
        """*data* (any size) sealed for a file: AES-GCM frames of at most FRAME bytes (GCM's limit per
        call is 2 GiB), each bound by its associated data to *purpose*, its place and the frame count,
        so a frame swapped in from another file or place, a reordered or a cut file fails to open.

        >>> key = StoreKey(bytes(32), "test")
        >>> key.open_file(key.seal_file(b"vectors", "index:m"), "index:m")
        b'vectors'
        """
        view = memoryview(data)
        count = max(1, -(-len(view) // FRAME))
        out = [FILE_MAGIC, struct.pack("<I", count)]
        for i in range(count):
            nonce = secrets.token_bytes(12)
            sealed = self._file_aead.encrypt(nonce, view[i * FRAME:(i + 1) * FRAME], _frame_aad(purpose, i, count))
            out += [struct.pack("<Q", len(sealed)), nonce, sealed]
        return b"".join(out)

    def open_file(self, data: bytes, purpose: str) -> bytes:
        """The bytes seal_file sealed for *purpose*; StoreError when the key, the purpose or the data differ."""
        from cryptography.exceptions import InvalidTag

        view = memoryview(data)
        try:
            if bytes(view[:len(FILE_MAGIC)]) != FILE_MAGIC:
                raise ValueError("not a sealed file")
            (count,), at, parts = struct.unpack_from("<I", view, len(FILE_MAGIC)), len(FILE_MAGIC) + 4, []
            for i in range(count):
                (size,) = struct.unpack_from("<Q", view, at)
                nonce, sealed = view[at + 8:at + 20], view[at + 20:at + 20 + size]
                if len(sealed) != size:
                    raise ValueError("cut short")
                parts.append(self._file_aead.decrypt(bytes(nonce), sealed, _frame_aad(purpose, i, count)))
                at += 20 + size
            if at != len(view):
                raise ValueError("trailing data")
        except (InvalidTag, ValueError, struct.error):
            raise StoreError("A file of the chunk store does not decrypt with its key (damaged, or "
                             "not the file it should be).") from None
        return b"".join(parts)

    def fingerprint(self, data: str) -> str:
        """Keyed hash (HMAC-SHA256): a plain hash of a phone number could be brute-forced."""
        return hmac.new(self._mac_key, data.encode("utf-8"), hashlib.sha256).hexdigest()


def _frame_aad(purpose: str, index: int, count: int) -> bytes:
    return f"{purpose}\x00{index}\x00{count}".encode("utf-8")


def mac_key(key: bytes, scheme: str = KDF_NEW) -> bytes:
    """The fingerprint key, kept apart from the encryption key (HKDF-SHA256 from the cryptography package)."""
    if scheme == "v1":
        return hashlib.sha256(b"chunkwise-mac\x00" + key).digest()
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"chunkwise fingerprint key").derive(key)


def derive(passphrase: str, salt: bytes, scheme: str = KDF_NEW) -> bytes:
    """The store key from a passphrase: scrypt with the store's scheme."""
    params = KDF_SCHEMES[scheme]
    return hashlib.scrypt(passphrase.encode("utf-8"), salt=salt, dklen=32,
                          maxmem=256 * params["n"] * params["r"], **params)


def _environment_key(passphrase: str, salt: bytes, scheme: str) -> bytes:
    """derive() for CHUNKWISE_PASSPHRASE, cached per process (not on disk)."""
    with _lock:
        cached = _derived.get((passphrase, salt, scheme))
        if cached is None:
            cached = _derived[(passphrase, salt, scheme)] = derive(passphrase, salt, scheme)
        return cached


def _keychain_key(store_id: str, create: bool) -> bytes | None:
    """The store's key from the keychain (made and saved there when *create*); None without a keychain."""
    try:
        import keyring
        from keyring.errors import KeyringError
    except ImportError:
        return None
    try:
        saved = keyring.get_password(SERVICE, f"store-key:{store_id}")
        if saved:
            return base64.b64decode(saved)
        if not create:
            return None
        key = secrets.token_bytes(32)
        keyring.set_password(SERVICE, f"store-key:{store_id}", base64.b64encode(key).decode())
        return key
    except (KeyringError, RuntimeError, OSError, ValueError):
        return None
    except Exception:  # noqa: BLE001 - a backend's own errors (locked collection, D-Bus gone): no keychain
        return None


def remember_in_keychain(salt: bytes, raw: bytes) -> None:
    """Keep *raw* in the keychain under the store file's salt (stores made before file encryption
    kept it under a random id, which cannot be read from an encrypted file)."""
    try:
        import keyring

        keyring.set_password(SERVICE, f"store-key:{salt.hex()}", base64.b64encode(raw).decode())
    except Exception as exc:  # noqa: BLE001 - a backend's own errors
        raise StoreError(f"Could not save the store's key in the system keychain ({type(exc).__name__}).") from None


def keychain_available() -> bool:
    try:
        import keyring
        from keyring.backends import fail

        return not isinstance(keyring.get_keyring(), fail.Keyring)
    except Exception:  # noqa: BLE001 - any keyring trouble means "no keychain"
        return False


def _given_passphrase(new: bool) -> tuple[str | None, bool]:
    """(passphrase, typed): CHUNKWISE_PASSPHRASE, else the dialog's or the terminal prompt's answer."""
    env = os.environ.get("CHUNKWISE_PASSPHRASE")
    if env:
        return env, False
    global _passphrase
    with _lock:
        # A typed passphrase serves one opening: kept as the store's key if it opens it
        # (_keep_unlocked), and never left to key the next new store if it was mistyped.
        typed, _passphrase = _passphrase, None
    typed = typed or (_prompt(new) if _prompt is not None else None)
    return (typed, True) if typed else (None, False)


def _key_from(passphrase: str, typed: bool, salt: bytes, scheme: str) -> bytes:
    return derive(passphrase, salt, scheme) if typed else _environment_key(passphrase, salt, scheme)


def _passphrase_key(salt: bytes, scheme: str, new: bool) -> tuple[bytes | None, bool]:
    """(key, typed): from CHUNKWISE_PASSPHRASE, a store unlocked before in this process, or a typed
    passphrase (the dialog's, or the command line's prompt); (None, False) when there is none."""
    if not os.environ.get("CHUNKWISE_PASSPHRASE"):
        with _lock:
            if (salt, scheme) in _unlocked:
                return _unlocked[(salt, scheme)], False
    passphrase, typed = _given_passphrase(new)
    return (_key_from(passphrase, typed, salt, scheme), typed) if passphrase else (None, False)


def _keep_unlocked(salt: bytes, scheme: str, raw: bytes) -> None:
    """The typed passphrase opened this store: keep its key (the passphrase is gone already)."""
    with _lock:
        _unlocked[(salt, scheme)] = raw


NO_PASSPHRASE = ("Your chunk store is encrypted with a passphrase and no system keychain is available: set "
                 "CHUNKWISE_PASSPHRASE or run Chunkwise interactively to be asked for it.")


def new_file_key(salt: bytes) -> tuple[bytes, str]:
    """(raw key, source) for a new store file whose salt is *salt*: a passphrase when one is given
    (environment or dialog) or no keychain exists, otherwise a random key saved in the keychain."""
    passphrase = os.environ.get("CHUNKWISE_PASSPHRASE") or _passphrase
    if not passphrase and keychain_available():
        raw = _keychain_key(salt.hex(), create=True)
        if raw is not None:
            return raw, "keychain"
    raw, typed = _passphrase_key(salt, KDF_NEW, new=True)
    if raw is None:
        raise StoreError(NO_PASSPHRASE)
    if typed:
        _keep_unlocked(salt, KDF_NEW, raw)
    return raw, "passphrase"


def file_key(salt: bytes, opens: Callable[[bytes], bool]) -> tuple[bytes, str, bytes | None]:
    """(raw key, source, upgrade) for the existing store file whose salt is *salt*.

    Tried in turn: the keychain's entry for this file, a key unlocked before in
    this process, then the passphrase (environment, dialog or prompt) with each
    key scheme, newest first.  *opens(raw)* says whether a key reads the file.
    *upgrade* is the current scheme's key from the same passphrase when an older
    scheme opened it (N = 2^14): the store re-keys the file with it
    (ChunkStore._upgrade_key), so a stolen copy costs the slow derivation to guess.
    Raises StoreError saying what to do when no key opens the file.
    """
    raw = _keychain_key(salt.hex(), create=False)
    if raw is not None and opens(raw):
        return raw, "keychain", None
    in_keychain = raw is not None
    if not os.environ.get("CHUNKWISE_PASSPHRASE"):
        with _lock:
            known = [_unlocked[(salt, s)] for s in KDF_ORDER if (salt, s) in _unlocked]
        for raw in known:
            if opens(raw):
                return raw, "passphrase", None
    passphrase, typed = _given_passphrase(False)
    if passphrase is None:
        raise StoreError(
            "The system keychain's key does not open this chunk store, and no passphrase is set: if the "
            "store uses one, set CHUNKWISE_PASSPHRASE or run Chunkwise interactively to be asked for it."
            if in_keychain or keychain_available() else
            "Your chunk store is encrypted, its key is not in a system keychain here, and no passphrase is "
            "set: set CHUNKWISE_PASSPHRASE or run Chunkwise interactively to be asked for it (a store keyed "
            "in a keychain opens in the desktop session where that keychain is unlocked).")
    for scheme in KDF_ORDER:
        raw = _key_from(passphrase, typed, salt, scheme)
        if opens(raw):
            upgrade = _key_from(passphrase, typed, salt, KDF_NEW) if scheme != KDF_NEW else None
            if typed:
                _keep_unlocked(salt, KDF_NEW if upgrade else scheme, upgrade or raw)
            return raw, "passphrase", upgrade
    if in_keychain or keychain_available():     # it may be keyed in a keychain, not by a passphrase at all
        raise StoreError("Wrong passphrase for this chunk store, or a store whose key is in another desktop "
                         "session's keychain (this system's keychain does not have it): check the passphrase, "
                         "or open the store in the session where it was made.")
    raise StoreError("Wrong passphrase for this chunk store (or the file was damaged): it cannot be decrypted.")


def open_key(meta: dict, save_meta: Callable[[dict], None]) -> StoreKey:
    """The key of a store, given its meta rows (store_id, key_source, key_salt, key_check).

    A new store (no key_source yet) takes a passphrase when one is given
    (environment or dialog), otherwise the keychain; *save_meta* records the
    choice.  Raises StoreError with what to do when no key can be had.
    """
    source = meta.get("key_source")
    store_id = meta.get("store_id") or secrets.token_hex(16)
    salt = base64.b64decode(meta["key_salt"]) if meta.get("key_salt") else secrets.token_bytes(16)
    new = source is None
    scheme = KDF_NEW if new else meta.get("key_kdf", "v1")
    if scheme not in KDF_SCHEMES:
        raise StoreError("This chunk store's key was made by a newer Chunkwise; update Chunkwise to open it.")
    typed = False
    if new:
        passphrase = os.environ.get("CHUNKWISE_PASSPHRASE") or _passphrase
        source = "passphrase" if passphrase or not keychain_available() else "keychain"
    if source == "keychain":
        raw = _keychain_key(store_id, create=new)
        if raw is None:
            raise StoreError("The key of this chunk store is kept in the system keychain, which is not available "
                             "now. Open Chunkwise in your desktop session, where the keychain is unlocked.")
    else:
        raw, typed = _passphrase_key(salt, scheme, new)
        if raw is None:
            raise StoreError("Your personal information in the chunk store is encrypted with a passphrase and no "
                             "system keychain is available: set CHUNKWISE_PASSPHRASE or run Chunkwise "
                             "interactively to be asked for it.")
    key = StoreKey(raw, source, scheme)
    if new:
        save_meta({"store_id": store_id, "key_source": source, "key_salt": base64.b64encode(salt).decode(),
                   "key_check": key.encrypt_text(CHECK_PLAINTEXT), "key_kdf": scheme})
    else:
        try:
            ok = key.decrypt_text(meta.get("key_check", "")) == CHECK_PLAINTEXT
        except StoreError:
            ok = False
        if not ok:
            raise StoreError("Wrong passphrase for this chunk store: your personal information in it cannot be "
                             "decrypted." if source == "passphrase" else
                             "The keychain's key does not match this chunk store.")
    if source == "passphrase" and typed:
        _keep_unlocked(salt, scheme, raw)
    return key
