"""Import and export of chunk libraries: JSON and CSV, round-trip exact.

JSON::

    {"format": "chunkwise-chunks", "version": 1,
     "chunks": [{"text": "...", "kind": "pii", "label": "phone", "contexts": ["..."]}]}

A bare list of such records is accepted too, and so is the profile form of
``shared/data/pii_profile_paper.json`` (``{"phone": {"value": ..., "contexts": [...]}}``).

CSV: a header ``text,kind,label,contexts``; ``contexts`` holds a JSON list of
strings (a plain string is taken as a single context).  Fields may hold
newlines; the file is UTF-8 (a BOM is tolerated).

A malformed record fails the whole import with a message naming its line;
nothing of that file is stored.
"""
from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Sequence

from .errors import ImportFormatError, StoreError
from .paths import atomic_write
from .store import Chunk, ChunkStore, validate_chunk

FORMAT_NAME = "chunkwise-chunks"
# What a PII value becomes in an export made without include_pii: never a
# real value, and refused on import so a masked file cannot overwrite real data.
MASKED_TEXT = ("<personal info masked: export again and include personal info (in the library's Export…, "
               "answer Yes; on the command line, --include-pii) to move real values>")
MASKED_BEFORE = ("<PII masked: export again with --include-pii to move real values>",)   # older exports
CSV_FIELDS = ["text", "kind", "label", "contexts"]


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _array_item_offsets(text: str, start: int) -> list[int]:
    """Character offsets of each item of the JSON array opening at *start*."""
    decoder = json.JSONDecoder()
    offsets, i = [], start + 1
    n = len(text)
    while i < n:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n or text[i] == "]":
            break
        offsets.append(i)
        _, i = decoder.raw_decode(text, i)
    return offsets


def _check_record(rec, where: str) -> dict:
    if not isinstance(rec, dict):
        raise ImportFormatError(f"{where}: expected an object with text, kind and contexts.")
    unknown = set(rec) - {"text", "kind", "label", "contexts", "id", "created_at", "updated_at", "use_count"}
    if unknown:
        raise ImportFormatError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}.")
    for key in ("text", "kind", "contexts"):
        if key not in rec:
            raise ImportFormatError(f"{where}: missing field '{key}'.")
    label = rec.get("label")
    if rec["text"] in (MASKED_TEXT, *MASKED_BEFORE):
        raise ImportFormatError(f"{where}: this personal value was masked when it was exported. Export again "
                                "and include personal info (in the library's Export…, answer Yes; on the "
                                "command line, --include-pii) to move real values.")
    try:
        contexts = validate_chunk(rec["text"], rec["kind"], label, rec["contexts"])
    except StoreError as exc:
        raise ImportFormatError(f"{where}: {exc}") from None
    return {"text": rec["text"], "kind": rec["kind"], "label": label, "contexts": contexts}


def parse_json(text: str, name: str = "import file") -> list[dict]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"{name}: line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg}).") from None
    if isinstance(data, dict) and "chunks" in data:
        if data.get("format", FORMAT_NAME) != FORMAT_NAME:
            raise ImportFormatError(f"{name}: unknown format {data.get('format')!r}.")
        items = data["chunks"]
        if not isinstance(items, list):
            raise ImportFormatError(f"{name}: 'chunks' must be a list.")
        key_pos = text.find('"chunks"')
        start = text.find("[", key_pos)
    elif isinstance(data, list):
        items = data
        start = text.find("[")
    elif isinstance(data, dict):
        return _parse_profile(data, text, name)
    else:
        raise ImportFormatError(f"{name}: expected a list of chunks or an object with 'chunks'.")
    offsets = _array_item_offsets(text, start)
    records = []
    for i, item in enumerate(items):
        line = _line_of(text, offsets[i]) if i < len(offsets) else "?"
        records.append(_check_record(item, f"{name}: line {line} (chunk {i + 1})"))
    return records


def _parse_profile(data: dict, text: str, name: str) -> list[dict]:
    """The paper's profile form: {"phone": {"value": "...", "contexts": [...]}}."""
    records = []
    for key, entry in data.items():
        if key.startswith("_"):
            continue
        line = _line_of(text, max(0, text.find(json.dumps(key))))
        where = f"{name}: line {line} (entry {key!r})"
        if not isinstance(entry, dict) or "value" not in entry or "contexts" not in entry:
            raise ImportFormatError(f"{where}: expected {{\"value\": ..., \"contexts\": [...]}}.")
        records.append(_check_record(
            {"text": entry["value"], "kind": entry.get("kind", "pii"), "label": key,
             "contexts": entry["contexts"]}, where))
    return records


def parse_csv(text: str, name: str = "import file") -> list[dict]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise ImportFormatError(f"{name}: the file is empty.") from None
    except csv.Error as exc:
        raise ImportFormatError(f"{name}: line 1: {exc}.") from None
    header = [h.strip().lower() for h in header]
    missing = {"text", "kind", "contexts"} - set(header)
    if missing:
        raise ImportFormatError(f"{name}: line 1: the header lacks {', '.join(sorted(missing))} "
                                f"(expected {','.join(CSV_FIELDS)}).")
    records, line = [], reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise ImportFormatError(f"{name}: line {line}: {exc}.") from None
        where = f"{name}: line {line}"
        line = reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise ImportFormatError(f"{where}: {len(row)} fields where the header has {len(header)}.")
        rec = dict(zip(header, row))
        raw = rec.get("contexts", "")
        if raw.lstrip().startswith("["):
            try:
                contexts = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ImportFormatError(f"{where}: the contexts column is not a JSON list ({exc.msg}).") from None
        else:
            contexts = [raw] if raw.strip() else []
        label = rec.get("label") or None
        records.append(_check_record(
            {"text": rec["text"], "kind": rec["kind"].strip(), "label": label, "contexts": contexts}, where))
    return records


def read_records(path: str | os.PathLike) -> list[dict]:
    """Parse an import file (format by extension: .json or .csv)."""
    path = Path(path)
    name = path.name
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ImportFormatError(f"{path}: no such file.") from None
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot be read ({exc.strerror}).") from None
    if b"\x00" in raw:
        raise ImportFormatError(f"{name}: looks like a binary file (NUL bytes); expected JSON or CSV text.")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ImportFormatError(f"{name}: line {line}: not UTF-8 text (byte {raw[exc.start]:#x}).") from None
    suffix = path.suffix.lower()
    if suffix == ".json":
        records = parse_json(text, name)
    elif suffix == ".csv":
        records = parse_csv(text, name)
    else:
        raise ImportFormatError(f"{name}: unknown format; use a .json or .csv file.")
    if not records:
        raise ImportFormatError(f"{name}: holds no chunks.")
    return records


def import_file(store: ChunkStore, path: str | os.PathLike) -> list[int]:
    """Import all chunks of a file in one transaction; return the new ids."""
    return store.add_many(read_records(path))


def render(chunks: Sequence[Chunk], fmt: str, include_pii: bool = True) -> str:
    records = [c.as_record() for c in chunks]
    if not include_pii:
        for r in records:
            if r["kind"] == "pii":
                r["text"] = MASKED_TEXT
    if fmt == "json":
        return json.dumps({"format": FORMAT_NAME, "version": 1, "chunks": records},
                          ensure_ascii=False, indent=2) + "\n"
    if fmt == "csv":
        out = io.StringIO(newline="")
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(CSV_FIELDS)
        for r in records:
            writer.writerow([r["text"], r["kind"], r["label"] or "",
                             json.dumps(r["contexts"], ensure_ascii=False)])
        return out.getvalue()
    raise ImportFormatError(f"Unknown export format {fmt!r}; use json or csv.")


def export_file(store: ChunkStore, path: str | os.PathLike, kind: str | None = None,
                include_pii: bool = False) -> int:
    """Write the library to *path* (format by extension), atomically, owner-only; return the count.

    PII values are masked unless *include_pii*: an export is a copy of the
    user's private data outside the store.
    """
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in ("json", "csv"):
        raise ImportFormatError(f"{path.name}: unknown format; use a .json or .csv file.")
    chunks = store.list_chunks(kind=kind)
    data = render(chunks, fmt, include_pii)
    try:
        atomic_write(path, data)
    except OSError as exc:
        raise StoreError(f"Cannot write {path}: {exc.strerror}.") from None
    return len(chunks)
