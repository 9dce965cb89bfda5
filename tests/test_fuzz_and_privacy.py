"""Bad input of every shape gets a clear message and changes nothing; nothing touches the network."""
import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from chunkwise.core.errors import ChunkwiseError, ImportFormatError
from chunkwise.core.portable import import_file
from chunkwise.core.store import ChunkStore

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


@pytest.mark.parametrize("text", ["enc1:", "enc2:abc", "enc0:kept", "enc0:enc1:x"])
def test_a_snippet_that_begins_like_a_sealed_value_reads_back_as_written(text):
    """Bug caught (by the fuzz test above, in CI): a snippet "enc1:" was read back as a sealed value, and
    reading the library failed ("This value is encrypted and the store has no key")."""
    store = ChunkStore(":memory:")
    cid = store.add_chunk(text, "snippet", ["Ref:"])
    edited = store.add_chunk("plain", "snippet", ["Other:"])
    store.update_chunk(edited, text=text)
    assert store.get_chunk(cid).text == text and store.get_chunk(edited).text == text
    assert {c.text for c in store.list_chunks()} == {text}


def test_big_inputs_are_refused_or_kept_whole(tmp_path):
    store = ChunkStore(":memory:")
    with pytest.raises(ChunkwiseError, match="limit"):
        store.add_chunk("x" * 1_000_000, "snippet", ["ctx"])
    many = [f"context {i}" for i in range(10_000)]
    cid = store.add_chunk("value", "snippet", many)
    assert len(store.get_chunk(cid).contexts) == 10_000


NO_NETWORK_SESSION = r"""
import socket, sys
attempts = []

def watch(event, args):   # installed before anything else is imported: model load and keychain included
    if event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex"):
        attempts.append(event)
    elif event == "socket.__new__" and args[1] in (socket.AF_INET, socket.AF_INET6):
        attempts.append(event)
    elif event in ("socket.connect", "socket.sendto") and isinstance(args[1], tuple):
        attempts.append(event)

sys.addaudithook(watch)
from chunkwise.core.cli import main
codes = [main(["chunks", "add", "--kind", "pii", "--label", "phone", "--text", "(555) 123-4567",
               "--context", "You can call me at"]),
         main(["mine", "--corpus", sys.argv[1]]),
         main(["generate", "--json", "--max-tokens", "8", "Any questions? Please give me a call at"]),
         main(["chunks", "list"])]
print("CODES", codes, "ATTEMPTS", attempts)
"""


def test_no_network_during_a_session(tmp_path):
    """A whole session in a fresh interpreter, watched from its first line by an audit hook:
    store and key, model load, learning, matching and generation open no network socket and
    resolve no host name.  (Catches any import or call that phones home, the keychain's too.)"""
    import os
    import subprocess
    import sys
    from pathlib import Path

    corpus = tmp_path / "sent.txt"
    corpus.write_text("Thanks for the update. You can call me at (555) 123-4567 any time.\n" * 3)
    env = dict(os.environ, CHUNKWISE_PASSPHRASE="correct horse")
    done = subprocess.run([sys.executable, "-c", NO_NETWORK_SESSION, str(corpus)], env=env,
                          cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "CODES [0, 0, 0, 0]" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert "(555) 123-4567" in done.stdout                 # the session really reached the stored value
    assert done.stdout.rstrip().endswith("ATTEMPTS []"), done.stdout[-2000:]


WORDS = st.sampled_from(["chunks", "add", "list", "remove", "import", "export", "encode", "mine", "ppl", "tune",
                         "generate", "--kind", "pii", "snippet", "phrase", "--text", "--context", "--label",
                         "--json", "--reveal", "--include-pii", "--gamma", "--threshold", "--max-tokens", "-1",
                         "0", "1.5", "nan", "--corpus", "x.json", "x.csv", "x.xml", "", "\x00", "é", "👋",
                         "--db", "--no-such-flag"])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(WORDS, TEXT), max_size=8))
@example(["--db", "a\x00b", "chunks", "list"])              # once raised ValueError inside the store
@example(["--db", "/proc/no-such/x.db", "chunks", "list"])   # once FileNotFoundError from mkdir
def test_command_line_arguments(argv):
    """Any argument list (against this test's temporary store): exit code 0, 1 or 2, a
    'chunkwise: error: ' message on failure, never an exception, a traceback or an internal error
    (the last line of defence is for bugs, so reaching it is one)."""
    import contextlib
    import io

    from chunkwise.core.cli import main

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
    assert "internal error" not in err.getvalue(), (argv, err.getvalue())
    if code == 1:
        assert err.getvalue().startswith("chunkwise: ")
