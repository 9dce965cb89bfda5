"""Bad input of every shape gets a clear message and changes nothing; nothing touches the network."""
import json
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import ChunkwiseError, ImportFormatError
from core.portable import import_file
from core.store import ChunkStore

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _import_or_refuse(tmp_path, name, data):
    store = ChunkStore(":memory:")
    store.add_chunk("kept", "snippet", ["ctx"])
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    try:
        ids = import_file(store, path)
    except ImportFormatError as exc:
        assert str(exc) and "Traceback" not in str(exc)
        assert store.count() == (1, 1)                 # nothing of the file was stored
        return None
    assert len(ids) >= 1 and store.count()[0] == 1 + len(ids)
    return ids


@FUZZ
@given(st.binary(max_size=200))
def test_arbitrary_bytes_as_json_or_csv(tmp_path, data):
    for name in ("x.json", "x.csv"):
        _import_or_refuse(tmp_path, name, data)


@FUZZ
@given(st.lists(st.fixed_dictionaries({"text": TEXT, "kind": st.sampled_from(["pii", "snippet", "Bad", ""]),
                                       "contexts": st.lists(TEXT, max_size=3)},
                                      optional={"label": st.one_of(st.none(), TEXT)}), max_size=4))
def test_json_records_with_odd_values(tmp_path, records):
    ids = _import_or_refuse(tmp_path, "x.json", json.dumps({"chunks": records}, ensure_ascii=False))
    valid = all(r["text"].strip() and r["kind"] in ("pii", "snippet") and r["contexts"]
                and all(c.strip() for c in r["contexts"])
                and "\x00" not in r["text"] + "".join(r["contexts"]) + (r.get("label") or "") for r in records)
    assert (ids is not None) == (valid and bool(records))


@FUZZ
@given(st.lists(st.tuples(TEXT, st.sampled_from(["pii", "phrase", "x y"]), TEXT, TEXT), max_size=4))
def test_csv_rows_with_odd_values(tmp_path, rows):
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["text", "kind", "label", "contexts"])
    writer.writerows(rows)
    _import_or_refuse(tmp_path, "x.csv", out.getvalue())


@FUZZ
@given(TEXT, TEXT, st.lists(TEXT, max_size=3))
def test_chunk_editor_inputs(text, label, contexts):
    store = ChunkStore(":memory:")
    try:
        cid = store.add_chunk(text, "snippet", contexts, label=label or None)
    except ChunkwiseError as exc:
        assert str(exc)
        assert store.count() == (0, 0)
    else:
        assert store.get_chunk(cid).text == text


def test_big_inputs_are_refused_or_kept_whole(tmp_path):
    store = ChunkStore(":memory:")
    with pytest.raises(ChunkwiseError, match="limit"):
        store.add_chunk("x" * 1_000_000, "snippet", ["ctx"])
    many = [f"context {i}" for i in range(10_000)]
    cid = store.add_chunk("value", "snippet", many)
    assert len(store.get_chunk(cid).contexts) == 10_000


def test_no_network_during_a_session(make_engine, monkeypatch):
    """Load, encode, match and generate with every socket refused."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network is off in this test")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    from core.engine import GenerationRequest

    engine = make_engine()
    engine.store.add_chunk("(555) 123-4567", "pii", ["You can call me at"], label="phone")
    engine.refresh()
    done = engine.generate(GenerationRequest("Any questions? Please give me a call at", max_tokens=8))
    assert done.text and attempts == []


WORDS = st.sampled_from(["chunks", "add", "list", "remove", "import", "export", "encode", "mine", "ppl", "tune",
                         "generate", "--kind", "pii", "snippet", "phrase", "--text", "--context", "--label",
                         "--json", "--reveal", "--include-pii", "--gamma", "--threshold", "--max-tokens", "-1",
                         "0", "1.5", "nan", "--corpus", "x.json", "x.csv", "x.xml", "", "\x00", "é", "👋",
                         "--db", "--no-such-flag"])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(WORDS, TEXT), max_size=8))
def test_command_line_arguments(argv):
    """Any argument list (against this test's temporary store): exit code 0, 1 or 2, a
    'chunkwise: ' message on failure, never an exception or a traceback."""
    import contextlib
    import io

    from core.cli import main

    if "generate" in argv or "mine" in argv or "ppl" in argv or "tune" in argv or "encode" in argv:
        argv = [a for a in argv if a not in ("generate", "mine", "ppl", "tune", "encode")]   # no model here
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as exc:                       # argparse usage errors
            code = exc.code
    assert code in (0, 1, 2), (argv, code)
    assert "Traceback" not in err.getvalue()
    if code == 1:
        assert err.getvalue().startswith("chunkwise: ")
