"""Asking for the chunk store's passphrase: once at start, and again when the user unlocks a locked library.

Without a system keychain the personal information in the store is sealed with a
passphrase (core/crypto.py).  Declining leaves the library locked; the editor then
suggests from the model alone and Tools → Unlock library… asks again, without a restart.
"""
from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtWidgets import QInputDialog, QLineEdit, QMessageBox

from chunkwise.core import crypto


def ask_passphrase(parent=None, unlock: bool = False, store: str | os.PathLike | None = None) -> bool:
    """Ask for the passphrase and keep it for this session; False: the user declined.

    At start (*unlock* False) nothing is asked where a keychain or CHUNKWISE_PASSPHRASE
    provides the key.  To unlock, the user is always asked: the earlier answer was missing or wrong.
    A *store* file that does not exist yet takes a new passphrase: asked twice, as password
    managers do, since a mistyped one would lock the user out of what they store next.
    """
    if not unlock and (os.environ.get("CHUNKWISE_PASSPHRASE") or crypto.keychain_available()):
        return True
    title = "Chunkwise: unlock your chunk library" if unlock else "Chunkwise: unlock your chunk store"
    # Missing or empty: a store that failed to open on its first day is an empty file, still new.
    new = store is not None and (not Path(store).exists() or Path(store).stat().st_size == 0)

    def ask(prompt: str) -> str | None:
        text, ok = QInputDialog.getText(parent, title, prompt, QLineEdit.Password)
        return text if ok else None

    def differ() -> bool:
        QMessageBox.warning(parent, title, f"{crypto.DIFFERENT} Choose one and type it twice.")
        return True

    text = crypto.choose_passphrase(ask, new, differ)
    if not text:
        return False
    if unlock:
        os.environ.pop("CHUNKWISE_PASSPHRASE", None)   # read before the typed one: a wrong one would win again
    crypto.set_passphrase(text)
    return True
