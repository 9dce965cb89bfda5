"""Chunkwise engine: CD-LM decoding on llama.cpp with a personal chunk store.

The few names a caller needs::

    from chunkwise.core import Engine, GenerationRequest, ChunkStore, ChunkwiseError
"""
from .decoding import Stats
from .pieces import Piece
from .engine import Completion, Engine, GenerationRequest, Span
from .errors import Cancelled, ChunkwiseError, ImportFormatError, ModelError, StoreError
from .paths import bundled_model_path, default_db_path
from .store import PII_MASK, ChunkStore

__all__ = [
    "Cancelled", "ChunkStore", "ChunkwiseError", "Completion", "Engine", "GenerationRequest", "ImportFormatError",
    "ModelError", "PII_MASK", "Piece", "Span", "Stats", "StoreError", "bundled_model_path", "default_db_path",
]
