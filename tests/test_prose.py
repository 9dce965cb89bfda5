"""The user's values stay out of ordinary prose (bench/prose.py): after a determiner, where the
model is sure the words go on, where the user began typing the value, and a name after a greeting.

Each test judges one of the user's values at a place with the real model, the other gates held
open (the writer probe says "theirs"), so only the gate under test keeps the value out; a control
place shows the same value going in."""
from __future__ import annotations

import numpy as np
import pytest

from chunkwise.core import ChunkStore, Engine
from chunkwise.core.decoding import DecodeSettings, Decoder, _State
from chunkwise.core.placement import GOES_ON
from chunkwise.core.encoding import local_mean, local_rows
from chunkwise.core.matching import Proposal
from chunkwise.core.settings import Settings

PROFILE = {   # a day-one library as a user types it (not a benchmark persona)
    "name": ("Jonas Berg", ["My name is", "Best regards,"]),
    "job_title": ("Site Manager", ["I work as", "My role:"]),
    "email": ("jonas.berg@example.org", ["My email is", "Email me at"]),
    "website": ("https://jonasberg.example", ["My website is", "See my work at"]),
}


@pytest.fixture
def library(runtime):
    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    ids = {f: engine.store.add_chunk(v, "pii", ctx, label=f.replace("_", " ")) for f, (v, ctx) in PROFILE.items()}
    engine.refresh()
    assert {f: engine.matcher.typed_field(i) for f, i in ids.items()} == {f: f for f in PROFILE}
    yield engine, ids
    engine.store.close()
    runtime.reset()


@pytest.fixture
def judge(library, runtime, monkeypatch):
    """judge(text, field, logits=True) -> whether Decoder.fits_here lets the user's *field* value in after
    *text*, with this step's real logits (or none: the model's word left out of it)."""
    engine, ids = library

    def fits(text: str, field: str, logits: bool = True, line_break: bool = False) -> bool:
        d = Decoder(runtime, engine.matcher, DecodeSettings())
        d._text, d._prompt_chars, d._line_break = text, len(text), line_break
        monkeypatch.setattr(d, "writer_owns_slot", lambda *_: True)
        value = Proposal(ids[field], "pii", field, PROFILE[field][0], (), 0.9, 0.9, 1.0, someone_elses=0.0)
        step = None
        if logits:
            runtime.reset()
            step = np.array(runtime.sync(runtime.tokenize(text), last=1, hidden=False).logits[-1], copy=True)
        return d.fits_here(value, step)

    return fits


def test_no_value_after_a_determiner_but_a_job_title_after_an_article(judge):
    """Bug caught: the user's email after "...sends new subscribers a" and their website after "...a
    pre-order page to the" (bench/prose.py, dev).  A job title does follow an article ("I'm a")."""
    for text in ("Hi Jo,\n\nThe form now sends every new subscriber a", "Hi Jo,\n\nI can put the photos up on the",
                 "It connects straight to your"):
        for field in ("email", "website", "name"):
            assert not judge(text, field, logits=False), (text, field)
    for field in ("email", "website", "name"):            # the controls: the same values where a value goes
        assert judge("Hi Jo,\n\nHere it is:", field, logits=False), field
    assert judge("Hi Jo,\n\nSince March I'm a", "job_title", logits=False)
    assert judge("Hi Jo,\n\nFrom Monday I'll be the", "job_title", logits=False)
    assert not judge("Hi Jo,\n\nIt connects straight to your", "job_title", logits=False)  # not after "your"


def test_no_value_where_the_model_is_sure_the_words_go_on(judge, runtime):
    """Bug caught: "Please let me" + the user's phone or email, "As part" + their name (bench/prose.py:
    the model gives " know" 0.93 and " of" 1.0 there).  Where the model expects an article, a pronoun
    or the value itself, or after a comma, the value still goes in."""
    for text, field in (("Hi Jo,\n\nThe heating is back on. Please let me", "email"),
                        ("Hi Jo,\n\nThe new booking page goes live on Friday. As part", "name")):
        assert not judge(text, field), text
        assert judge(text, field, logits=False), text        # only the model's next word keeps it out
    assert judge("Hi Jo,\n\nMy email is", "email")
    assert judge("Hi Jo,\n\nYou can reach me by email at", "email")
    assert judge("Hi Jo,\n\nFor my CV, see my personal website,", "website")
    # The model copies the reader's name (" Carlos", capitalised): a name stands where the user's goes.
    assert judge("Hi Carlos,\n\nMy name is", "name")


@pytest.mark.parametrize("word, p, value, goes_on", [
    (" know", 0.9, "email", True), (" know", GOES_ON - 0.05, "email", False),     # the bar
    ("ly", 0.9, "name", True),                                                      # a word piece: "Kind" -> "ly"
    (" the", 0.9, "email", False), (" any", 0.9, "email", False),                  # a determiner stands in its place
    (" here", 0.9, "website", False), (" me", 0.9, "email", False),                # ... and so do "here", a pronoun
    (" https", 0.9, "website", False), (" site", 0.9, "job_title", False),         # the value itself ("Site Manager")
    (":", 0.9, "email", False),                                                     # not a word
    (" Maria", 0.9, "name", False), (" Berlin", 0.9, "email", False)])             # a name or a place stands in
def test_which_next_words_keep_a_value_out(library, runtime, word, p, value, goes_on):
    """Decoder.words_go_on on a distribution that puts *p* on *word*.  Bugs caught: a determiner the
    stand-in list lacked (" any" kept the user's address out of "dropped back to me at", entity test
    set), the value's own first word read as another word (" https" before the user's website), a
    case difference (" site" before "Site Manager"), the bar applied the wrong way round, and a
    capitalised word, a name or a place, taken for words that go on ("Hi Maria,\n\nMy name is" ->
    " Maria" kept the user's name out, paper dev set)."""
    engine, ids = library
    d = Decoder(runtime, engine.matcher, DecodeSettings())
    d._text = "Hi Jo,\n\nThe photos are up"
    token = runtime.tokenize(word, add_special=False)
    assert len(token) == 1, word
    logits = np.full(runtime.n_vocab, -1e9, np.float32)
    logits[token[0]] = 0.0
    others = [t for t in range(1000, 1010) if t != token[0]]                  # the rest of the mass, each below p
    logits[others] = float(np.log((1 - p) / len(others) / p))
    proposal = Proposal(ids[value], "pii", value, PROFILE[value][0], (), 0.9, 0.9, 1.0, someone_elses=0.0)
    assert d.words_go_on(logits, proposal) is goes_on
    d._text = "Hi Jo,\n\nThe photos are up,"                     # after punctuation the gate is not asked
    assert d.words_go_on(logits, proposal) is False


@pytest.mark.parametrize("mark, p, first", [
    (",", 0.9, True), (":", 0.9, True), (".", 0.9, True),      # the model writes the mark before any value
    (",", GOES_ON - 0.05, False),                               # the bar
    (" (", 0.9, False), (" +", 0.9, False)])                   # a bracket or "+" may open the value itself
def test_a_mark_the_model_is_sure_of_comes_before_the_value(library, runtime, monkeypatch, mark, p, first):
    """Decoder.mark_first, asked in fits_here, on a distribution that puts *p* on *mark*.  Bugs caught:
    the gate looking only at words ("Kind regards" -> " Jonas Berg," on one line), a bracket or "+"
    taken for a mark, the bar applied the wrong way; and after the mark: a comma or colon noted as the
    lead-in of that value only (not a full stop, not another value of the user's)."""
    engine, ids = library
    d = Decoder(runtime, engine.matcher, DecodeSettings())
    d._text = "Thanks for the help.\n\nKind regards"
    d._prompt_chars = len(d._text)
    monkeypatch.setattr(d, "writer_owns_slot", lambda *_: True)
    token = runtime.tokenize(mark, add_special=False)
    assert len(token) == 1, mark
    logits = np.full(runtime.n_vocab, -1e9, np.float32)
    logits[token[0]] = 0.0
    others = [t for t in range(1000, 1010) if t != token[0]]
    logits[others] = float(np.log((1 - p) / len(others) / p))

    def value(field: str) -> Proposal:
        return Proposal(ids[field], "pii", field, PROFILE[field][0], (), 0.9, 0.9, 1.0, someone_elses=0.0)

    assert d.mark_first(logits) is first
    assert d.fits_here(value("name"), logits) is not first
    noted = first and mark in (",", ":")
    assert d._lead_word == ((ids["name"], mark) if noted else None)
    d._text += mark                                  # the model writes it; the next step asks again
    assert d.mark_first(logits) is False             # after punctuation the gate is not asked
    assert d.own_chunks_fit() is noted
    newline = np.full(runtime.n_vocab, -1e9, np.float32)
    newline[runtime.tokenize("\n", add_special=False)[0]] = 0.0       # the model breaks the line next
    if noted:
        assert d.fits_here(value("name"), newline)                  # the value kept out for the mark
        assert not d.fits_here(value("website"), newline)           # ... and no other


def test_a_sign_off_without_its_comma_gets_the_comma_then_the_name_below(library):
    """End to end, the editor's request.  Bug caught: a pause after "Kind regards" (no comma yet) gave
    " Jonas Berg," on the same line, read as "Kind regards Jonas Berg,".  Now the model's comma
    comes first and the name, one chunk, starts the next line.  After a colon the model writes, the
    value may come too (noted as a lead word): a label without its colon, "Website" + ":" + the value
    (on that line or the next), not "Website https://...", and not the colon alone (own_chunks_fit
    counted it as a word of the model's)."""
    engine, ids = library
    for text in ("Thanks for your help with the move.\n\nKind regards",
                 "Hope the trip went well, speak soon.\n\nBest wishes"):
        out = engine.generate(Settings().suggestion_request(text), record_use=False)
        assert [s.chunk_id for s in out.spans][:1] == [ids["name"]], (text, out.text)
        assert out.text.split(PROFILE["name"][0])[0] == ",\n", (text, out.text)   # the comma, then a new line
    text = "Hi Jo,\n\nHere are my details for the form.\n\nWebsite"     # the model: ":" 0.66
    out = engine.generate(Settings().suggestion_request(text), record_use=False)
    assert [s.chunk_id for s in out.spans][:1] == [ids["website"]], out.text
    assert out.text.split(PROFILE["website"][0])[0].rstrip(" \n") == ":", out.text


def test_a_value_the_user_began_typing_is_not_inserted_whole(judge):
    """Bug caught: after "Best regards,\\nJonas Berg\\nSite" the suggestion was " Site Manager" (the
    word typed twice).  With nothing of it typed, the job title goes on the signature's next line."""
    assert not judge("Best regards,\nJonas Berg\nSite", "job_title", logits=False)
    assert not judge("Best regards,\nJonas", "name", logits=False)
    assert judge("Best regards,\nJonas Berg\n", "job_title", logits=False)


def test_a_name_after_a_greeting_or_thanks_on_its_line_is_the_readers(judge):
    """Bug caught: "Thanks" + " Jonas Berg" and "Thank you" + the user's own name on the same line
    (bench/prose.py, dev).  A sign-off ("Thanks," or the model breaking the line after "Thanks") still
    takes the user's name."""
    for text in ("Hi Sam,\n\nThanks", "Hi Mum,\n\nThank you", "Great work on the launch. Thanks again"):
        assert not judge(text, "name", logits=False), text
    assert judge("The boiler is fixed.\n\nThanks,\n", "name", logits=False)
    for signoff in ("Thanks\n", "Many thanks\n", "Thank you\n"):      # a line ended: the name below is the user's
        assert judge("The boiler is fixed.\n\n" + signoff, "name", logits=False), signoff
    assert judge("The boiler is fixed.\n\nThanks", "name", logits=False, line_break=True)
    assert judge("Hi Sam,\n\nThanks", "email", logits=False)          # only a name is the reader's


def test_the_editor_suggests_no_value_inside_ordinary_prose(library):
    """End to end, the editor's own request: mid-sentence places where the day-one library's values went
    before (bench/prose.py) get none of them, while "Email me at" still gets the email."""
    engine, ids = library
    values = [v for v, _ in PROFILE.values()]
    settings = Settings()
    for text in ("Hi Jo,\n\nThe newsletter form is live. It now connects to your mailing list and sends "
                 "new subscribers a", "Hi Jo,\n\nI can add a pre-order page to the",
                 "Hi Jo,\n\nThe roof is fixed. Please let me"):
        out = "".join(p.text for p in engine.stream(settings.suggestion_request(text)))
        assert not any(v in out for v in values), (text, out)
    out = "".join(p.text for p in engine.stream(settings.suggestion_request("Hi Jo,\n\nAny questions? Email me at")))
    assert PROFILE["email"][0] in out


@pytest.fixture
def phone_library(runtime):
    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    engine.store.add_chunk("+47 912 34 567", "pii", ["My number is", "Call me on"], label="phone")
    engine.store.add_chunk("jonas.berg@example.org", "pii", ["My email is", "Email me at"], label="email")
    engine.store.add_chunk("Jonas Berg", "pii", ["My name is", "Best regards,"], label="name")
    engine.refresh()
    yield engine
    engine.store.close()
    runtime.reset()


def test_the_rest_of_a_value_the_user_began_typing_comes_as_one_chunk(phone_library):
    """Decoder.rest_of_value.  Bugs caught: a value begun by hand ("+47 912", "jonas.berg@") left to the
    model, which makes up the rest (or, before begun_by_hand, the whole value inserted again); the rest
    joined with a space ("jonas.berg@ example.org"); someone else's number completed with the user's;
    a word the user writes anyway ("Jonas", "Mar") taken for the start of a value."""
    engine, settings = phone_library, Settings()

    def pieces(text: str) -> list:
        return [(p.text, p.source) for p in engine.stream(settings.suggestion_request(text))]

    assert pieces("Hi Sam,\n\nCall me on +47 912")[0] == (" 34 567", "chunk")
    assert pieces("Hi Sam,\n\nWrite to jonas.berg@")[0] == ("example.org", "chunk")
    assert all(src != "chunk" for _t, src in pieces("Hi Sam,\n\nHer number is +47 912"))
    assert all(src != "chunk" for _t, src in pieces("Hi Sam,\n\nI met Jonas"))
    assert all(src != "chunk" for _t, src in pieces("Hi Sam,\n\nSee you in Mar"))


def test_a_sentence_snippet_is_not_completed_from_its_first_words(runtime):
    """ChunkMatcher.value_begun.  Bug caught: punctuation counted as a value's sign, so "Thanks," (a
    sign-off) got the rest of a snippet that starts with it; a dot inside a word ("jonas.b") does count."""
    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    snippet = engine.store.add_chunk("Thanks, and let me know if anything is unclear.", "snippet",
                                     ["Closing line"], label="closing line")
    email = engine.store.add_chunk("jonas.berg@example.org", "pii", ["My email is"], label="email")
    engine.refresh()
    try:
        assert engine.matcher.value_begun("The boiler is fixed.\n\nThanks,") is None
        assert engine.matcher.value_begun("Write to jonas.b") == (email, "erg@example.org")
        assert snippet != email
    finally:
        engine.store.close()
        runtime.reset()



def test_a_value_comes_after_the_word_the_model_was_sure_of(phone_library):
    """Decoder.value_after_lead_word.  Bug caught: "I can be reached by phone" -> the model's " at" was
    sure (words_go_on kept the phone out at the cursor), and after that word no value of the user's could
    come any more, so the suggestion was " at" and then nothing (an invented number, withheld).  Now the
    phone follows the model's word, as one highlighted chunk."""
    engine, settings = phone_library, Settings()
    phone = next(i for i, t in engine.store.chunk_texts(["pii"]).items() if t.startswith("+47"))
    out = engine.generate(settings.suggestion_request("Hi Sam,\n\nIf you need me over the weekend, I can be "
                                                      "reached by phone"), record_use=False)
    assert [s.chunk_id for s in out.spans] == [phone], out.text
    assert out.text[: out.spans[0].start].strip() == "at", out.text   # the model's one word, then the value
    # Where the model would break the line after its word, the value still stays on the line of " at".
    teo = Engine(runtime=engine.runtime, store=ChunkStore(":memory:"))
    email = teo.store.add_chunk("hello@teookafor.dev", "pii", ["My email is", "Email me at"], label="email")
    teo.store.add_chunk("+44 7700 900417", "pii", ["My number is", "Call me on"], label="phone")
    teo.refresh()
    out = teo.generate(settings.suggestion_request("Hey Nina,\n\nIf anything breaks this weekend, you can "
                                                      "reach me by email"), record_use=False)
    assert [s.chunk_id for s in out.spans] == [email], out.text
    assert out.text.startswith(" at hello@teookafor.dev"), out.text  # not " at\nhello@teookafor.dev"
    teo.store.close()


def test_only_a_lead_in_word_of_the_models_comes_before_a_value(library):
    """LEAD_WORDS and value_after_lead_word.  Bugs caught: any word the model was sure of let a value
    follow it, so "It now connects to your mailing" got " address jonas.berg@example.org." here (and in
    bench/prose.py, "Kind" got " regards Mara Lindqvist" on one line, "...your mailing" " list" and Teo's
    email); and after a lead word followed by ordinary prose, "As part" got " of Site Manager," without
    the check of the model's next word (it expects " the")."""
    engine, _ids = library
    for text in ("Hi Jo,\n\nIt now connects to your mailing",
                 "Hi Jo,\n\nThe new booking page goes live on Friday. As part"):
        out = engine.generate(Settings().suggestion_request(text), record_use=False)
        assert not out.spans, (text, out.text)


def test_after_the_models_lead_word_only_that_value_comes(library, runtime, monkeypatch):
    """Decoder.fits_here asks at_lead_word first.  Bug caught (review): after the model's " at" a value
    the user once typed after these words (a learned context) or another of their values could come too,
    although only the value proposed at the cursor was kept out there for the model's word."""
    engine, ids = library
    text = "Hi Jo,\n\nI can be reached by email"
    d = Decoder(runtime, engine.matcher, DecodeSettings())
    d._text, d._prompt_chars = text + " at", len(text)
    d._lead_word = (ids["email"], " at")
    monkeypatch.setattr(d, "writer_owns_slot", lambda *_: True)
    runtime.reset()
    logits = np.array(runtime.sync(runtime.tokenize(d._text), last=1, hidden=False).logits[-1], copy=True)

    def value(field: str, learned: bool = False) -> Proposal:
        return Proposal(ids[field], "pii", field, PROFILE[field][0], (), 0.9, 0.9, 1.0, someone_elses=0.0,
                        learned=learned)

    assert d.fits_here(value("email"), logits)                     # the value the word came before
    assert not d.fits_here(value("website"), logits)               # another value of the user's
    assert not d.fits_here(value("website", learned=True), logits)  # even one typed after these words


def test_a_value_may_follow_the_models_lead_word_where_none_was_proposed(runtime, monkeypatch):
    """Decoder.lead_word_ahead.  Bug caught: where the classifier was not sure enough at the cursor
    (bench/personal.py dev: "Quick intro: I'm on the product team", company 0.27 against job title 0.31), nothing was proposed
    there, so the model's " at" was one word of its own and no value could follow it; the suggestion was
    " at" and then a withheld "[Company Name]".  Now the model's lead word is noted and the company,
    read 0.99 after it, may come -- with the model expecting no ordinary word next, as after a lead word
    noted for a value."""
    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    company = engine.store.add_chunk("Tidewater Studios", "pii", ["My company is", "I'm at"], label="company")
    engine.store.add_chunk("Product Designer", "pii", ["My job title's", "My role is"], label="job title")
    engine.refresh()
    # bench/personal.py dev case p113 was "Quick intro: I'm on the product team"; since the classifier
    # learned first lines it reads the job title there, so the test writes its own sentence of that kind.
    text = "Quick intro: I lead the design team"

    def logits_after(words: str) -> np.ndarray:
        runtime.reset()
        return np.array(runtime.sync(runtime.tokenize(words), last=1, hidden=False).logits[-1], copy=True)

    try:
        d = Decoder(runtime, engine.matcher, DecodeSettings())
        d._text, d._prompt_chars = text, len(text)
        assert d.top_word(logits_after(text)) == " at" and d.lead_word_ahead(logits_after(text))
        assert not d.lead_word_ahead(logits_after("Hi Jo,\n\nThanks for the"))       # the model's next word leads nowhere
        d._someone_elses_here = True
        assert not d.lead_word_ahead(logits_after(text))                             # judged someone else's place
        d = Decoder(runtime, engine.matcher, DecodeSettings())
        d._text, d._prompt_chars = text + " at", len(text)
        monkeypatch.setattr(d, "writer_owns_slot", lambda *_: True)
        value = Proposal(company, "pii", "company", "Tidewater Studios", (), 0.99, 0.99, 1.0, someone_elses=0.0)
        after = logits_after(text + " at")
        assert not d.fits_here(value, after)             # the model's own word, and nothing noted before it
        d._lead_word = (None, " at")
        assert d.fits_here(value, after)
        # End to end, the editor's request: the model's word, then the company as one chunk.
        out = engine.generate(Settings().suggestion_request(text), record_use=False)
        assert [s.chunk_id for s in out.spans][:1] == [company], out.text
        assert out.text[: out.spans[0].start].strip() == "at", out.text
    finally:
        engine.store.close()
        runtime.reset()


SIGNATURE = {"name": ("Ingrid Solberg", ["My name is", "Best regards,"]),
             "job_title": ("Maintenance Supervisor", ["I work as", "My role:"]),
             "email": ("ingrid.solberg@fjellvik.example", ["My email is", "Email me at"])}


@pytest.fixture
def signature_library(runtime):
    def make(*fields: str):
        engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
        ids = {f: engine.store.add_chunk(SIGNATURE[f][0], "pii", SIGNATURE[f][1], label=f.replace("_", " "))
               for f in fields}
        engine.refresh()
        made.append(engine)
        return engine, ids
    made: list[Engine] = []
    yield make
    for engine in made:
        engine.store.close()
    runtime.reset()


def test_no_made_up_name_after_a_sign_off(signature_library):
    """Decoder.own_line_ahead.  Bug caught: with no name in the library, "Cheers,\\n" got the model's
    "John", "Kind regards,\\n" its "Dr. Michael K." -- a name the user would have to notice and delete,
    as an invented phone number would be.  Now the suggestion stops before the line and says what it
    stopped before; with a name in the library the name still comes there."""
    engine, _ids = signature_library("email", "job_title")
    for text in ("Hi Sam,\n\nThe boiler in block C is fixed.\n\nCheers,\n",
                 "Hi Sam,\n\nThe boiler in block C is fixed.\n\nKind regards,\n",
                 "Hi Sam,\n\nThe boiler in block C is fixed.\n\nBest,\n",
                 # the model leaves a blank line first, where the classifier's reading fades: "\nLiam" before
                 "Hi Nina,\n\nThe new page is live. Let me know what you think!\n\nCheers,\n"):
        out = engine.generate(Settings().suggestion_request(text), record_use=False)
        assert not any(ch.isalpha() for ch in out.text), (text, out.text)
        assert out.stats.withheld == "name", (text, out.stats.withheld)
    engine, ids = signature_library("name", "email")
    out = engine.generate(Settings().suggestion_request("Hi Sam,\n\nThe boiler in block C is fixed.\n\nCheers,\n"),
                          record_use=False)
    assert [s.chunk_id for s in out.spans] == [ids["name"]], out.text


def test_a_signature_line_comes_from_the_library_only_after_library_text(signature_library, runtime):
    """Decoder.library_value_for.  Below the user's name, inserted as a chunk, the classifier reads a
    job title next: the library's comes (bench/keystrokes.py dev: "Mara Lindqvist\\n" + the model's
    "Sailor," before).  After a line of the model's own ("Best,"), the place is its guess at where the
    email ends, so nothing of the user's is added (bench/prose.py dev: 16 more names there)."""
    engine, ids = signature_library("name", "job_title", "email")
    prompt = "Hi Sam,\n\nThe lift is working again.\n\nKind regards,\n"
    d = Decoder(runtime, engine.matcher, DecodeSettings())
    d._text, d._prompt_chars = prompt + SIGNATURE["name"][0] + "\n", len(prompt)
    d._used_chunks = {ids["name"]}
    runtime.reset()
    tokens = runtime.tokenize(d._text)
    out = runtime.sync(tokens, last=local_rows(len(tokens)), hidden=True, copy=True)
    state = _State(np.array(out.logits[-1], copy=True), out.hidden[-1], local_mean(out.hidden))
    word = runtime.tokenize(" Site", add_special=False)[0]            # any word the model would begin the line with
    assert d.own_line_ahead(word, state) == "job_title"
    assert d.library_value_for("job_title", state).chunk_id == ids["job_title"]
    d._model_wrote = True
    assert d.library_value_for("job_title", state) is None
    # End to end: the model signs off itself ("Best,"); its guess gets no name of the user's, and no made-up one.
    out = engine.generate(Settings().suggestion_request(
        "Hi Oskar,\n\nThe side gate is open from 8am. Let me know if you have any questions.\n"), record_use=False)
    assert out.text.strip() == "Best," and not out.spans and out.stats.withheld == "name", out.text
