"""An HNSW index (hnswlib, cosine) over context keys, persisted beside the
database and kept in agreement with it.

Labels are the ``encodings`` row ids of the store.  The index is a
versioned pair: a data file with a fresh name (``<path>.<generation>.bin``,
hnswlib's format) and a manifest at ``<path>`` (JSON) that names it, its
size, and for every label the ``source_hash`` of the encoding it was built
from.  Saving writes the data file first and then replaces the manifest,
the one commit point; older data files are removed after it.  A crash at
any moment leaves a manifest and the very file it was written with (never a
manifest beside another save's data), so a torn save cannot be loaded.

On load the manifest is compared with the database: labels that vanished
are marked deleted, new or changed ones are (re)inserted, and a manifest
that is missing, unreadable, from another model, or whose data file is
missing or of another size makes the index rebuild from the database.

>>> import numpy as np
>>> idx = VectorIndex(dim=4)
>>> idx.upsert([7], np.eye(4, dtype=np.float32)[:1], ["h"])
>>> idx.query(np.array([1, 0, 0, 0], dtype=np.float32), k=1)[0].tolist()
[7]
"""
from __future__ import annotations

import glob
import io
import json
import os
import secrets
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

MANIFEST_FORMAT = 2     # 1: the index at <path> and a sidecar at <path>.json (torn by a crash between them)
# With the store's key (every file store), both files are sealed (core/crypto.StoreKey.seal_file): the
# data file holds hnswlib's state as .npz, the manifest its JSON.


class VectorIndex:
    """hnswlib wrapper: cosine space, labels = encoding ids, growable."""

    def __init__(self, dim: int, capacity: int = 1024, ef: int = 32, m: int = 16):
        import hnswlib

        self.dim = dim
        self._ef = ef
        self._index = hnswlib.Index(space="cosine", dim=dim)
        self._index.init_index(max_elements=max(16, capacity), ef_construction=128, M=m)
        self._index.set_ef(ef)
        self.hashes: dict[int, str] = {}  # live label -> source hash

    def __len__(self) -> int:
        return len(self.hashes)

    # ------------------------------------------------------------ updates

    def _reserve(self, extra: int) -> None:
        need = self._index.get_current_count() + extra
        cap = self._index.get_max_elements()
        if need > cap:
            self._index.resize_index(max(need, cap * 2))

    def upsert(self, labels: Sequence[int], vectors: np.ndarray, hashes: Sequence[str]) -> None:
        """Insert or replace vectors (shape ``(n, dim)``) under *labels*."""
        if len(labels) == 0:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(labels), self.dim)
        labels = np.asarray(labels, dtype=np.int64)
        fresh = [i for i, lab in enumerate(labels.tolist()) if lab not in self.hashes]
        self._reserve(len(fresh))
        # hnswlib updates a label that exists in place, reviving it if deleted.
        # Bulk builds use every core; single updates stay on the calling thread.
        self._index.add_items(vectors, labels, num_threads=-1 if len(labels) >= 1000 else 1)
        for lab, h in zip(labels.tolist(), hashes):
            self.hashes[int(lab)] = h

    @property
    def dead(self) -> int:
        """Deleted elements still taking space in the graph."""
        return self._index.get_current_count() - len(self.hashes)

    def remove(self, labels: Sequence[int]) -> None:
        for lab in labels:
            if int(lab) in self.hashes:
                self._index.mark_deleted(int(lab))
                del self.hashes[int(lab)]

    # ------------------------------------------------------------ queries

    def query(self, vector: np.ndarray, k: int = 8) -> tuple[np.ndarray, np.ndarray]:
        """(labels, cosine similarities) of the *k* nearest live keys, best first."""
        n = len(self.hashes)
        if n == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        k = min(k, n)
        if self._ef < k:
            self._index.set_ef(k)
        labels, dist = self._index.knn_query(np.asarray(vector, dtype=np.float32).reshape(1, -1), k=k,
                                             num_threads=1)
        return labels[0].astype(np.int64), (1.0 - dist[0]).astype(np.float32)

    # ------------------------------------------------------------ persistence

    def save(self, path: str | os.PathLike, model_identity: str, key=None) -> None:
        """Write a new data file, then the manifest at *path* that names it (the commit point).

        With the store's *key* (core/crypto.StoreKey) both are sealed: the vectors are hidden
        states of the user's text, and the manifest's hashes fingerprint it."""
        from .paths import atomic_write, fsync_file

        path = Path(path)
        data = path.with_name(f"{path.name}.{secrets.token_hex(6)}.bin")
        # Not atomic_replace: a new name, not a replacement; the manifest (atomic_write) is the commit
        # point.  Created owner-only before anything is written into it; no manifest names it until it
        # is complete, and a data file a crash cut short is removed by the next save.
        os.close(os.open(data, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        try:
            if key is None:
                self._index.save_index(str(data))
            else:
                with open(data, "wb") as fh:
                    fh.write(key.seal_file(graph_bytes(self._index), _purpose("data", model_identity, data.name)))
            fsync_file(data)                      # on disk before a manifest can name it
        except BaseException:
            data.unlink(missing_ok=True)
            raise
        manifest = json.dumps({"format": MANIFEST_FORMAT, "model": model_identity, "dim": self.dim,
                               "file": data.name, "size": data.stat().st_size,
                               "labels": {str(k): v for k, v in self.hashes.items()}})
        atomic_write(path, manifest if key is None else
                     key.seal_file(manifest.encode("utf-8"), _purpose("manifest", model_identity)))
        for old in [*data_files(path), Path(str(path) + ".json")]:
            if old != data:
                old.unlink(missing_ok=True)       # earlier saves, and format 1's sidecar

    @classmethod
    def load_or_build(cls, path: str | os.PathLike | None, model_identity: str, dim: int,
                      wanted: Mapping[int, str], fetch: Callable[[Sequence[int]], np.ndarray],
                      progress: Callable[[int, int], None] | None = None, key=None) -> tuple["VectorIndex", str]:
        """Open the persisted index, repaired to hold exactly *wanted* (label -> hash).

        *fetch(labels)* returns their vectors from the database; *key* opens a sealed index (one
        saved plain, or with another key, is rebuilt).  Returns the index and what happened:
        ``"loaded"``, ``"repaired"`` or ``"rebuilt"``.
        """
        index, status = None, "rebuilt"
        if path is not None and Path(path).exists():
            index = cls._try_load(Path(path), model_identity, dim, key)
            status = "loaded" if index is not None else "rebuilt"
        if index is not None and index.dead > max(1000, len(wanted) // 2):
            index, status = None, "rebuilt"   # mostly deleted elements: compact by rebuilding
        if index is None:
            index = cls(dim, capacity=len(wanted) + 16)
        stale = [lab for lab, h in index.hashes.items() if wanted.get(lab) != h]
        missing = [lab for lab, h in wanted.items() if index.hashes.get(lab) != h]
        index.remove(stale)
        total, done = len(missing), 0
        for start in range(0, total, 4096):
            part = missing[start:start + 4096]
            index.upsert(part, fetch(part), [wanted[lab] for lab in part])
            done += len(part)
            if progress:
                progress(done, total)
        if status == "loaded" and (stale or missing):
            status = "repaired"
        return index, status

    @classmethod
    def _try_load(cls, path: Path, model_identity: str, dim: int, key=None) -> "VectorIndex | None":
        import hnswlib

        from .errors import StoreError

        try:
            raw = path.read_bytes()
            if key is not None:
                raw = key.open_file(raw, _purpose("manifest", model_identity))
            manifest = json.loads(raw.decode("utf-8"))
            if (manifest.get("format") != MANIFEST_FORMAT or manifest.get("model") != model_identity
                    or manifest.get("dim") != dim):
                return None
            data = path.with_name(str(manifest["file"]))
            if data.parent != path.parent or data not in data_files(path) or data.stat().st_size != manifest["size"]:
                return None
            hashes = {int(k): str(v) for k, v in manifest["labels"].items()}
            obj = cls.__new__(cls)
            obj.dim, obj._ef = dim, 32
            if key is None:
                obj._index = hnswlib.Index(space="cosine", dim=dim)
                obj._index.load_index(str(data), max_elements=max(16, len(hashes) + 16))
            else:
                obj._index = graph_from(key.open_file(data.read_bytes(),
                                                           _purpose("data", model_identity, data.name)))
                if obj._index.dim != dim or obj._index.space != "cosine":
                    return None
                if obj._index.get_max_elements() < len(hashes) + 16:
                    obj._index.resize_index(len(hashes) + 16)
            obj._index.set_ef(obj._ef)
            present = set(int(x) for x in obj._index.get_ids_list())
            if not set(hashes) <= present:
                return None
            # Labels in the file but not in the manifest were deleted before the save: keep them out.
            for lab in present - set(hashes):
                try:
                    obj._index.mark_deleted(lab)
                except RuntimeError:
                    pass
            obj.hashes = hashes
            return obj
        except (OSError, ValueError, KeyError, RuntimeError, TypeError, UnicodeDecodeError, StoreError):
            return None


def graph_bytes(graph) -> bytes:
    """A whole hnswlib graph as bytes (hnswlib's own state, written as .npz: no pickle to load back)."""
    buffer = io.BytesIO()
    np.savez(buffer, **{k: np.asarray(v) for k, v in graph.__getstate__()[0].items()})
    return buffer.getvalue()


def graph_from(data: bytes):
    """The hnswlib graph :func:`graph_bytes` wrote.  Raises ValueError/KeyError/RuntimeError on damage."""
    import hnswlib

    with np.load(io.BytesIO(data), allow_pickle=False) as saved:
        state = {k: (saved[k] if saved[k].ndim else saved[k].item()) for k in saved.files}
    state["space"] = str(state["space"])
    graph = hnswlib.Index.__new__(hnswlib.Index)
    graph.__setstate__((state,))
    return graph


def _purpose(*parts: str) -> str:
    """What a sealed index file is for (its associated data): a file cannot stand in for another."""
    return ":".join(("hnsw", *parts))


def data_files(path: str | os.PathLike) -> list[Path]:
    """The data files saved under the manifest at *path* (one, but for a save a crash cut short)."""
    path = Path(path)
    return sorted(path.parent.glob(f"{glob.escape(path.name)}.*.bin"))


def index_files(path: str | os.PathLike) -> list[Path]:
    """Every file of the index at *path* that exists: the manifest and its data files."""
    path = Path(path)
    return [p for p in (path, *data_files(path)) if p.exists()]
