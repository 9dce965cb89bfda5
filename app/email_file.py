"""Emails on disk: a .eml a mail client opens as a draft, and reading .eml or plain text back.

>>> msg = eml_message({"to": "ann@example.org", "subject": "", "body": "Hi Ann"}, from_address="me@example.org")
>>> msg["X-Unsent"], msg["Subject"] is None, msg["From"]
('1', True, 'me@example.org')
>>> read_email_bytes(bytes(msg), "mail.eml")["body"].strip()
'Hi Ann'
"""
from __future__ import annotations

import email.message
import email.policy
import email.utils
from email.parser import BytesParser
from pathlib import Path

MAX_BYTES = 5 * 1024 * 1024          # an email to continue writing, not a mailbox
EMAIL_SUFFIXES = (".eml",)
TEXT_SUFFIXES = (".txt", ".md", ".text")
OPEN_FILTER = "Emails and text (*.eml *.txt *.md);;All files (*)"


class EmailFileError(ValueError):
    """A file that cannot be opened as an email; the message says why, for the user."""


def eml_message(fields: dict, from_address: str = "") -> email.message.EmailMessage:
    """The email as a draft a mail client opens for editing (Outlook and Thunderbird read
    ``X-Unsent: 1`` as "not sent yet"); empty headers are left out rather than written empty."""
    msg = email.message.EmailMessage(policy=email.policy.SMTP)
    if from_address.strip():
        msg["From"] = from_address.strip()
    if fields.get("to", "").strip():
        msg["To"] = fields["to"].strip()
    if fields.get("subject", "").strip():
        msg["Subject"] = fields["subject"].strip()
    msg["Date"] = email.utils.formatdate(localtime=True)
    msg["X-Unsent"] = "1"
    msg.set_content(fields.get("body", ""))
    return msg


def read_email_bytes(data: bytes, name: str) -> dict:
    """{"to", "subject", "body"} from an .eml (its plain-text part) or a plain text file."""
    if b"\x00" in data[:8192]:
        raise EmailFileError(f"{name} is not a text file.")
    if Path(name).suffix.lower() in EMAIL_SUFFIXES:
        msg = BytesParser(policy=email.policy.default).parsebytes(data)
        part = msg.get_body(preferencelist=("plain",))
        if part is None:
            raise EmailFileError(f"{name} has no plain-text part to edit (only HTML or attachments).")
        try:
            body = part.get_content()
        except (LookupError, ValueError) as exc:
            raise EmailFileError(f"{name}: its text cannot be decoded ({exc}).") from None
        return {"to": str(msg.get("To", "") or ""), "subject": str(msg.get("Subject", "") or ""),
                "body": body.replace("\r\n", "\n")}
    try:
        body = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise EmailFileError(f"{name} is not UTF-8 text; save it as UTF-8 and open it again.") from None
    return {"to": "", "subject": "", "body": body.replace("\r\n", "\n")}


def read_email_file(path: str | Path) -> dict:
    """The email in *path*; EmailFileError with a message for the user if it cannot be opened."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise EmailFileError(f"{path.name} is larger than {MAX_BYTES // 2**20} MB; "
                                 "open a single email, not a mailbox.")
        data = path.read_bytes()
    except OSError as exc:
        raise EmailFileError(f"Cannot open {path.name}: {exc.strerror or exc}.") from None
    if not data.strip():
        raise EmailFileError(f"{path.name} is empty.")
    return read_email_bytes(data, path.name)


def suggested_file_name(fields: dict) -> str:
    """A file name from the subject ("Lunch on Friday.eml"), safe on every desktop.

    >>> suggested_file_name({"subject": "Re: a/b? <x>"})
    'Re a b x.eml'
    """
    name = "".join(c if c.isalnum() or c in " -_.,'()" else " " for c in fields.get("subject", ""))
    name = " ".join(name.split()).strip(" .")[:80]
    return f"{name or 'email'}.eml"
