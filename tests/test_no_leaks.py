"""A known secret written through every path never shows up in logs, error messages,
crash reports or command output other than the text the user asked for."""
import json
import logging
import sys

import pytest

from tests.test_cli import run

SECRET = "Zq7vX-4411-QUOKKA"            # as a PII value
SECRET_CTX = "ctxWOMBAT9931"            # inside a trigger context
SECRET_DRAFT = "draftNUMBAT5521"        # inside a draft / corpus text


@pytest.fixture
def secret_store(tmp_path):
    db = tmp_path / "chunks.db"
    out = run("chunks", "add", "--kind", "pii", "--label", "code", "--text", SECRET,
              "--context", f"My access code ({SECRET_CTX}) is", "--context", "The access code is", db=db)
    assert out.returncode == 0
    return db


def no_secret(*texts, only=(SECRET, SECRET_CTX, SECRET_DRAFT)):
    for text in texts:
        for s in only:
            assert s not in text, f"secret leaked: ...{text[max(0, text.find(s) - 80):text.find(s) + 40]}..."


def test_command_line_outputs_and_errors(secret_store, tmp_path):
    db = secret_store
    outputs, listings = [], []
    for args in (["chunks", "list"], ["chunks", "list", "--json"], ["chunks", "encode"],
                 ["chunks", "export", str(tmp_path / "out.json")],
                 ["chunks", "export", str(tmp_path / "out.csv")]):
        out = run(*args, db=db)
        assert out.returncode == 0, out.stderr
        outputs.append(out.stderr)
        listings.append(out.stdout)        # the library the user asked to see: contexts yes, PII values no
    listings += [(tmp_path / "out.json").read_text(encoding="utf-8"), (tmp_path / "out.csv").read_text()]
    no_secret(*listings, only=(SECRET,))
    # generation: the completion is the user's own text (stdout); stderr is not
    gen = run("generate", "Hi Tom,\n\nThe access code is", "--max-tokens", "12", db=db)
    outputs.append(gen.stderr)
    gen_json = run("generate", "Hi Tom,\n\nThe access code is", "--max-tokens", "12", "--json", db=db)
    outputs.append(gen_json.stderr)
    # learning from a corpus with the secret in it
    corpus = tmp_path / "sent.txt"
    corpus.write_text(f"Hi Ann,\n\nThe project code is {SECRET_DRAFT}. Let me know if you have any questions.\n\n"
                      "Best regards,\nDana\n", encoding="utf-8")
    for args in (["mine", "--corpus", str(corpus), "--gamma", "0.5", "--knn"], ["ppl", str(corpus), "--knn"],
                 ["tune", str(corpus)]):
        out = run(*args, db=db)
        assert out.returncode == 0, out.stderr
        outputs += [out.stdout, out.stderr]
    # bad input that carries the secret: the error names the problem, not the content
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"text": SECRET, "kind": "pii", "contexts": []},
                               {"text": SECRET, "kind": "no such kind!", "contexts": [SECRET_CTX]}]))
    err = run("chunks", "import", str(bad), db=db)
    assert err.returncode == 1
    outputs += [err.stdout, err.stderr]
    too_long = run("chunks", "add", "--kind", "pii", "--text", SECRET * 2000, "--context", SECRET_CTX, db=db)
    assert too_long.returncode == 1
    outputs += [too_long.stdout, too_long.stderr]
    binary = tmp_path / "blob.txt"
    binary.write_bytes(SECRET.encode() + b"\x00\x01")
    err = run("mine", "--corpus", str(binary), db=db)
    outputs += [err.stdout, err.stderr]
    no_secret(*outputs)


def test_python_logs_during_a_session(make_engine, caplog):
    from chunkwise.core import GenerationRequest
    from chunkwise.core.corpus import Document
    from chunkwise.core.learning import mine
    from chunkwise.core.perplexity import perplexity_of

    caplog.set_level(logging.DEBUG)
    engine = make_engine()
    engine.store.add_chunk(SECRET, "pii", [f"My access code ({SECRET_CTX}) is"], label="code")
    engine.refresh()
    engine.generate(GenerationRequest("The access code is", max_tokens=8))
    doc = Document("d", f"Hi Ann,\n\nThe project code is {SECRET_DRAFT}. Let me know if you have any questions.")
    mine(engine, [doc, doc], gamma=0.5, knn=True)
    perplexity_of(engine, doc.text, knn=True)
    no_secret(caplog.text)


def test_worker_failures_and_crash_reports_name_no_text(capsys):
    """An exception whose message quotes the user's text is reported by type and place only."""
    from chunkwise.app.main import crash_report

    try:
        raise ValueError(f"could not parse {SECRET_DRAFT}")
    except ValueError:
        report = crash_report(*sys.exc_info())
    assert "ValueError" in report and "test_no_leaks.py" in report
    no_secret(report)

    pytest.importorskip("PySide6")
    from chunkwise.app.worker import _unexpected

    records = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(handler.format(record))
    logging.getLogger("chunkwise.worker").addHandler(handler)
    try:
        try:
            raise KeyError(SECRET)
        except KeyError:
            said = _unexpected("generation")
    finally:
        logging.getLogger("chunkwise.worker").removeHandler(handler)
    assert records and "KeyError" in records[0] and "KeyError" in said
    no_secret(*records, said)


def test_internal_errors_name_no_text(monkeypatch, capsys, tmp_path):
    """The last lines of defence (the command line's and the editor worker's load) report an
    exception whose message quotes the user's text by type and place only."""
    from chunkwise.core import cli as core_cli

    def boom(args):
        raise ValueError(f"could not parse {SECRET_DRAFT}")

    monkeypatch.setattr(core_cli, "cmd_chunks_list", boom)
    assert core_cli.main(["--db", str(tmp_path / "c.db"), "chunks", "list"]) == 1
    err = capsys.readouterr().err
    assert "internal error: ValueError at test_no_leaks.py:" in err
    no_secret(err)

    pytest.importorskip("PySide6")
    from chunkwise.app import worker as app_worker

    def engine_that_fails(*args, **kwargs):
        raise RuntimeError(f"model said {SECRET}")

    monkeypatch.setattr(app_worker, "Engine", engine_that_fails)
    worker, messages = app_worker.ModelWorker(), []
    worker.load_failed.connect(messages.append)
    worker.load({"db_path": str(tmp_path / "w.db")})
    assert messages and "RuntimeError" in messages[0] and "internal error" not in messages[0]
    no_secret(*messages)
