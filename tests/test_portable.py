import json

import pytest

from chunkwise.core.errors import ImportFormatError
from chunkwise.core.portable import export_file, import_file, read_records
from chunkwise.core.store import ChunkStore

TRICKY = [
    {"text": "Line one\r\nline two\nthree", "kind": "snippet", "label": "crlf", "contexts": ["Sign-off:\n"]},
    {"text": "Grüße aus Köln 👋", "kind": "phrase", "label": None, "contexts": ["Bis bald,", "Tschüss"]},
    {"text": "שלום עולם", "kind": "phrase", "label": "rtl", "contexts": ["In Hebrew:"]},
    {"text": "e\u0301te\u0301", "kind": "pii", "label": "combining", "contexts": ["Season: \"quoted\", comma"]},
]


@pytest.mark.parametrize("ext", ["json", "csv"])
def test_round_trip_is_exact(store, tmp_path, ext):
    for rec in TRICKY:
        store.add_chunk(rec["text"], rec["kind"], rec["contexts"], label=rec["label"])
    path = tmp_path / f"lib.{ext}"
    assert export_file(store, path, include_pii=True) == len(TRICKY)
    from chunkwise.core.store import ChunkStore

    other = ChunkStore(":memory:")
    import_file(other, path)
    assert [c.as_record() for c in other.list_chunks()] == TRICKY
    # and once more: export of the import is byte-identical
    path2 = tmp_path / f"again.{ext}"
    export_file(other, path2, include_pii=True)
    assert path.read_bytes() == path2.read_bytes()


def test_export_masks_pii_unless_asked_and_a_masked_file_does_not_import(store, tmp_path):
    from chunkwise.core.errors import ImportFormatError
    from chunkwise.core.portable import MASKED_TEXT

    store.add_chunk("(555) 123-4567", "pii", ["Call me at"], label="phone")
    store.add_chunk("Kind regards,", "snippet", ["Thanks again."])
    path = tmp_path / "lib.json"
    export_file(store, path)
    text = path.read_text(encoding="utf-8")
    assert "123-4567" not in text and MASKED_TEXT in text and "Kind regards," in text
    assert (path.stat().st_mode & 0o777) == 0o600
    other = ChunkStore(":memory:")
    with pytest.raises(ImportFormatError, match="masked"):
        import_file(other, path)
    assert other.count() == (0, 0)
    export_file(store, path, include_pii=True)
    assert "123-4567" in path.read_text(encoding="utf-8")


def test_imports_the_papers_profile_format(store):
    from tests.conftest import PAPER_PROFILE

    ids = import_file(store, PAPER_PROFILE)
    chunks = store.list_chunks()
    assert len(ids) == 7
    phone = [c for c in chunks if c.label == "phone"][0]
    assert phone.text == "(555) 123-4567" and phone.kind == "pii" and len(phone.contexts) == 11


def _write(tmp_path, name, content, mode="w"):
    p = tmp_path / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8", newline="")
    return p


@pytest.mark.parametrize("name,content,message", [
    ("a.json", '{"chunks": [\n  {"text": "ok", "kind": "pii", "contexts": ["c"]},\n  {"text": "", "kind": "pii", "contexts": ["c"]}\n]}',
     "line 3 .chunk 2.: A chunk needs non-empty text"),
    ("b.json", '[\n {"text": "ok", "kind": "pii", "contexts": ["c"]},\n {"text": "x", "kind": "pii"}\n]', "line 3.*missing field 'contexts'"),
    ("c.json", '{"chunks": [ {"text": "ok", "kind": "pii", "contexts": ["c"]}, ', "line 1, column .*not valid JSON"),
    ("d.csv", 'text,kind,label,contexts\nok,pii,,"[""c""]"\nbad,pii,,"[""c"""\n', "line 3: the contexts column is not a JSON list"),
    ("e.csv", 'text,kind,label,contexts\nok,pii,,c,extra\n', "line 2: 5 fields where the header has 4"),
    ("f.csv", 'name,value\nx,y\n', "line 1: the header lacks"),
    ("g.csv", 'text,kind,label,contexts\n"multi\nline",pii,,c\nv,BAD KIND,,c\n', "line 4: Unknown chunk kind"),
    ("h.txt", 'whatever', "unknown format"),
    ("i.json", b'\x00\x01\x02binary', "binary file"),
    ("j.csv", b'text,kind,label,contexts\n\xff\xfe,pii,,c\n', "line 2: not UTF-8"),
    ("k.json", '[]', "holds no chunks"),
    ("l.json", '{"phone": {"value": "1"}}', "entry 'phone'.*expected"),
])
def test_malformed_files_name_the_line_and_import_nothing(store, tmp_path, name, content, message):
    store.add_chunk("existing", "snippet", ["ctx"])
    path = _write(tmp_path, name, content)
    with pytest.raises(ImportFormatError, match=message):
        import_file(store, path)
    assert store.count() == (1, 1)


def test_missing_file(store, tmp_path):
    with pytest.raises(ImportFormatError, match="no such file"):
        import_file(store, tmp_path / "nope.json")


def test_csv_accepts_plain_single_context_and_bom(tmp_path):
    p = _write(tmp_path, "x.csv", b"\xef\xbb\xbftext,kind,label,contexts\r\nhello,snippet,greet,Dear team\r\n")
    (rec,) = read_records(p)
    assert rec == {"text": "hello", "kind": "snippet", "label": "greet", "contexts": ["Dear team"]}


def test_export_is_atomic_and_refuses_unknown_formats(store, tmp_path):
    store.add_chunk("v", "snippet", ["c"])
    with pytest.raises(ImportFormatError):
        export_file(store, tmp_path / "lib.xml")
    assert list(tmp_path.iterdir()) == []
    export_file(store, tmp_path / "lib.json")
    assert [p.name for p in tmp_path.iterdir()] == ["lib.json"]
    assert json.loads((tmp_path / "lib.json").read_text())["format"] == "chunkwise-chunks"
