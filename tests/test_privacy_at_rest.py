"""Nothing learned from the user's writing is readable on disk without the key (issue 12).

A corpus with distinctive strings, numbers and rare words is learned as the editor's
Tools → Learn does (mined chunks with kNN rows), a value typed by hand is learned in
place, and then the raw bytes of every file Chunkwise wrote (database, log, index
manifest and data files, settings folders) are searched for each string, for the token
ids as the store keeps them, and for the hidden-state vectors as stored and as indexed.
"""
from pathlib import Path

import numpy as np

from chunkwise.core.corpus import Document
from chunkwise.core.learning import mine
from chunkwise.core.store import ChunkStore

PHONE = "+44 7700 900417"
EMAILS = [
    "Hi Oriel,\n\nThe Quillfeather survey for plot 4471-9932 is booked for Thursday. Bring the "
    "zanzibarine gauge and the brass theodolite. I look forward to hearing from you.\n\nWarm wishes,\nTamsin",
    "Dear Oriel,\n\nThe Quillfeather survey moved to Friday; plot 4471-9932 stays closed until then. "
    "The zanzibarine gauge is in the blue case. I look forward to hearing from you.\n\nWarm wishes,\nTamsin",
    "Hello Bram,\n\nPlease send the Quillfeather invoice for plot 4471-9932 to the office. The zanzibarine "
    "gauge needs calibrating. I look forward to hearing from you.\n\nWarm wishes,\nTamsin",
]
SECRETS = ["Quillfeather", "4471-9932", "zanzibarine", "theodolite", "Tamsin", "Oriel", PHONE,
           "Warm wishes", "look forward to hearing"]


def holds_vector(data: bytes, vector: np.ndarray, width: int = 8, tol: float = 1e-4) -> bool:
    """Whether *data* holds the first *width* entries of *vector* as float32, to within *tol* (an
    index computes its copy in another order of operations: the last bits differ)."""
    head = vector[:width].astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):      # random bytes read as floats: NaN, inf
        return any(_holds_at(data, head, offset, width, tol) for offset in range(4))


def _holds_at(data: bytes, head: np.ndarray, offset: int, width: int, tol: float) -> bool:
    values = np.frombuffer(data, np.float32, (len(data) - offset) // 4, offset)
    for start in np.flatnonzero(np.abs(values[:len(values) - width] - head[0]) < tol):
        if np.all(np.abs(values[start:start + width] - head) < tol):
            return True
    return False


def written_files(root: Path, corpus: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and corpus not in p.parents]


def test_nothing_learned_is_readable_in_any_file_chunkwise_wrote(make_engine, tmp_path):
    corpus = tmp_path / "corpus"           # the user's own files: not Chunkwise's to encrypt
    corpus.mkdir()
    engine = make_engine(store=ChunkStore(tmp_path / "user-data" / "chunks.db"))
    try:
        engine.store.add_chunk(PHONE, "pii", ["You can reach me on"], label="phone")
        engine.refresh()
        result = mine(engine, [Document(f"e{i}", t) for i, t in enumerate(EMAILS)], gamma=0.5, knn=True)
        assert result.new_chunks > 0 and result.knn_rows > 100
        assert engine.learn_typed(f"Tamsin here. For the survey, ring me direct on {PHONE}")
        engine.refresh()
        mined = [c for c in engine.store.list_chunks() if c.kind not in ("pii", "snippet")]
        texts = SECRETS + [c.text for c in mined] + [x.text for c in mined for x in c.contexts]
        rows = engine.store.valid_encodings(engine.model_id)
        token_ids = [np.asarray(r.chunk_tokens, np.int32).tobytes() for r in rows if len(r.chunk_tokens) >= 2]
        stored = engine.store.encoding_vectors([r.label for r in rows])
        keys = engine.store.knn_data(engine.model_id)[0]
        vectors = [stored[0].astype(np.float16).tobytes(), keys[0].astype(np.float16).tobytes()]
        indexed = engine.matcher.stats.transform(stored[:1])[0]
        knn_key = engine.matcher.stats.transform(keys[:1])[0]             # as the kNN-LM's kept graph holds it
        floats = [stored[0], indexed / np.linalg.norm(indexed), knn_key]  # as read, and as hnswlib keeps them
        assert engine.index_path.exists() and engine.knn_index_path.exists()
    finally:
        engine.store.close()
    files = written_files(tmp_path, corpus)
    assert {p.name for p in files} >= {"chunks.db", engine.index_path.name, engine.knn_index_path.name}
    assert any(p.name.endswith(".bin") for p in files)             # the index's data file
    everything = {p: p.read_bytes() for p in files}
    for name, data in everything.items():
        for text in texts:
            for form in {text, text.strip(), text.lower()}:
                assert form.encode("utf-8") not in data, (name, form)
        for ids in token_ids:
            assert ids not in data, (name, "token ids")
        for vector in vectors:
            assert vector[:32] not in data, (name, "a hidden-state vector")
        for vector in floats:
            assert not holds_vector(data, vector), (name, "a hidden-state vector")
