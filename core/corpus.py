"""Reading a user's writing for mining: text, Markdown, .eml, mbox, or a folder of them.

Every file is read whole before anything is mined, so a bad file stops the
run before the store is touched.

>>> docs = read_corpus([])                      # doctest: +SKIP
Traceback (most recent call last):
core.errors.ChunkwiseError: The corpus is empty: ...
"""
from __future__ import annotations

import email
import email.policy
import mailbox
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

from .errors import ChunkwiseError

TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".text"}
MAIL_SUFFIXES = {".eml"}
MBOX_SUFFIXES = {".mbox", ".mbx"}
KNOWN_SUFFIXES = TEXT_SUFFIXES | MAIL_SUFFIXES | MBOX_SUFFIXES
MAX_FILE_BYTES = 50 * 1024 * 1024


class CorpusError(ChunkwiseError):
    """A corpus file that cannot be used; names the file and the problem."""


@dataclass(frozen=True)
class Document:
    """One piece of writing to mine.

    ``prefix`` is text the model conditions on but that is not mined (the
    chat prompt of a generated answer); ``text`` is what chunks come from.
    """

    name: str
    text: str
    prefix: str = ""


def _decode(data: bytes, name: str) -> str:
    if b"\x00" in data[:65536]:
        raise CorpusError(f"{name} looks like a binary file (it contains NUL bytes); give text, .eml or mbox files.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{name} is not UTF-8 text (bad byte at offset {exc.start}); "
                          "save it as UTF-8 and try again.") from None


def _read_bytes(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise CorpusError(f"{path} is {size / 1e6:.0f} MB; files over {MAX_FILE_BYTES // 1_000_000} MB "
                              "are not mined (split it).")
        return path.read_bytes()
    except CorpusError:
        raise
    except OSError as exc:
        raise CorpusError(f"Cannot read {path}: {exc.strerror or exc}.") from None


# The languages mail-parser-reply knows reply and forward headers of ("On ... wrote:", "Am ... schrieb:").
REPLY_LANGUAGES = ("en", "de", "fr", "es", "it", "nl", "da", "sv", "pl", "cs", "ja", "ko", "zh")
# What a client leaves above a forwarded or quoted message once the parser has cut it away.
_LEFT_MARKERS = re.compile(r"^\s*(-{2,}\s*(original message|forwarded message)\s*-{2,}|begin forwarded message:)\s*$",
                           re.IGNORECASE)


@lru_cache(maxsize=1)
def _reply_parser():
    from mailparser_reply import EmailReplyParser

    return EmailReplyParser(languages=list(REPLY_LANGUAGES))


def own_words(text: str) -> str:
    r"""The writer's own part of a mail: quoted replies and forwarded messages left out.

    Those are other people's words and details (their phone numbers, their
    addresses), so they are not the user's to learn from.  mail-parser-reply
    (maintained, multilingual) finds where a quoted or forwarded message
    begins; lines quoted with ">" inside the reply go too.

    >>> own_words("Thursday works.\n\nOn Tue, 3 Mar 2026 at 10:12, Tom <t@x.org> wrote:\n> My number is 0777 123 4567.")
    'Thursday works.'
    """
    try:
        mine = _reply_parser().parse_reply(text)
    except (ValueError, IndexError, re.error):       # a parser failure keeps the text, minus quoted lines
        mine = text
    lines = [line for line in mine.splitlines() if not line.lstrip().startswith(">")]
    while lines and (not lines[-1].strip() or _LEFT_MARKERS.match(lines[-1])):
        lines.pop()
    return "\n".join(lines).strip()


def message_text(message: email.message.Message) -> str:
    """The plain-text body of a mail message, the writer's own words only (:func:`own_words`)."""
    if message.is_multipart():
        parts = [p for p in message.walk() if p.get_content_type() == "text/plain"
                 and not p.get_filename()]
    else:
        parts = [message] if message.get_content_type() in ("text/plain", "text") else []
    texts = []
    for part in parts:
        payload = part.get_payload(decode=True) or b""
        charset = part.get_content_charset() or "utf-8"
        try:
            texts.append(payload.decode(charset, errors="replace"))
        except LookupError:
            texts.append(payload.decode("utf-8", errors="replace"))
    return "\n\n".join(own_words(t.replace("\r\n", "\n")) for t in texts if t.strip())


def _read_eml(path: Path) -> list[Document]:
    data = _read_bytes(path)
    if b"\x00" in data[:65536]:
        raise CorpusError(f"{path} looks like a binary file (it contains NUL bytes).")
    message = email.message_from_bytes(data, policy=email.policy.compat32)
    text = message_text(message)
    return [Document(str(path), text)] if text.strip() else []


def _read_mbox(path: Path) -> list[Document]:
    data = _read_bytes(path)
    if b"\x00" in data[:65536]:
        raise CorpusError(f"{path} looks like a binary file (it contains NUL bytes).")
    if not data.startswith(b"From "):
        raise CorpusError(f"{path} is not an mbox file (it should start with a 'From ' line).")
    box = mailbox.mbox(str(path), create=False)
    docs = []
    try:
        for i, message in enumerate(box):
            text = message_text(message)
            if text.strip():
                docs.append(Document(f"{path}#{i + 1}", text))
    finally:
        box.close()
    return docs


def _read_file(path: Path) -> list[Document]:
    suffix = path.suffix.lower()
    if suffix in MAIL_SUFFIXES:
        return _read_eml(path)
    if suffix in MBOX_SUFFIXES:
        return _read_mbox(path)
    data = _read_bytes(path)
    if data.startswith(b"From ") and b"\nFrom: " in data[:4096] and suffix not in TEXT_SUFFIXES:
        return _read_mbox(path)
    text = own_words(_decode(data, str(path)).replace("\r\n", "\n"))
    return [Document(str(path), text)] if text.strip() else []


def _walk(folder: Path) -> Iterable[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            p = Path(root) / name
            if p.suffix.lower() in KNOWN_SUFFIXES and not name.startswith("."):
                yield p


def read_corpus(paths: Sequence[str | os.PathLike]) -> list[Document]:
    """All documents under *paths* (files or folders), or CorpusError naming the first bad one."""
    docs: list[Document] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise CorpusError(f"{path} does not exist.")
        if path.is_dir():
            for p in _walk(path):
                docs.extend(_read_file(p))
        else:
            docs.extend(_read_file(path))
    if not docs:
        shown = ", ".join(str(p) for p in paths) or "(no paths given)"
        raise CorpusError(f"The corpus is empty: no text found in {shown} "
                          f"(files read: {', '.join(sorted(KNOWN_SUFFIXES))}).")
    return docs


def read_prompts(path: str | os.PathLike) -> list[str]:
    """One prompt per non-empty line (lines starting with # are comments)."""
    text = _decode(_read_bytes(Path(path).expanduser()), str(path))
    prompts = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not prompts:
        raise CorpusError(f"{path} has no prompts (one per line).")
    return prompts
