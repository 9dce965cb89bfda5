"""The store at rest: the whole file encrypted (SQLCipher) with a keychain key or a passphrase, PII
values sealed once more inside it; readable only in memory."""
import pytest

from chunkwise.core import crypto
from chunkwise.core.errors import StoreError
from chunkwise.core.store import ChunkStore, source_hash

PHONE = "(555) 867-5309"


def raw_bytes(path):
    data = path.read_bytes()
    for side in ("-wal", "-shm"):
        extra = path.with_name(path.name + side)
        if extra.exists():
            data += extra.read_bytes()
    return data


def older_store(path, chunks=()):
    """A store as Chunkwise wrote it before file encryption: plain SQLite, PII values sealed with the
    key its meta rows name (what ChunkStore.__init__ did then), *chunks* added after."""
    store = ChunkStore(path, encrypted=False)
    store.key = store._open_key()
    store._encrypt_plain_pii()
    for text, kind, contexts in chunks:
        store.add_chunk(text, kind, contexts)
    store.close()
    assert path.read_bytes().startswith(b"SQLite format 3")


def test_everything_is_encrypted_on_disk_and_plain_in_memory(tmp_path):
    path = tmp_path / "chunks.db"
    with ChunkStore(path) as store:
        store.add_chunk(PHONE, "pii", ["Call me at"], label="phone")
        store.add_chunk("Kind regards,", "snippet", ["Thanks again."])
        assert "passphrase" in store.encryption
        assert {c.text for c in store.list_chunks()} == {PHONE, "Kind regards,"}
    assert PHONE.encode() not in raw_bytes(path)
    assert b"Kind regards," not in raw_bytes(path) and b"Thanks again" not in raw_bytes(path)
    assert b"SQLite format" not in raw_bytes(path)[:16]
    with ChunkStore(path) as store:
        assert store.get_chunk(1).text == PHONE
        assert [c.text for c in store.list_chunks(search="regards")] == ["Kind regards,"]
        assert [c.text for c in store.list_chunks(search="867-53")] == [PHONE]    # a sealed value, found
        assert store.list_chunks(search="867-54") == []


def test_derived_data_does_not_reveal_pii(make_engine, tmp_path):
    path = tmp_path / "chunks.db"
    engine = make_engine(store=ChunkStore(path))
    engine.store.add_chunk(PHONE, "pii", ["Call me at"], label="phone")
    engine.refresh()
    toks, h = engine.store.db.execute("SELECT chunk_tokens, source_hash FROM encodings").fetchone()
    assert toks.startswith(crypto.PLACED_PREFIX)               # token ids would spell the number
    assert h != source_hash("Call me at", PHONE)               # a plain hash could be brute-forced
    assert engine.matcher._tokens                             # matching has them, in memory
    engine.store.close()
    assert PHONE.encode() not in raw_bytes(path)


def test_wrong_or_missing_passphrase(tmp_path, monkeypatch):
    path = tmp_path / "chunks.db"
    with ChunkStore(path) as store:
        store.add_chunk(PHONE, "pii", ["Call me at"], label="phone")
    monkeypatch.setenv("CHUNKWISE_PASSPHRASE", "not the passphrase")
    with pytest.raises(StoreError, match="Wrong passphrase"):
        ChunkStore(path)
    monkeypatch.delenv("CHUNKWISE_PASSPHRASE")
    with pytest.raises(StoreError, match="CHUNKWISE_PASSPHRASE"):
        ChunkStore(path)
    crypto.set_passphrase("correct horse battery staple")      # what the editor's dialog does
    try:
        with ChunkStore(path) as store:
            assert store.get_chunk(1).text == PHONE
    finally:
        crypto.set_passphrase(None)


def test_a_typed_passphrase_is_dropped_once_it_has_opened_the_store(tmp_path, monkeypatch):
    """The dialog's passphrase is not kept: the store's key is, so the library reopens without it;
    with the passphrase gone, a new store cannot be keyed without asking again."""
    secret = "a passphrase typed into the dialog"
    monkeypatch.delenv("CHUNKWISE_PASSPHRASE", raising=False)
    monkeypatch.setattr(crypto, "keychain_available", lambda: False)
    crypto.set_passphrase(secret)
    try:
        with ChunkStore(tmp_path / "mine.db") as store:
            store.add_chunk(PHONE, "pii", ["Call me at"], label="phone")
        assert crypto._passphrase is None
        assert not any(secret in repr(k) for k in crypto._derived)
        with ChunkStore(tmp_path / "mine.db") as store:                # the library dialog's second open
            assert store.get_chunk(1).text == PHONE
        with pytest.raises(StoreError, match="CHUNKWISE_PASSPHRASE"):
            ChunkStore(tmp_path / "other.db")
    finally:
        crypto.set_passphrase(None)


def test_a_mistyped_passphrase_is_dropped_when_it_fails(tmp_path, monkeypatch):
    """A passphrase that failed to open the library must not silently key the next new store
    (the user would not know that store's passphrase): the editor asks again instead."""
    monkeypatch.setenv("CHUNKWISE_PASSPHRASE", "the right one")
    with ChunkStore(tmp_path / "mine.db") as store:
        store.add_chunk(PHONE, "pii", ["Call me at"], label="phone")
    monkeypatch.delenv("CHUNKWISE_PASSPHRASE")
    monkeypatch.setattr(crypto, "keychain_available", lambda: False)
    crypto.set_passphrase("the rihgt one")                      # a typo in the dialog
    try:
        with pytest.raises(StoreError, match="Wrong passphrase"):
            ChunkStore(tmp_path / "mine.db")
        with pytest.raises(StoreError, match="CHUNKWISE_PASSPHRASE"):
            ChunkStore(tmp_path / "new.db")                    # not keyed with the typo
    finally:
        crypto.set_passphrase(None)


class MemoryKeyring:
    """A stand-in for the OS keychain (no keychain exists on a test machine)."""

    def __init__(self):
        import keyring.backend

        store = self.store = {}

        class Backend(keyring.backend.KeyringBackend):
            priority = 1

            def get_password(self, service, username):
                return store.get((service, username))

            def set_password(self, service, username, password):
                store[(service, username)] = password

            def delete_password(self, service, username):
                store.pop((service, username), None)

        self.backend = Backend()


@pytest.fixture
def keychain(monkeypatch):
    import keyring

    monkeypatch.delenv("CHUNKWISE_PASSPHRASE")
    fake = MemoryKeyring()
    previous = keyring.get_keyring()
    keyring.set_keyring(fake.backend)
    yield fake
    keyring.set_keyring(previous)


def test_keychain_holds_the_key_when_there_is_one(tmp_path, keychain, monkeypatch):
    path = tmp_path / "chunks.db"
    with ChunkStore(path) as store:
        store.add_chunk(PHONE, "pii", ["Call me at"], label="phone")
        assert "keychain" in store.encryption
    assert len(keychain.store) == 1 and PHONE.encode() not in raw_bytes(path)
    with ChunkStore(path) as store:
        assert store.get_chunk(1).text == PHONE
    keychain.store.clear()                                     # the keychain entry is gone
    with pytest.raises(StoreError, match="keychain"):
        ChunkStore(path)
    monkeypatch.setenv("CHUNKWISE_PASSPHRASE", "a passphrase it never had")
    with pytest.raises(StoreError, match="keychain does not have it"):  # not only "wrong passphrase"
        ChunkStore(path)


def test_an_older_keychain_store_is_encrypted_and_found_by_its_file(tmp_path, keychain):
    """Bug caught: a keychain store from before file encryption whose key, saved under a random id
    that only the (now encrypted) meta rows name, is not found again: the user locked out."""
    path = tmp_path / "chunks.db"
    older_store(path, [(PHONE, "pii", ["Call me at"])])
    with ChunkStore(path) as store:
        assert store.get_chunk(1).text == PHONE and "keychain" in store.encryption
    assert b"Call me at" not in raw_bytes(path)
    with ChunkStore(path) as store:
        assert store.get_chunk(1).text == PHONE


def test_an_older_plain_store_is_encrypted_on_open_and_keeps_its_passphrase(tmp_path, monkeypatch):
    """Bugs caught: a store from before file encryption left readable on disk, or encrypted with a
    key its own passphrase no longer opens; its plain PII (schema 3) left unsealed."""
    path = tmp_path / "chunks.db"
    older_store(path, [(PHONE, "pii", ["Call me at"]), ("Kind regards,", "snippet", ["Thanks again."])])
    with ChunkStore(path, encrypted=False) as plain:                # schema-3 PII: a plain value
        plain.db.conn.execute("INSERT INTO chunks (text, kind, label, use_count) VALUES (?, 'pii', 'fax', 0)",
                              ("(555) 000-1111",))
        plain.db.conn.commit()
    assert b"Kind regards," in raw_bytes(path)
    with ChunkStore(path) as store:
        assert {c.text for c in store.list_chunks()} == {PHONE, "Kind regards,", "(555) 000-1111"}
        inside = [t for (t,) in store.db.execute("SELECT text FROM chunks WHERE kind='pii'")]
        assert len(inside) == 2 and all(t.startswith(crypto.PLACED) for t in inside)   # sealed inside too
    assert b"Kind regards," not in raw_bytes(path) and b"(555) 000-1111" not in raw_bytes(path)
    assert not list(tmp_path.glob(".*encrypting*"))
    monkeypatch.setenv("CHUNKWISE_PASSPHRASE", "a wrong one")
    with pytest.raises(StoreError, match="Wrong passphrase"):
        ChunkStore(path)
    monkeypatch.setenv("CHUNKWISE_PASSPHRASE", "correct horse battery staple")
    with ChunkStore(path) as store:
        assert store.get_chunk(1).text == PHONE


def test_deleted_pii_leaves_no_trace_in_the_file(tmp_path):
    path = tmp_path / "chunks.db"
    with ChunkStore(path) as store:
        cid = store.add_chunk("Kind regards, Dana Whitfield", "snippet", ["Thanks again."])
        store.remove_chunk(cid)
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert b"Dana Whitfield" not in raw_bytes(path)            # secure_delete zeroes freed pages


def test_new_stores_use_the_slow_kdf_and_older_stores_still_open(tmp_path, monkeypatch):
    """Bugs caught: a new store keyed with the fast N = 2^14 scrypt (cheap to brute-force), and an
    upgrade that locks users out of stores made with the earlier scheme."""
    monkeypatch.setenv("CHUNKWISE_PASSPHRASE", "horse staple")
    with ChunkStore(tmp_path / "new.db") as store:
        store.add_chunk("(555) 123-4567", "pii", ["Call me at"])
    with ChunkStore(tmp_path / "new.db") as store:
        meta = dict(store.db.execute("SELECT key, value FROM meta").fetchall())
    assert meta["key_kdf"] == crypto.KDF_NEW and crypto.KDF_SCHEMES[meta["key_kdf"]]["n"] >= 2**17

    salt = bytes(range(16))                       # a store made before key_kdf existed (scheme v1)
    old = crypto.StoreKey(crypto.derive("horse staple", salt, "v1"), "passphrase", "v1")
    saved = {}
    old_meta = {"store_id": "old", "key_source": "passphrase", "key_salt": "AAECAwQFBgcICQoLDA0ODw==",
                "key_check": old.encrypt_text(crypto.CHECK_PLAINTEXT)}
    key = crypto.open_key(old_meta, saved.update)
    assert key.decrypt_text(old.encrypt_text("(555) 123-4567")) == "(555) 123-4567"
    assert key.fingerprint("x") == old.fingerprint("x") and not saved       # its fingerprints still match
    assert crypto.mac_key(bytes(32), "v2") != crypto.mac_key(bytes(32), "v1")
    with pytest.raises(StoreError, match="newer Chunkwise"):
        crypto.open_key({**old_meta, "key_kdf": "v9"}, saved.update)


def test_sealed_values_open_only_in_their_own_row(make_engine, tmp_path):
    """Bug caught: a sealed PII value or token blob copied into another row opened there, so someone
    able to write the file could swap the user's phone and email unnoticed."""
    path = tmp_path / "chunks.db"
    engine = make_engine(store=ChunkStore(path))
    store = engine.store
    phone = store.add_chunk(PHONE, "pii", ["Call me at"], label="phone")
    email = store.add_chunk("dana@example.org", "pii", ["Write to me at"], label="email")
    engine.refresh()
    conn = store.db.conn
    texts = dict(conn.execute("SELECT id, text FROM chunks").fetchall())
    assert all(t.startswith(crypto.PLACED) for t in texts.values())
    conn.execute("UPDATE chunks SET text=? WHERE id=?", (texts[email], phone))
    conn.commit()
    with pytest.raises(StoreError, match="where it is"):
        store.get_chunk(phone)
    conn.execute("UPDATE chunks SET text=? WHERE id=?", (texts[phone], phone))
    (a, ta), (b, tb) = conn.execute("SELECT id, chunk_tokens FROM encodings ORDER BY id LIMIT 2").fetchall()
    conn.execute("UPDATE encodings SET chunk_tokens=? WHERE id=?", (tb, a))
    conn.commit()
    with pytest.raises(StoreError, match="where it is"):
        store.valid_encodings(engine.model_id)


def test_values_sealed_before_places_were_bound_are_resealed_on_open(tmp_path):
    """Bug caught: an upgrade that leaves older (unbound, enc1) values as they were, or loses them."""
    path = tmp_path / "chunks.db"
    with ChunkStore(path) as store:
        cid = store.add_chunk(PHONE, "pii", ["Call me at"], label="phone")
        store.db.conn.execute("UPDATE chunks SET text=? WHERE id=?", (store.key.encrypt_text(PHONE), cid))
        store.db.conn.execute("DELETE FROM meta WHERE key='tokens_placed'")
        store.db.conn.commit()
    with ChunkStore(path) as store:
        (text,) = store.db.execute("SELECT text FROM chunks").fetchone()
        assert text.startswith(crypto.PLACED) and store.get_chunk(cid).text == PHONE


def test_a_store_keyed_with_the_older_scrypt_is_rekeyed_on_open(tmp_path, monkeypatch, make_engine):
    """Issue 12. Bugs caught: a store made with the fast N = 2^14 scrypt staying cheap to guess after
    the upgrade; re-keying that loses or garbles its sealed values, or leaves a stray copy."""
    from chunkwise.core import database

    path = tmp_path / "chunks.db"
    monkeypatch.setenv("CHUNKWISE_PASSPHRASE", "horse staple")
    monkeypatch.setattr(crypto, "KDF_NEW", "v1")                 # made by an earlier Chunkwise
    engine = make_engine(store=ChunkStore(path))
    phone = engine.store.add_chunk(PHONE, "pii", ["Call me at"], label="phone")
    engine.store.add_chunk("Kind regards, Dana", "snippet", ["Thanks again."])
    engine.refresh()                                              # token ids sealed inside, an index file
    tokens = [e.chunk_tokens for e in engine.store.valid_encodings(engine.model_id)]
    engine.store.close()
    monkeypatch.setattr(crypto, "KDF_NEW", "v2")
    salt = raw_bytes(path)[:16]
    older, newer = (crypto.derive("horse staple", salt, scheme) for scheme in ("v1", "v2"))
    old_key = crypto.StoreKey(older, "passphrase", "v1")
    database.connect(str(path), older).close()                   # the fast scheme opens it ...
    with ChunkStore(path) as store:
        assert store.get_chunk(phone).text == PHONE
    with pytest.raises(database.WrongKey):                        # ... and no longer does
        database.connect(str(path), older)
    database.connect(str(path), newer).close()
    assert not list(tmp_path.glob(".*encrypting*"))
    with ChunkStore(path) as store:                               # and it opens again, values intact
        assert {c.text for c in store.list_chunks()} == {PHONE, "Kind regards, Dana"}
        assert [c.text for c in store.list_chunks(search=PHONE[-4:])] == [PHONE]
        assert [e.chunk_tokens for e in store.valid_encodings(engine.model_id)] == tokens
    assert not list(tmp_path.glob("chunks.db.*.hnsw*"))          # sealed with the old key: gone, rebuilt
    engine.use_store(ChunkStore(path))
    assert engine.matcher.chunk_info(phone)["text"] == PHONE and len(engine.matcher) == 2
    assert list(tmp_path.glob("chunks.db.*.hnsw*"))
    with pytest.raises(StoreError):                               # the new index opens only with the file's key
        old_key.open_file(next(tmp_path.glob("chunks.db.*.hnsw")).read_bytes(), "anything")
    engine.store.close()
    monkeypatch.setenv("CHUNKWISE_PASSPHRASE", "a wrong one")
    with pytest.raises(StoreError, match="Wrong passphrase"):      # (with a keychain, it names that too)
        ChunkStore(path)
