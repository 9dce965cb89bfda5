"""PII values at rest: AES-256-GCM with a key kept in the OS keychain, or derived from a passphrase.

A file store gets a random 256-bit key the first time it is opened.  The key
lives in the operating system's keychain (the ``keyring`` package: macOS
Keychain, Windows Credential Locker, Secret Service on Linux desktops).
Where no keychain exists, the key is derived from a passphrase with scrypt:
``CHUNKWISE_PASSPHRASE``, or asked for (the command line prompts on a
terminal; the editor asks in a dialog).  The store records which of the two
it uses and a check value, so a wrong passphrase is told apart from damaged
data.  Decrypted values exist only in memory.

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
import threading
from typing import Callable

from .errors import StoreError

PREFIX = "enc1:"
BLOB_PREFIX = b"enc1:"
SERVICE = "Chunkwise"
CHECK_PLAINTEXT = "chunkwise-key-check"
# Key schemes, recorded per store (meta ``key_kdf``) so that a store opens with the scheme it was made with.
# "v2" (new stores): scrypt at N = 2^17, about half a second on a 2-core machine (hashlib.scrypt,
# measured 0.50 s; 2^14 took 0.06 s), and the MAC key from HKDF-SHA256.  "v1" (stores made before):
# N = 2^14 and the MAC key as a salted SHA-256 of the key.
KDF_SCHEMES = {"v1": {"n": 2**14, "r": 8, "p": 1}, "v2": {"n": 2**17, "r": 8, "p": 1}}
KDF_NEW = "v2"

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


def set_prompt(prompt: PassphrasePrompt | None) -> None:
    """How to ask for a passphrase when one is needed and none is set (the CLI's getpass)."""
    global _prompt
    _prompt = prompt


class StoreKey:
    """One store's key: encrypts text and blobs, and fingerprints PII without revealing it."""

    def __init__(self, key: bytes, source: str, scheme: str = KDF_NEW):
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._aead = AESGCM(key)
        self._mac_key = mac_key(key, scheme)
        self.source = source                         # "keychain" or "passphrase"

    def encrypt_blob(self, data: bytes) -> bytes:
        nonce = secrets.token_bytes(12)
        return BLOB_PREFIX + nonce + self._aead.encrypt(nonce, data, None)

    def decrypt_blob(self, data: bytes) -> bytes:
        if not data.startswith(BLOB_PREFIX):
            return data
        from cryptography.exceptions import InvalidTag

        raw = data[len(BLOB_PREFIX):]
        try:
            return self._aead.decrypt(raw[:12], raw[12:], None)
        except InvalidTag:
            raise StoreError("An encrypted value in the chunk store does not decrypt with this key "
                             "(wrong passphrase, or the data was damaged).") from None

    def encrypt_text(self, text: str) -> str:
        return PREFIX + base64.b64encode(self.encrypt_blob(text.encode("utf-8"))[len(BLOB_PREFIX):]).decode()

    def decrypt_text(self, text: str) -> str:
        if not text.startswith(PREFIX):
            return text
        return self.decrypt_blob(BLOB_PREFIX + base64.b64decode(text[len(PREFIX):])).decode("utf-8")

    def fingerprint(self, data: str) -> str:
        """Keyed hash (HMAC-SHA256): a plain hash of a phone number could be brute-forced."""
        return hmac.new(self._mac_key, data.encode("utf-8"), hashlib.sha256).hexdigest()


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


def keychain_available() -> bool:
    try:
        import keyring
        from keyring.backends import fail

        return not isinstance(keyring.get_keyring(), fail.Keyring)
    except Exception:  # noqa: BLE001 - any keyring trouble means "no keychain"
        return False


def _passphrase_key(salt: bytes, scheme: str, new: bool) -> tuple[bytes | None, bool]:
    """(key, typed): from CHUNKWISE_PASSPHRASE, a store unlocked before in this process, or a typed
    passphrase (the dialog's, or the command line's prompt); (None, False) when there is none."""
    env = os.environ.get("CHUNKWISE_PASSPHRASE")
    if env:
        return _environment_key(env, salt, scheme), False
    global _passphrase
    with _lock:
        if (salt, scheme) in _unlocked:
            return _unlocked[(salt, scheme)], False
        # A typed passphrase serves one opening: kept as the store's key if it opens it
        # (_keep_unlocked), and never left to key the next new store if it was mistyped.
        typed, _passphrase = _passphrase, None
    typed = typed or (_prompt(new) if _prompt is not None else None)
    return (derive(typed, salt, scheme), True) if typed else (None, False)


def _keep_unlocked(salt: bytes, scheme: str, raw: bytes) -> None:
    """The typed passphrase opened this store: keep its key (the passphrase is gone already)."""
    with _lock:
        _unlocked[(salt, scheme)] = raw


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
