"""User-facing errors.

Everything the engine raises on bad input is a :class:`ChunkwiseError` whose
message is written for the person at the keyboard: it names the problem and
what to do.  The command line and the editor show the message, never a
traceback.
"""


class ChunkwiseError(Exception):
    """A problem the user can act on (bad file, bad input, locked store...)."""


class ModelError(ChunkwiseError):
    """The model file is missing, not GGUF, or llama.cpp cannot load it."""


class StoreError(ChunkwiseError):
    """The chunk store is unreadable, corrupted, locked, or given bad data."""


class ImportFormatError(StoreError):
    """An import file is malformed; the message names the line."""


class Cancelled(ChunkwiseError):
    """A long job stopped because the user (or closing the window) asked it to; nothing half-done is kept."""
