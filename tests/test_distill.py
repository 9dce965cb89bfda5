"""Mining chunks from the user's writing (SCD-LM, KCD-LM), the kNN-LM datastore, and bad corpora."""
import json
import mailbox
import math
from pathlib import Path
from email.message import EmailMessage

import numpy as np
import pytest

from chunkwise.core import database
from chunkwise.core.corpus import CorpusError, Document, read_corpus, read_prompts
from chunkwise.core.distill import Miner, confident_spans
from chunkwise.core.scoring import align_logprob
from chunkwise.core.errors import ChunkwiseError
from chunkwise.core.matching import DEFAULT_THRESHOLD
from chunkwise.core.learning import mine
from chunkwise.core.perplexity import perplexity_of
from chunkwise.core.settings import Settings
from chunkwise.core.tuning import tune_threshold

EMAILS = [
    "Hi Sam,\n\nThank you for your email. I hope this message finds you well. Please let me know if you have "
    "any questions about the report. I look forward to hearing from you.\n\nBest regards,\nDana",
    "Dear Ms. Lee,\n\nThank you for your time yesterday. I hope this message finds you well. I have attached "
    "the revised schedule. Please let me know if you have any questions.\n\nBest regards,\nDana",
    "Hello team,\n\nI hope this message finds you well. The meeting is moved to Thursday at ten. Please let me "
    "know if you have any questions or concerns.\n\nThank you for your patience,\nDana",
]


def test_confident_spans_paper_example():
    # Appendix D.2: with gamma 0.7 the tokens 'so' (0.8) and 'much' (0.9) form the chunk.
    probs = [np.nan, 0.3, 0.2, 0.8, 0.9, 0.4]     # <s> Thank you so much !
    assert confident_spans(np.log(probs), gamma=0.7, start=1) == [(3, 5)]
    assert confident_spans(np.log(probs), gamma=0.95, start=1) == []
    assert confident_spans(np.log([np.nan, .99, .99, .99]), gamma=0.9, start=2) == [(2, 4)]


def test_teacher_alignment_through_byte_offsets():
    # Working model: "Hel|lo| world" ; teacher: "Hello| wor|ld".
    student = np.array([0, 0, 3, 5, 11])      # BOS, "Hel", "lo", " world"
    teacher = np.array([0, 0, 5, 9, 11])      # BOS, "Hello", " wor", "ld"
    t_logp = np.log([np.nan, 0.95, 0.5, 0.99])
    out = align_logprob(student, teacher, t_logp)
    assert np.isnan(out[0])
    assert out[1] == pytest.approx(math.log(0.95)) and out[2] == pytest.approx(math.log(0.95))
    assert out[3] == pytest.approx(math.log(0.5))          # " world" overlaps " wor" (0.5) and "ld"


# ---------------------------------------------------------------- reading corpora


def test_reads_text_markdown_eml_mbox_and_folders(tmp_path):
    (tmp_path / "a.txt").write_text(EMAILS[0], encoding="utf-8")
    (tmp_path / "b.md").write_text("# Notes\n\n" + EMAILS[1], encoding="utf-8")
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "dana@example.com", "sam@example.com", "Hi"
    msg.set_content(EMAILS[2])
    (tmp_path / "c.eml").write_bytes(bytes(msg))
    box = mailbox.mbox(str(tmp_path / "sent.mbox"))
    box.add(msg)
    box.add(msg)
    box.close()
    (tmp_path / "ignored.bin").write_bytes(b"\x00\x01")
    docs = read_corpus([tmp_path])
    assert len(docs) == 5
    assert sum("moved to Thursday" in d.text for d in docs) == 3
    assert all("From:" not in d.text for d in docs)          # headers are not mined


def test_quoted_replies_and_forwarded_mail_are_not_the_users_to_learn(tmp_path):
    """Bug caught: mining a reply's quoted message stores other people's words and numbers as the user's."""
    theirs = "Tom's mobile is 0777 123 4567 and his flat is 9 Quayside Lane."
    reply = EmailMessage()
    reply["From"], reply["To"], reply["Subject"] = "dana@example.com", "tom@example.com", "Re: Friday"
    reply.set_content("Hi Tom,\n\nFriday suits me; the meeting moved to Thursday.\n\nBest,\nDana\n\n"
                      f"On Tue, 3 Mar 2026 at 10:12, Tom Baker <tom@example.com> wrote:\n> {theirs}\n> Tom\n")
    (tmp_path / "reply.eml").write_bytes(bytes(reply))
    (tmp_path / "outlook.txt").write_text(
        "Sounds good, see you there.\n\n-----Original Message-----\nFrom: Tom Baker\nSent: Monday\n"
        f"To: Dana\nSubject: plan\n\n{theirs}\n", encoding="utf-8")
    (tmp_path / "forward.txt").write_text(
        "FYI, below.\n\n---------- Forwarded message ---------\nFrom: Tom <tom@example.com>\n"
        f"Date: Mon, 2 Mar 2026\nSubject: flat\n\n{theirs}\n", encoding="utf-8")
    (tmp_path / "german.txt").write_text(
        f"Passt mir gut.\n\nAm 3. März 2026 um 10:12 schrieb Tom <tom@example.com>:\n> {theirs}\n", encoding="utf-8")
    (tmp_path / "inline.txt").write_text(f"> {theirs}\nNoted, thanks.\n", encoding="utf-8")
    docs = {Path(d.name).name: d.text for d in read_corpus([tmp_path])}
    assert docs == {"reply.eml": "Hi Tom,\n\nFriday suits me; the meeting moved to Thursday.\n\nBest,\nDana",
                    "outlook.txt": "Sounds good, see you there.", "forward.txt": "FYI, below.",
                    "german.txt": "Passt mir gut.", "inline.txt": "Noted, thanks."}


@pytest.mark.parametrize("content, message", [
    (b"\x00\x01\x02binary", "binary"),
    (b"caf\xe9 au lait", "not UTF-8"),
])
def test_bad_files_are_named(tmp_path, content, message):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(content)
    with pytest.raises(CorpusError, match=message) as info:
        read_corpus([bad])
    assert "bad.txt" in str(info.value)


def test_empty_and_missing_corpora(tmp_path):
    (tmp_path / "empty.txt").write_text("   \n", encoding="utf-8")
    with pytest.raises(CorpusError, match="empty"):
        read_corpus([tmp_path])
    with pytest.raises(CorpusError, match="does not exist"):
        read_corpus([tmp_path / "nope.txt"])
    with pytest.raises(CorpusError, match="no prompts"):
        read_prompts(tmp_path / "empty.txt")


# ---------------------------------------------------------------- mining with the real model


@pytest.fixture
def mined(make_engine):
    engine = make_engine()
    result = mine(engine, [Document(f"e{i}", t) for i, t in enumerate(EMAILS)], gamma=0.5, knn=True)
    return engine, result


def test_mining_stores_chunks_with_ready_encodings(mined):
    engine, result = mined
    chunks = engine.store.list_chunks(kind="self")
    assert result.new_chunks == len(chunks) > 0
    joined = "\n".join(EMAILS)
    for chunk in chunks:
        for ctx in chunk.contexts:
            assert ctx.text + chunk.text in joined            # context then chunk, as written
    # The vectors came from the mining pass itself: nothing is left to encode.
    assert engine.store.pending_encodings(engine.model_id) == []
    assert len(engine.matcher) == sum(len(c.contexts) for c in chunks)


def test_mining_twice_adds_nothing(mined):
    engine, _ = mined
    before = engine.store.count()
    knn_before = len(engine.store.knn_data(engine.model_id)[1])
    again = mine(engine, [Document(f"e{i}", t) for i, t in enumerate(EMAILS)], gamma=0.5, knn=True)
    assert (again.new_chunks, again.new_contexts) == (0, 0)
    assert engine.store.count() == before
    assert len(engine.store.knn_data(engine.model_id)[1]) == knn_before


def test_identical_chunks_share_one_entry_with_all_contexts(mined):
    engine, result = mined
    repeated = [c for c in result.report.chunks if c.occurrences > 1]
    assert repeated, "the corpus repeats phrases; some chunk must occur more than once"
    texts = [c.text for c in engine.store.list_chunks(kind="self")]
    assert len(texts) == len(set(texts))


def test_a_mined_context_brings_its_chunk_back(mined, runtime):
    """Continuing the text exactly where a chunk was mined inserts that chunk."""
    from chunkwise.core.engine import GenerationRequest

    engine, _ = mined
    chunk = max(engine.store.list_chunks(kind="self"), key=lambda c: len(c.text))
    context = chunk.contexts[0].text
    doc = next(t for t in EMAILS if context + chunk.text in t)
    prompt = doc[: doc.index(context + chunk.text) + len(context)]
    out = engine.generate(GenerationRequest(prompt, max_tokens=8))
    assert out.spans and out.spans[0].start == 0
    assert out.spans[0].chunk_id == chunk.id                 # that chunk, not another one
    assert out.text.startswith(chunk.text)


def test_teacher_mining_with_a_second_model_file(make_engine, runtime):
    """KCD-LM: a second GGUF decides the chunks (here the same file loaded again, the only
    GGUF on this machine); with the same tokenizer its top-k probabilities are kept for PP-KD."""
    from chunkwise.core.learning import load_teacher

    engine = make_engine()
    teacher = load_teacher(runtime.model_path)
    try:
        result = mine(engine, [Document("e0", EMAILS[0]), Document("e1", EMAILS[1])], gamma=0.5,
                      teacher=teacher, knn=True)
    finally:
        teacher.close()
    assert result.kind == "teacher" and result.new_chunks > 0
    keys, values, ids, probs, name = engine.store.knn_data(engine.model_id)
    assert ids is not None and ids.shape == (len(values), 8) and name == runtime.name
    assert np.all(probs.sum(axis=1) <= 1.001)


def test_interrupted_or_failed_mining_stores_nothing(make_engine, monkeypatch):
    engine = make_engine()
    docs = [Document(f"e{i}", t) for i, t in enumerate(EMAILS)]
    calls = []
    with pytest.raises(ChunkwiseError, match="cancelled"):
        mine(engine, docs, gamma=0.5, cancelled=lambda: bool(calls.append(1)) or len(calls) > 2)
    assert engine.store.count() == (0, 0)

    def broken(*args, **kwargs):
        raise database.OperationalError("disk I/O error")

    monkeypatch.setattr(engine.store, "_insert_knn", broken)
    with pytest.raises(ChunkwiseError, match="disk I/O"):
        mine(engine, docs, gamma=0.5, knn=True)
    assert engine.store.count() == (0, 0)                       # the chunks went back out with it
    assert engine.store.knn_data(engine.model_id)[1].size == 0


def test_too_short_corpus_is_refused(make_engine):
    engine = make_engine()
    with pytest.raises(ChunkwiseError, match="long enough"):
        mine(engine, [Document("x", "Hi.")])
    assert engine.store.count() == (0, 0)


# ---------------------------------------------------------------- kNN-LM and perplexity


def test_knn_lm_lowers_perplexity_on_text_of_the_corpus_domain(mined):
    engine, _ = mined
    held_out = ("Hi Alex,\n\nThank you for your email. I hope this message finds you well. Please let me know "
                "if you have any questions.\n\nBest regards,\nDana")
    report = perplexity_of(engine, held_out, knn=True)
    assert report.knn < report.base
    assert report.cdlm_knn is not None and report.tokens > 20
    engine.knn_settings.lam = 0.0
    assert perplexity_of(engine, held_out, knn=True).knn == pytest.approx(report.base)


def test_knn_generation_with_lambda_zero_is_plain(mined):
    from chunkwise.core.engine import GenerationRequest

    engine, _ = mined
    request = GenerationRequest("Thank you for your", max_tokens=12, use_chunks=False)
    plain = engine.generate(request).text
    engine.knn_settings.lam = 0.0
    request.knn = True
    assert engine.generate(request).text == plain
    # Mostly the corpus, at a place it was written: its words come back (the plain model says otherwise).
    engine.knn_settings.lam = 0.9
    prompt = "Hello team,\n\nI hope this message finds you well. The meeting is"
    plain = engine.generate(GenerationRequest(prompt, max_tokens=5, use_chunks=False)).text
    leaning = engine.generate(GenerationRequest(prompt, max_tokens=5, use_chunks=False, knn=True)).text
    assert not plain.startswith(" moved to Thursday") and leaning.startswith(" moved to Thursday"), (plain, leaning)


def test_perplexity_without_chunks_is_the_base_model(make_engine):
    engine = make_engine()
    report = perplexity_of(engine, EMAILS[0])
    assert report.cdlm == pytest.approx(report.base) and report.proposals == 0
    assert 1.0 < report.base < 100.0


def test_tuning_reports_a_grid_and_picks_its_minimum(mined):
    engine, _ = mined
    result = tune_threshold(engine, EMAILS[2], thresholds=(0.0, 0.3, 0.7))
    assert [g["threshold"] for g in result.grid] == [0.0, 0.3, 0.7]
    assert result.best == min(g["cdlm"] for g in result.grid)
    assert engine.threshold == pytest.approx(DEFAULT_THRESHOLD)  # the engine's own setting is untouched


# ---------------------------------------------------------------- command line


def run_cli(*argv):
    from chunkwise.core.cli import main

    return main(list(argv))


def test_cli_mine_ppl_tune(tmp_path, capsys):
    corpus = tmp_path / "sent"
    corpus.mkdir()
    for i, text in enumerate(EMAILS):
        (corpus / f"{i}.txt").write_text(text, encoding="utf-8")
    held = tmp_path / "held.txt"
    held.write_text(EMAILS[0].replace("Sam", "Alex"), encoding="utf-8")
    assert run_cli("mine", "--corpus", str(corpus), "--gamma", "0.5", "--knn", "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["new_chunks"] > 0 and summary["knn_entries"] > 50
    assert run_cli("ppl", str(held), "--knn", "--json") == 0
    ppl = json.loads(capsys.readouterr().out)
    assert {"base", "cdlm", "knn", "cdlm_knn"} <= set(ppl)
    assert run_cli("generate", "Thank you for your", "--knn", "--lam", "0.3", "--max-tokens", "6", "--json") == 0
    assert json.loads(capsys.readouterr().out)["text"]
    assert run_cli("generate", "Hi", "--knn", "--lam", "2") == 1
    assert "lambda" in capsys.readouterr().err
    assert run_cli("tune", str(held), "--save") == 0
    out = capsys.readouterr().out
    assert "best: threshold" in out
    from chunkwise.core.settings import load_settings

    best = float(out.split("best: threshold ")[1].split()[0])
    assert load_settings()[0].threshold == pytest.approx(best)


def test_cli_bad_corpora_and_teacher_store_nothing(tmp_path, capsys):
    from chunkwise.core.store import ChunkStore

    (tmp_path / "empty").mkdir()
    assert run_cli("mine", "--corpus", str(tmp_path / "empty")) == 1
    assert "corpus is empty" in capsys.readouterr().err
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"\x7fELF\x00\x00")
    assert run_cli("mine", "--corpus", str(binary)) == 1
    assert "binary" in capsys.readouterr().err
    good = tmp_path / "good.txt"
    good.write_text(EMAILS[0], encoding="utf-8")
    fake = tmp_path / "teacher.gguf"
    fake.write_bytes(b"GGUF" + b"\x00" * 64)
    assert run_cli("mine", "--corpus", str(good), "--teacher", str(fake)) == 1
    err = capsys.readouterr().err
    assert "teacher model could not be loaded" in err and "Traceback" not in err
    assert run_cli("mine") == 1
    assert "--corpus" in capsys.readouterr().err
    assert run_cli("mine", "--corpus", str(good), "--gamma", "1.5") == 1
    with ChunkStore(tmp_path / "user-data" / "chunks.db") as store:
        assert store.count() == (0, 0)


def test_the_corpus_as_teacher_turns_repeated_phrases_into_chunks(make_engine):
    """Leave-one-out kNN-LM teacher: the sign-off recurs across emails, so it becomes a chunk
    although the model alone gives the name a low probability."""
    engine = make_engine()
    docs = [Document(f"e{i}", t) for i, t in enumerate(EMAILS)]
    self_only = Miner(engine.runtime, 0.5).mine(docs)
    assert not any("Dana" in c.text for c in self_only.chunks)
    result = mine(engine, docs, gamma=0.5, corpus_teacher=True)
    assert result.kind == "teacher" and result.teacher == "corpus kNN-LM"
    assert any("Dana" in c.text for c in engine.store.list_chunks(kind="teacher"))


def test_a_single_document_teaches_nothing_beyond_the_model(make_engine):
    from chunkwise.core.distill import corpus_teacher_confidence
    from chunkwise.core.scoring import document_tokens, score

    engine = make_engine()
    tokens, first = document_tokens(engine.runtime, Document("e", EMAILS[0]))
    scored = score(engine.runtime, tokens, first)
    from chunkwise.core.knn import KnnSettings

    (out,) = corpus_teacher_confidence([scored], engine.matcher.stats, KnnSettings())
    assert np.array_equal(np.isnan(out), np.isnan(scored.logprob))
    assert np.allclose(out[~np.isnan(out)], scored.logprob[~np.isnan(out)])


def test_predicting_from_writing_before_anything_is_learned_is_plain_and_says_so(make_engine):
    """'Also predict from my writing' is on by default: before learning, the engine (not each caller)
    falls back to the model alone and says why, instead of failing the suggestion."""
    from chunkwise.core import GenerationRequest

    engine = make_engine()
    ask = dict(prompt="Hi Tom,\n\nThanks for the", max_tokens=8, use_chunks=False)
    plain = engine.generate(GenerationRequest(**ask), record_use=False)
    wanted = engine.generate(GenerationRequest(**ask, knn=True), record_use=False)
    assert wanted.text == plain.text and not plain.notices
    assert any("Nothing has been learned" in n for n in wanted.notices)
    mine(engine, [Document(f"e{i}", t) for i, t in enumerate(EMAILS)], gamma=0.5, knn=True)
    learned = engine.generate(GenerationRequest(**ask, knn=True), record_use=False)
    assert not learned.notices


def test_a_signature_the_users_own_mail_backs_is_not_stopped(mined):
    """Decoder.writing_backs.  Where the slot classifier reads the user's name next and the library has
    none, the model's line is stopped as made up -- but not where the kNN-LM of their own mail is near:
    there "Dana" is what they signed before.  Bug caught: the learned signature was stopped with the
    made-up ones (bench/keystrokes.py dev, learned store: "Facilities Coordinator, Nordhavn Properties"
    withheld as a made-up job title)."""
    engine, _ = mined
    out = engine.generate(Settings().suggestion_request(
        "Hi Jo,\n\nThe meeting is moved to Friday.\n\nBest regards,\n"), record_use=False)
    assert out.text.strip() == "Dana" and not out.stats.withheld, (out.text, out.stats.withheld)
    assert not out.spans                             # the model's own line, mixed with the mail: not a mined chunk
    settings = Settings(knn_enabled=False)         # "Also predict from my writing" off: the line is the model's guess
    out = engine.generate(settings.suggestion_request(
        "Hi Jo,\n\nThe meeting is moved to Friday.\n\nBest regards,\n"), record_use=False)
    assert out.stats.withheld == "name" and not any(ch.isalpha() for ch in out.text), out.text


BLANK_LINE_SIGNER = [
    "Hi Sam,\n\nThank you for your email. Please find the signed lease attached. Let me know if you have "
    "any questions about it.\n\nKind regards,\n\nDana Whitfield",
    "Dear Ms. Lee,\n\nThank you for viewing the flat yesterday. I have attached the application form. Let me "
    "know if you have any questions.\n\nKind regards,\n\nDana Whitfield",
    "Hello Tom,\n\nThe repair visit is booked for Thursday morning. Let me know if you have any questions or "
    "if the time does not suit you.\n\nKind regards,\n\nDana Whitfield",
]


def test_the_users_blank_line_comes_before_their_name_where_their_mail_is_near(make_engine):
    """Decoder.propose.  The library's name went in with the one line break the model chose first:
    "Kind regards," + "\\nDana Whitfield", where the user always leaves a blank line (a letting agent's
    mail, bench/keystrokes.py --personas rhea: typed over at every sign-off on dev).  Where the kNN-LM of
    their mail is near, its line breaks come first and the name after them (own_line_ahead).  Bug
    caught: the value inserted at the cursor with a single line break."""
    engine = make_engine()
    name = engine.store.add_chunk("Dana Whitfield", "pii", ["My name is", "Best,"], label="name")
    mine(engine, [Document(f"e{i}", t) for i, t in enumerate(BLANK_LINE_SIGNER)], gamma=0.5, knn=True)
    engine.refresh()
    # A new email much like one learned (she writes the same few emails): the kNN-LM is near at the sign-off.
    prompt = ("Hi Ana,\n\nThank you for your email. Please find the signed lease attached. Let me know if you "
              "have any questions about it.\n\nKind regards,")
    out = engine.generate(Settings().suggestion_request(prompt), record_use=False)
    assert out.text.startswith("\n\nDana Whitfield"), out.text
    assert [s.chunk_id for s in out.spans] == [name]      # the library's value, at the start of its line
