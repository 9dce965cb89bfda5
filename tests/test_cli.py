"""The command line as a user runs it: real processes, real model, temporary files."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def shared_db(tmp_path_factory):
    """One store for the module, so the model's statistics are measured once."""
    return tmp_path_factory.mktemp("cli") / "chunks.db"


def run(*args, db=None, stdin=None, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    if db is not None:
        env["CHUNKWISE_DB"] = str(db)
    out = subprocess.run([sys.executable, "-m", "chunkwise.core", *args], cwd=ROOT, capture_output=True, text=True,
                         input=stdin, env=env, timeout=300)
    assert "Traceback" not in out.stderr, out.stderr
    return out


def test_add_list_generate_json(shared_db):
    out = run("chunks", "add", "--kind", "pii", "--label", "phone", "--text", "(555) 123-4567",
              "--context", "You can call me at", "--context", "My phone number is", db=shared_db)
    assert out.returncode == 0 and "added chunk" in out.stdout
    listed = run("chunks", "list", db=shared_db)
    assert "(555)" not in listed.stdout and "phone" in listed.stdout      # PII masked
    assert "(555) 123-4567" in run("chunks", "list", "--reveal", db=shared_db).stdout
    out = run("generate", "Hi Tom,\n\nThanks for your note. For anything urgent, please give me a call at",
              "--max-tokens", "20", "--json", db=shared_db)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) >= {"text", "spans", "stats"}
    assert set(data["stats"]) >= {"tokens", "forward_passes", "chunk_tokens", "seconds"}
    assert data["stats"]["kv_cells"] == data["stats"]["kv_tokens_kept"] > 0     # the old name, an alias for one release
    (span,) = data["spans"]
    assert data["text"][span["start"]:span["end"]].strip() == "(555) 123-4567"
    assert span["kind"] == "pii" and span["chunk_id"] == 1 and span["match"] > 0 and span["similarity"] == span["match"]
    assert data["stats"]["forward_passes"] < data["stats"]["tokens"]
    assert "llama_" not in out.stderr and "ggml" not in out.stderr      # llama.cpp's log is silenced
    used = json.loads(run("chunks", "list", "--json", db=shared_db).stdout)
    assert used[0]["use_count"] == 1


def test_a_suggestion_stopped_before_an_invented_number_says_so(tmp_path):
    """Bug caught: with no phone number stored, the CLI printed a lone space and no word on why."""
    out = run("generate", "Hi Sam,\n\nIf anything comes up during the interview, please ring me directly at",
              "--max-tokens", "24", db=tmp_path / "empty.db")
    assert out.returncode == 0
    assert "stopped before a phone number the model would have made up" in out.stderr
    assert "made up" not in run("generate", "Dear Sir or Madam,\n\nI am writing to", "--max-tokens", "8",
                                db=tmp_path / "empty.db").stderr


def test_plain_text_output_and_stdin(shared_db):
    out = run("generate", "-", "--max-tokens", "8", "--no-chunks", stdin="Dear Sir or Madam,\n\nI am writing to",
              db=shared_db)
    assert out.returncode == 0 and out.stdout.strip() and "8 tokens" in out.stderr


def test_import_export_round_trip(shared_db, tmp_path):
    from tests.conftest import PAPER_PROFILE

    db = tmp_path / "other.db"
    assert run("chunks", "import", str(PAPER_PROFILE), db=db).returncode == 0
    for ext in ("json", "csv"):
        path = tmp_path / f"out.{ext}"
        masked = run("chunks", "export", str(path), db=db)
        assert masked.returncode == 0 and "masked" in masked.stdout
        assert run("chunks", "import", str(path), db=tmp_path / f"m-{ext}.db").returncode == 1
        assert run("chunks", "export", str(path), "--include-pii", db=db).returncode == 0
        db2 = tmp_path / f"again-{ext}.db"
        assert run("chunks", "import", str(path), db=db2).returncode == 0
        a = json.loads(run("chunks", "list", "--json", "--reveal", db=db).stdout)
        b = json.loads(run("chunks", "list", "--json", "--reveal", db=db2).stdout)
        strip = lambda rows: [{k: r[k] for k in ("text", "kind", "label", "contexts")} for r in rows]
        assert strip(a) == strip(b)


@pytest.mark.parametrize("args,message", [
    (["generate", "hi", "--model", "/no/such/model.gguf"], "Model file not found"),
    (["generate", "hi", "--model", __file__], "Not a GGUF model file"),
    (["chunks", "add", "--kind", "pii", "--text", "", "--context", "x"], "non-empty text"),
    (["chunks", "add", "--kind", "pii", "--text", "v", "--context", " "], "trigger context"),
    (["chunks", "remove", "12345"], "no chunk with id 12345"),
    (["generate", "hi", "--max-tokens", "0"], "at least 1"),
    (["generate", "hi", "--threshold", "3", "--no-chunks"], "between 0 and 1"),
])
def test_bad_input_gets_a_clear_message(tmp_path, args, message):
    out = run(*args, db=tmp_path / "c.db")
    assert out.returncode == 1 and message in out.stderr
    assert out.stderr.startswith("chunkwise: error:")


def test_malformed_import_names_the_line_and_imports_nothing(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text('text,kind,label,contexts\nfine,snippet,,"[""ok""]"\n,snippet,,"[""x""]"\n', encoding="utf-8")
    db = tmp_path / "c.db"
    out = run("chunks", "import", str(bad), db=db)
    assert out.returncode == 1 and "line 3" in out.stderr
    assert "empty" in run("chunks", "list", db=db).stdout


def test_corrupted_database(tmp_path):
    db = tmp_path / "broken.db"
    db.write_bytes(b"not a database at all" * 50)
    out = run("chunks", "list", db=db)
    assert out.returncode == 1 and "unreadable or corrupted" in out.stderr
    assert db.read_bytes().startswith(b"not a database")


def test_prompt_longer_than_the_window_is_truncated_with_a_note(tmp_path):
    out = run("generate", "word " * 600 + "The end is", "--ctx", "256", "--max-tokens", "4", "--no-chunks",
              db=tmp_path / "c.db")
    assert out.returncode == 0 and "were left out" in out.stderr


def test_usage_errors_exit_2():
    out = run("generate")
    assert out.returncode == 2 and "usage" in out.stderr
    assert run().returncode == 2


def test_main_py_runs_the_command_line(tmp_path):
    out = subprocess.run([sys.executable, "main.py", "chunks", "list"], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "CHUNKWISE_DB": str(tmp_path / "m.db")}, timeout=120)
    assert out.returncode == 0 and "empty" in out.stdout


def test_editor_without_a_display_says_so(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    out = subprocess.run([sys.executable, "main.py"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 1 and "no display found" in out.stderr and "Traceback" not in out.stderr


def test_masked_values_do_not_give_away_their_length(tmp_path):
    """Bug caught: a mask as long as the value ("•" * len) tells a shoulder-surfer a 4-digit PIN from an IBAN."""
    db = tmp_path / "mask.db"
    for text in ("1234", "DE85 1007 0000 0532 0130 57"):
        assert run("chunks", "add", "--kind", "pii", "--text", text, "--context", "Mine is", db=db).returncode == 0
    rows = json.loads(run("chunks", "list", "--json", db=db).stdout)
    assert len({r["text"] for r in rows}) == 1 and "1234" not in json.dumps(rows)
    lines = [line for line in run("chunks", "list", db=db).stdout.splitlines() if " pii " in line]
    assert len(lines) == 2 and lines[0].split()[3] == lines[1].split()[3]


def test_generate_sends_the_request_the_bench_replays(monkeypatch):
    """bench/cli_profile.py measures issue 10's path by replaying generation_request; the command must
    send exactly that request (bug caught: cmd_generate building its own request again, so the two
    drift apart)."""
    from chunkwise.core import cli

    class Sent(Exception):
        pass

    class Engine:
        knn_settings, threshold = None, 0.3

        def stream(self, request):
            seen.append(request)
            raise Sent

    seen = []
    monkeypatch.setattr(cli, "_engine", lambda args, with_store=True: Engine())
    args = cli.build_parser().parse_args(["generate", "Call me at", "--max-tokens", "24", "--stop", "\n\n"])
    with pytest.raises(Sent):
        cli.cmd_generate(args)
    assert seen == [cli.generation_request(args, "Call me at")]
    assert seen[0].max_tokens == 24 and seen[0].stop == ["\n\n"] and seen[0].use_chunks
