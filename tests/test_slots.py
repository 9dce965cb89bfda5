"""The slot classifier and the gates around the user's own values, with the real default model."""
import json

import numpy as np

import pytest

from chunkwise.core import whose
from chunkwise.core import ChunkStore, Engine, GenerationRequest
from chunkwise.core import matching, naming, slots
from chunkwise.core.encoding import ModelStats
from chunkwise.core.settings import Settings
from tests.conftest import paper_profile


@pytest.fixture(scope="module")
def profile_engine(runtime):
    """The paper's profile, four contexts a field, as a user types them into the library."""
    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    ids = {}
    for field, entry in paper_profile().items():
        ids[field] = engine.store.add_chunk(entry["value"], "pii", entry["contexts"][:4], label=field)
    engine.refresh()
    yield engine, ids
    engine.store.close()
    runtime.reset()


def test_the_bundled_model_ships_a_classifier_that_matches_the_training_corpus(runtime):
    """Without it every new user trains for about 17 minutes at first start; a stale file (corpus edited,
    tools/train_slots.py not re-run) would be silently ignored and retrained."""
    source = f"{slots.source_id()}|{ModelStats.source_id()}"
    saved = slots.shipped(runtime.identity, source)
    assert saved is not None, "run tools/train_slots.py"
    clf = slots.SlotClassifier.from_bytes(*saved)
    assert {"phone", "email", "address", "iban", "none", "third_party"} <= set(clf.classes)


def test_every_shipped_classifier_matches_the_training_corpus():
    """Each model a classifier ships for (the bundled one, and Gemma 3 270M of the optional extra,
    which trains for about an hour on two cores) must have been trained on today's corpus and code:
    a stale file is silently ignored and that model's users train again.  Catches a corpus edit or a
    change in the classifier's inputs without re-running tools/train_slots.py for every model."""
    source = f"{slots.source_id()}|{ModelStats.source_id()}"
    files = sorted(slots.TRAINING_FILE.parent.glob("slots-*.npz"))
    assert len(files) >= 2, files                                 # the bundled model's and Gemma's
    for path in files:
        with np.load(path, allow_pickle=False) as data:
            assert str(data["source"]) == source, f"{path.name}: run tools/train_slots.py for its model"


def test_chunks_are_typed_by_their_own_contexts(profile_engine):
    """No rules on labels: the phone chunk is a phone because its contexts read like phone lead-ins."""
    engine, ids = profile_engine
    m = engine.matcher
    fields = m.slots.fields
    for field in ("phone", "email", "address", "github"):
        assert m.is_typed(ids[field])
        row = list(m._typed_ids).index(ids[field])
        assert fields[int(np.argmax(m._types[row]))] == field


@pytest.mark.parametrize("field, prompt", [
    ("phone", "Hi Tom,\n\nIf the line drops during the interview, please ring me directly at"),
    ("email", "Hi Tom,\n\nPlease send the signed contract to my inbox:"),
    ("address", "Hi Tom,\n\nThe parcel should be delivered to my office at"),
    # Lost at LEAD_IN_WORDS 0 while the writer probe alone decided (it does not count "our" as the
    # writer's); back since words that name nobody else leave the probe a lenient bar (core/whose.py).
    ("address", "Hi Tom,\n\nThe parcel should be delivered to our office at"),
])
def test_an_unstored_phrasing_gets_that_chunk(profile_engine, field, prompt):
    engine, ids = profile_engine
    out = engine.generate(GenerationRequest(prompt, max_tokens=24, stop=["\n\n"]), record_use=False)
    assert [s.chunk_id for s in out.spans][:1] == [ids[field]], out.text


@pytest.mark.parametrize("prompt", [
    "Hi Tom,\n\nRing the landlord about the boiler, his number is",
    "Hi Tom,\n\nMy sister will pick up the keys, so please text her on",
])
def test_someone_elses_detail_is_not_the_users(profile_engine, prompt):
    """Blocked by the classifier's third-party class (and the writer probe, wired in the test below)."""
    engine, ids = profile_engine
    out = engine.generate(GenerationRequest(prompt, max_tokens=24, stop=["\n\n"]), record_use=False)
    assert out.spans == [], out.text


@pytest.mark.parametrize("place", ["The museum is located at", "The garage is located at",
                                   "The town hall is located at"])
def test_a_place_that_reads_as_much_someone_elses_gets_no_user_value(profile_engine, monkeypatch, place):
    """Where no person is named the words say nothing and the writer probe lets these through (-0.24
    to -0.44 with " — that's", about -0.5 with the probe before it); the classifier reads the address at 0.53-0.62 but someone else's at 0.36-0.45, and the user's
    address went in.  With the gate (OWN_OVER_OTHERS) it stays out; the control switches the gate off
    and the address comes, so only the gate keeps it out.  (None of these sentences is in the training
    corpus or a bench set.)  The garage also needs the place to stay someone else's after the space the
    model writes next, where the classifier read the address at 0.75 and someone else's at 0.20 and the
    address went in one step late (Decoder.fits_here).  The writer's own address still goes where no one
    else's is read."""
    engine, ids = profile_engine
    request = lambda prompt: GenerationRequest(prompt, max_tokens=24, stop=["\n\n"])
    addresses = lambda prompt: [s.chunk_id for s in engine.generate(request(prompt), record_use=False).spans
                                if s.chunk_id == ids["address"]]
    monkeypatch.setattr(whose, "_PLACES", set())    # the museum and the garage are named places too: the gate alone
    assert addresses("Hi,\n\n" + place) == []
    monkeypatch.setattr(matching, "OWN_OVER_OTHERS", 0.0)
    assert addresses("Hi,\n\n" + place) == [ids["address"]]
    monkeypatch.undo()
    assert addresses("Hello,\n\nMy home address is") == [ids["address"]]


@pytest.mark.parametrize("prompt", ["While I'm travelling, contact me at", "Best to message me at"])
def test_two_of_the_users_fields_read_alike_get_neither(profile_engine, monkeypatch, prompt):
    """Where the classifier reads two of the user's fields nearly alike (email 0.56 and phone 0.41
    after "While I'm travelling, contact me at"; email 0.52 and phone 0.33 after "Best to message
    me at"), it cannot tell which one the user means, and the nearer winner went in: an email where
    the phone may belong.  Now neither goes in (matching.RIVAL_OVER).  The control switches the rule
    off and the best reading's value comes, so only the rule keeps it out; a clear reading ("For the
    next two weeks you can contact me at": email 0.83, the next field 0.08) still brings its value
    with the rule on.  (These phrasings are in no training corpus or bench set.)"""
    engine, ids = profile_engine
    values = lambda text: [s.chunk_id for s in engine.generate(
        GenerationRequest(text, max_tokens=12, stop=["\n\n"]), record_use=False).spans]
    assert values(prompt) == []
    assert values("For the next two weeks you can contact me at") == [ids["email"]]
    monkeypatch.setattr(matching, "RIVAL_OVER", 1.0)
    assert values(prompt)[:1] == [ids["email"]]


def test_a_value_left_out_is_no_rival(profile_engine):
    """A value the request leaves out (typed over in this sentence, feedback.PassedOver) is not asked
    for here, so it does not keep the other field out: after "While I'm travelling, contact me at"
    with the email left out, the phone comes.  Bug caught: the left-out email still counted as the
    phone's rival, and nothing of the user's could come at that place."""
    engine, ids = profile_engine
    request = GenerationRequest("While I'm travelling, contact me at", max_tokens=12, stop=["\n\n"],
                                leave_out=(ids["email"],))
    assert [s.chunk_id for s in engine.generate(request, record_use=False).spans] == [ids["phone"]]


def test_our_is_the_writers_where_the_user_speaks_of_that_value_as_their_groups(profile_engine, monkeypatch):
    """The paper's profile stores the phone with a business's lead-ins ("Should you need further
    information our number is", "Don't hesitate to give us a call at"), so a business's "our" before a
    phone is the user's own (whose.speaks_as_we; the writer probe counts " our" with " my").  Bug
    caught: the probe weighed " our" as nobody's and "our direct number is" read as someone else's
    (-2.24, under the bar), so a user writing for their own business did not get their number.  The
    control asks the probe without " our" on the same library: the number stays out."""
    engine, ids = profile_engine
    assert engine.matcher.chunk_info(ids["phone"])["group"]          # "our number is", "give us a call at"
    assert not engine.matcher.chunk_info(ids["name"])["group"]       # "My name is", "This is"
    request = GenerationRequest("For billing problems with the service, our direct number is", max_tokens=12,
                                stop=["\n\n"])
    values = lambda: [s.chunk_id for s in engine.generate(request, record_use=False).spans]
    assert values() == [ids["phone"]]
    plain = whose.writer_evidence
    monkeypatch.setattr(whose, "writer_evidence", lambda rt, group=False: plain(rt))
    assert values() == []


@pytest.fixture(scope="module")
def two_values_engine(runtime):
    """A user who keeps a work and a personal email, an office line and a mobile."""
    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    ids = {label: engine.store.add_chunk(value, "pii", contexts, label=label) for label, value, contexts in [
        ("work email", "ana.marin@northwind.com", ["My work email is", "At the office, email me at"]),
        ("personal email", "ana.m.1988@gmail.com", ["My personal email is", "For private things, email me at"]),
        ("office phone", "+49 30 1234567", ["My office number is", "Call our office on"]),
        ("mobile", "+49 151 2384 7712", ["My mobile is", "Text me on"])]}
    engine.refresh()
    yield engine, ids
    engine.store.close()
    runtime.reset()


def _values(engine, prompt: str) -> list[int]:
    out = engine.generate(GenerationRequest(prompt, max_tokens=12, stop=["\n\n"]), record_use=False)
    return [s.chunk_id for s in out.spans]


@pytest.mark.parametrize("prompt, which", [
    ("For anything private, my personal email is", "personal email"),
    ("Please use my work email:", "work email"),
    ("My gmail is", "personal email"),                  # a word of the value itself
    ("Text me on my mobile:", "mobile"),
    ("My office line is", "office phone"),
])
def test_of_two_values_of_one_field_the_one_the_sentence_speaks_of(two_values_engine, prompt, which):
    """The slot classifier reads both emails alike, so the typed route took the same one everywhere
    (the control below).  Now the words that set each apart (its lead-ins, label and value:
    ChunkMatcher.which_of) choose.  (Phrasings in no corpus or bench set.)"""
    engine, ids = two_values_engine
    assert _values(engine, prompt) == [ids[which]]


def test_the_classifiers_order_alone_took_the_work_email_for_the_personal_one(two_values_engine, monkeypatch):
    """The control of the test above: with the first of the classifier's order taken (which_of as it was
    before), "my personal email is" gets the work email and "Text me on my mobile:" the office line."""
    engine, ids = two_values_engine
    monkeypatch.setattr(matching.ChunkMatcher, "which_of", lambda self, chunk_ids, text: chunk_ids[0])
    assert _values(engine, "For anything private, my personal email is") == [ids["work email"]]
    assert _values(engine, "Text me on my mobile:") == [ids["office phone"]]


def test_a_business_line_and_a_mobile_each_come_in_their_own_voice(runtime):
    """A library with the office line stored in the business's voice and the mobile in the writer's own:
    "our direct number is" gets the office line (which_of by the words that set it apart, then the
    writer probe with that line's voice) and "You can text me on" the mobile.  Bug caught: the first of
    the two phones in the classifier's order was judged at every such place, and with the mobile's
    voice the business's "our" read as someone else's."""
    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    try:
        office = engine.store.add_chunk("+49 30 1234567", "pii", ["Our office number is", "Give us a call at"],
                                        label="office line")
        mobile = engine.store.add_chunk("+49 151 2384 7712", "pii", ["My mobile is", "Text me on"], label="mobile")
        engine.refresh()
        values = lambda text: [s.chunk_id for s in engine.generate(
            GenerationRequest(text, max_tokens=12, stop=["\n\n"]), record_use=False).spans]
        assert values("For billing problems with the service, our direct number is") == [office]
        assert values("You can text me on") == [mobile]
    finally:
        engine.store.close()
        runtime.reset()


def test_a_place_judged_someone_elses_stays_so_through_the_spaces_the_model_writes(runtime, monkeypatch):
    """Decoder.fits_here at the cursor and one space later.  Bug caught: after "The garage is located
    at" was ruled out (address 0.62 against someone else's 0.36), the model wrote a space and the
    reading there (0.75 against 0.20) let the address in one step late; the same for a place the
    writer probe ruled out.  A fresh decoder (the next suggestion) judges afresh, and a snippet
    sentence is still judged by its own reading."""
    from chunkwise.core.decoding import DecodeSettings, Decoder
    from chunkwise.core.matching import Proposal

    value = lambda match, theirs: Proposal(1, "pii", "address", "100 Innovation Drive", (), match, match, 1.0,
                                           someone_elses=theirs)
    sentence = Proposal(2, "snippet", "closing line", "Many thanks for your help.", (), 0.9, 0.9, 1.0,
                        someone_elses=0.0)

    def decoder(text: str, owns: bool) -> Decoder:
        d = Decoder(runtime, None, DecodeSettings())
        d._text, d._prompt_chars = text, len(text)
        monkeypatch.setattr(d, "writer_owns_slot", lambda *_: owns)
        return d

    monkeypatch.setattr(whose, "_PLACES", set())       # "the garage" names a place too: the readings alone
    d = decoder("Hi,\n\nThe garage is located at", owns=True)
    assert not d.fits_here(value(0.62, 0.36))           # as much someone else's
    d._text += " "
    assert not d.fits_here(value(0.75, 0.20))           # clear a space later, and still not the user's
    assert decoder("Hi,\n\nThe garage is located at ", owns=True).fits_here(value(0.75, 0.20))   # judged afresh

    d = decoder("Hi,\n\nFor anything urgent, ring", owns=False)
    assert not d.fits_here(value(0.9, 0.0))             # the writer probe says someone else's
    monkeypatch.setattr(d, "writer_owns_slot", lambda *_: True)
    d._text += " "
    assert not d.fits_here(value(0.9, 0.0))             # ... and that holds through the space

    d = decoder("Hi,\n\nThe report is attached.", owns=False)
    assert not d.fits_here(value(0.9, 0.0))
    d._text += " "
    assert d.fits_here(sentence)                        # a sentence at a clause start: its own judgement


def test_the_writer_probe_decides_whether_a_value_goes_in(profile_engine, monkeypatch):
    """Where the model says the detail is someone else's, the user's value stays out; otherwise it goes in."""
    engine, ids = profile_engine
    prompt = "Hi Tom,\n\nIf the line drops during the interview, please ring me directly at"
    monkeypatch.setattr(whose, "writer_evidence", lambda rt, group=False: -10.0)
    assert engine.generate(GenerationRequest(prompt, max_tokens=12), record_use=False).spans == []
    monkeypatch.setattr(whose, "writer_evidence", lambda rt, group=False: 10.0)
    out = engine.generate(GenerationRequest(prompt, max_tokens=12), record_use=False)
    assert [s.chunk_id for s in out.spans][:1] == [ids["phone"]]


def test_the_writer_gate_reads_the_bar_as_it_is_when_asked(monkeypatch):
    """The bar (whose.OWNER_MIN) is read when the gate is asked, so a bench or test that moves it moves
    the gate.  Bug caught: the bar bound as a default argument when the module loaded, so setting
    OWNER_MIN afterwards changed nothing."""
    evidence = lambda: 0.0                               # noqa: E731  (the probe's log-odds here)
    monkeypatch.setattr(whose, "OWNER_MIN", 1.0)
    assert not whose.writer_owns(None, evidence)
    monkeypatch.setattr(whose, "OWNER_MIN", -1.0)
    assert whose.writer_owns(None, evidence)
    assert not whose.writer_owns(None, evidence, bar=0.5)          # a bar given still wins
    assert not whose.writer_owns(whose.OTHERS, lambda: 10.0)       # and words naming someone else before it


@pytest.mark.parametrize("prompt", ["Hi,\n\nCheck out Sam's portfolio, it's at",
                                    "Hi,\n\nIf the line drops during the call, please ring her directly at",
                                    "Hi,\n\nFor anything urgent, my husband's mobile is",
                                    "Hi,\n\nIf I'm not around, call my colleague on",
                                    "Hi,\n\nClient site:",
                                    "Hi all,\n\nOut of hours, call the duty line:"])
def test_words_naming_someone_else_keep_the_users_value_out_whatever_the_model_says(profile_engine, monkeypatch,
                                                                                    prompt):
    """The lexical cue outranks the probe: "Sam's portfolio" is Sam's even where the model leans to "my".
    The control (cue switched off) shows the value would otherwise go in, so the test can fail.  The
    classifier's own someone-else's reading (OWN_OVER_OTHERS) is switched off: it keeps "ring her
    directly at" out too, and would hide a broken cue."""
    engine, ids = profile_engine
    monkeypatch.setattr(whose, "writer_evidence", lambda rt, group=False: 10.0)
    monkeypatch.setattr(matching, "OWN_OVER_OTHERS", 0.0)

    def users_values():
        out = engine.generate(GenerationRequest(prompt, max_tokens=12), record_use=False)
        return [s for s in out.spans if s.chunk_id in ids.values()]

    assert users_values() == []
    monkeypatch.setattr(whose, "person_cue", lambda text: None)
    assert users_values()


@pytest.mark.parametrize("text, cue", [
    ("Hi,\n\nIf the driver can't find the place, get him to give me a buzz on", whose.WRITER),  # "me" is nearer
    ("Ring the landlord about the boiler, his number's", whose.OTHERS),
    ("I have copied my co-author, whose e-mail address is", whose.OTHERS),
    ("Please contact my colleague Dr. Petra Wolff on", whose.OTHERS),       # "my" + a relation is not the writer
    ("For billing questions, call our billing team at", whose.OTHERS),
    ("Transfer the fee to the organisers\u2019 account, IBAN", whose.OTHERS),  # curly apostrophe, plural possessive
    ("Our company's tax number is", whose.WRITER),                           # the writer's own group
    ("Thanks for the call. Check out Sam's portfolio, it's at", whose.OTHERS),
    ("Sam's portfolio is great. Mine is at", whose.WRITER),                 # only the sentence being written counts
    ("Billing address:", None), ("Invoices go to", None), ("My name's", whose.WRITER),
    ("My contact number is", whose.WRITER), ("My desk phone is", whose.WRITER),   # not relations
    ("I've copied my co-author on", whose.OTHERS),                           # a hyphenated relation
    ("You can reach my friend Sam's office on", whose.OTHERS),              # "my" owns the friend, not Sam
    ("Come round any time, the flat's at", None), ("Email's best at", None),  # "'s" that is "is"
    ("We moved, our new company's address is", whose.WRITER),
    ("Client site:", whose.OTHERS), ("Hi,\n\nLandlord:", whose.OTHERS),     # a label naming a relation
    ("IT support hotline:", whose.OTHERS), ("Hi,\n\nClient details\nAddress:", None),  # only the label's own line
    ("Out of hours, call the duty line:", whose.OTHERS), ("Ring the help desk at", whose.OTHERS),  # the one called
    ("Call the office or me on", whose.WRITER),                             # the writer named nearer
    ("Please reply to the recruiter, not me, at", whose.OTHERS), ("Send it to Ana, not to me:", whose.OTHERS),  # "not me"
    ("If I miss your call, not to worry, ring me on", whose.WRITER), ("If not, call me on", whose.WRITER),
    ("So sorry, typo in my last message \u2014 the right email is", whose.WRITER),  # "message" a noun here
    # A clause that points back at a thing is its owner's, not the one it goes to; one that points at a thing
    # of no one's, or at someone else's, reads as before.
    ("Feel free to pass my email on to her, it's", whose.WRITER), ("Forward my address to them, which is", whose.WRITER),
    ("Sure, give my email to your sister, it's", whose.WRITER),
    ("Please update your records with my full name, which is", whose.WRITER),
    ("I gave her number to the courier, it's", whose.OTHERS), ("I've passed your number to him, it's", whose.OTHERS),
    ("Here's Tom's email, it's", whose.OTHERS), ("If you need to reach him, it's", whose.OTHERS),
    ("My husband and I share the home phone, which is", whose.WRITER),
    # The subject of a clause of time closed before the cursor's, after the writer named themselves, owns nothing.
    ("The courier should phone me when he arrives, on", whose.WRITER), ("Call me when she gets the keys, on", whose.WRITER),
    ("Please ask the driver to call when he gets there, at", whose.OTHERS),      # no writer before it
    ("Dotfiles are on my GitHub if you want them: ", whose.OTHERS),          # (as before: the clause is the label's)
    ("Sorry, wrong @, mine's actually", whose.WRITER), ("Check-in wants a reference, mine's", whose.WRITER),
    # Guards found in review: each gave the writer's in a first version of these rules.
    ("Please ring my old landlord, it's", whose.OTHERS), ("I'm staying at my aunt's, it's", whose.OTHERS),
    ("I rang Sarah when she was at work, on", whose.OTHERS), ("A friend of mine's number is", whose.OTHERS),
    ("I've forwarded my request to her manager, it's", whose.OTHERS),
])
def test_person_cue_names_whose_detail_comes_next(text, cue):
    assert whose.person_cue(text) == cue


def test_my_in_the_last_words_outweighs_the_classifiers_someone_elses_reading(profile_engine, monkeypatch):
    """After a salutation that names the reader, "Regarding the customs form, my contact number is"
    reads someone else's detail about as likely as the user's phone (OWN_OVER_OTHERS), so the phone
    did not come though the writer claims it in so many words (whose.says_my; the paper dev set's
    "Hello Mr. Chen, ... my contact number is").  Control: with says_my off it does not come; and
    "my colleague's", "my dentist's" (a possessive after "my") and "my hotel" name someone else or a
    place, so says_my stays off there and the classifier's reading still counts."""
    engine, ids = profile_engine
    prompt = "Hi Mr. Ito,\n\nRegarding the customs form, my contact number is"
    values = lambda: [s.chunk_id for s in engine.generate(GenerationRequest(prompt, max_tokens=12, stop=["\n\n"]),
                                                          record_use=False).spans]
    assert values() == [ids["phone"]]
    for theirs in ("Hi Mr. Ito,\n\nRegarding the customs form, my colleague's number is",
                   "Hi Mr. Ito,\n\nRegarding the customs form, my dentist's number is",   # a possessive after "my"
                   "Hi Mr. Ito,\n\nRegarding the customs form, my hotel is at"):         # a place after "my"
        assert not whose.says_my(theirs), theirs
    monkeypatch.setattr(whose, "says_my", lambda text: False)
    assert values() == []


@pytest.mark.parametrize("text, theirs", [
    ("Hotel address:", True), ("Museum website:", True),                          # a label naming the place
    ("The term dates are on the school website at", True),
    ("I'm staying at the Grand Hotel this week, the address is", True),          # the hotel is nearer than "I'm"
    ("At the hotel, ring me on", False),                                          # "me" is nearer than the hotel
    ("Our clinic is located at", False), ("Send the refund to my bank account,", False),   # the writer's own
    ("Billing address:", False), ("My personal mobile, in case the office is shut, is", False),  # no place named
])
def test_names_a_place_says_whose_contact_detail_comes_next(text, theirs):
    """Bug caught: a place named nearer the cursor than any person ("the Grand Hotel", after "I'm") did
    not count, so the writer's address went where the hotel's belongs; or "my bank", "our clinic" counted
    as someone else's."""
    assert whose.names_a_place(text) is theirs


def test_a_place_named_nearer_than_the_writer_keeps_the_users_address_out(profile_engine, monkeypatch):
    """"I'm staying at the Grand Hotel this week, the address is": the words name the writer ("I'm"),
    the probe says mine (+0.5) and the classifier reads the address at 0.67 against someone else's 0.17,
    so the user's address went where the hotel's belongs.  The place named nearer the cursor keeps it
    out; the control empties the list of places and the address comes, so only that cue keeps it out.
    "At the hotel, ring me on" names the writer nearer and still gets the phone.  (Sentences written for
    this test, in no bench set or corpus.)"""
    engine, ids = profile_engine
    request = lambda prompt: GenerationRequest(prompt, max_tokens=24, stop=["\n\n"])
    values = lambda prompt: [s.chunk_id for s in engine.generate(request(prompt), record_use=False).spans
                             if s.chunk_id in ids.values()]
    hotel = "Hi Jo,\n\nI'm staying at the Grand Hotel this week, the address is"
    assert values(hotel) == []
    assert values("Hi Jo,\n\nAt the hotel, ring me on") == [ids["phone"]]
    monkeypatch.setattr(whose, "_PLACES", set())
    assert values(hotel) == [ids["address"]]


@pytest.mark.parametrize("text, bare", [
    ("Hi,\n\nBilling address:", True), ("Links\nWebsite: ", True), ("Kind regards,\nAna\nMobile:", True),
    ("Ship to:", False), ("Plumber:", False), ("Thanks,\nAna\n\nName for the reservation:", False),
    ("Client details\nPhone:", False), ("Hotel address:", False), ("Tom's mobile:", False),
    ("Your email address:", False), ("Emergency contact\nPhone:", False), ("Account name: Greenway\nIBAN:", False),
    ("Please send the signed copy to this address:", False), ("Hi,\n\nCall me on", False),
    ("Name:\nEmail:\nPhone:", True), ("Address:\nLindenstraße 42\nPhone:", False),
    ("PO number:", False), ("Hi,\n\nMobile number:", False), ("Hi,\n\nMobile (optional):", True),
    ("Phone (my partner):", False)])          # the note read for whose it is, not only cut off
def test_form_label_is_a_bare_label_in_a_block_that_names_nobody_else(text, bare):
    """whose.form_label (sentences written for this test).  Bugs caught: a label that names no contact
    field ("Ship to:", someone's role "Plumber:") or a sentence ending in ":" skipping the probe; a
    label under a heading that names someone else ("Client details"), a place or a possessive in the
    label, the reader's ("Your email address:"), someone else's role ("Emergency contact"), or a block
    with a line filled in already (on its line or the line below), taken for the writer's own label;
    and empty labels above ("Name:\nEmail:") read as filled in, so a blank form's last label was not;
    a label ending in "number" ("PO number:"), which names no contact field, skipping the probe;
    a bracketed note after the field ("Mobile (optional):") hiding it."""
    assert whose.form_label(text) is bare


def test_a_bare_form_label_takes_the_users_value_whatever_the_probe_says(profile_engine, monkeypatch):
    """After "Billing address: (that is" (the probe before " — that's") the model expected " your", as in a form (dev split: probe
    -2.18 with the address read at 0.93, bench/out/slot_reading-dev-cases.txt), so the user's own
    label went empty.  With the probe saying someone else's, the bare label still gets the address;
    the same label under a heading that names a client does not (person_cue names nobody there, so
    only form_label tells them apart), and neither does the bare label once form_label is switched
    off (the control: only that rule lets it in)."""
    engine, ids = profile_engine
    monkeypatch.setattr(whose, "writer_evidence", lambda rt, group=False: -10.0)
    request = lambda prompt: GenerationRequest(prompt, max_tokens=16, stop=["\n\n"])
    values = lambda prompt: [s.chunk_id for s in engine.generate(request(prompt), record_use=False).spans
                             if s.chunk_id in ids.values()]
    assert values("Hi Jo,\n\nBilling address:") == [ids["address"]]
    assert values("Hi Jo,\n\nWebsite (if any):") == [ids["website"]]      # a bracketed note after the field
    assert whose.person_cue("Hi Jo,\n\nClient details\nAddress:") is None
    assert values("Hi Jo,\n\nClient details\nAddress:") == []
    monkeypatch.setattr(whose, "form_label", lambda text: False)
    assert values("Hi Jo,\n\nBilling address:") == []


@pytest.mark.parametrize("text, fields", [
    ("Invoice address:", {"address", "postal_code"}), ("Hi,\n\nEmail address:", {"email"}),
    ("Web address:", {"website"}), ("Kind regards,\nAna\nMobile: ", {"phone"}),
    ("Booking number:", {"booking_reference", "tax_id", "iban"}), ("Hi,\n\nMobile number:", {"phone"}),
    ("Work no.:", {"phone"}), ("Here's my number:", None), ("My number:", None),
    ("Contact:", None), ("Please confirm your delivery address", None), ("Web or email address:", {"email"}),
    ("IP address:", None), ("Website (if any):", {"website"}), ("Phone (work):", {"phone"}),
    ("Tel. no. (daytime):", {"phone"}), ("Address (email):", None)])   # a note naming a field stays
def test_a_form_label_names_its_field_by_its_last_word(text, fields):
    """slots.label_fields.  Bugs caught: "Email address:" read as a postal address (the qualifier, the
    nearest one first), an IP address taken for a postal one, a booking number left open to a phone
    number, a mobile or work number closed to one, "Here's my number:" or a bare "My number:"
    constrained either way, a sentence taken for a label, a bracketed note
    after the field ("Website (if any):") taken for its last word, or one naming another field
    ("Address (email):") cut off, so a postal address went in where the email was asked for."""
    assert slots.label_fields(text) == fields


def typed_route_reading(profile_engine, monkeypatch, readings: dict):
    """The chunk the typed route (ChunkMatcher.typed_proposal) offers after a text, with the slot
    classifier made to read *readings* (chunk id -> agreement) and no one else's detail."""
    m = profile_engine[0].matcher
    monkeypatch.setattr(m, "type_readings", lambda *a, **k: (readings, 0.0))
    state = (np.zeros(m.dim, np.float32), np.zeros(m.dim, np.float32))
    return lambda text: getattr(m.typed_proposal(*state, text), "chunk_id", None)


def test_a_form_label_keeps_a_value_of_another_field_out(profile_engine, monkeypatch):
    """"Invoice address:" read as an email first, an address second (bench/entities.py dev), so the
    user's email went where their address belongs.  With the classifier reading email first, the
    typed route offers no email after "Invoice address:" (nor the address, read below the cut), but
    does after "Contact:", whose last word names no field; with label_fields off, the email comes
    after "Invoice address:" too (the control)."""
    ids = profile_engine[1]
    offered = typed_route_reading(profile_engine, monkeypatch, {ids["email"]: 0.9, ids["address"]: 0.2})
    assert offered("Hi,\n\nInvoice address:") is None
    assert offered("Hi,\n\nContact:") == ids["email"]
    monkeypatch.setattr(naming, "label_fields", lambda text: None)
    assert offered("Hi,\n\nInvoice address:") == ids["email"]


def test_a_number_label_takes_the_users_phone_only_after_a_word_for_a_phone(profile_engine, monkeypatch):
    """Read as a draft's first line, "PO number:" got the user's phone (bench/personal.py dev, once the
    classifier learned first lines).  With the classifier reading phone, the typed route offers no
    phone after "Order number:" but does after "Mobile number:"; with number labels left open (the
    control), "Order number:" gets it too."""
    ids = profile_engine[1]
    offered = typed_route_reading(profile_engine, monkeypatch, {ids["phone"]: 0.9})
    assert offered("Order number:") is None
    assert offered("Mobile number:") == ids["phone"]
    monkeypatch.setattr(slots, "number_label_fields", lambda qualifiers: None)
    assert offered("Order number:") == ids["phone"]


@pytest.mark.parametrize("field, label", [("phone", "Mobile:"), ("phone", "Phone:"), ("website", "Web:")])
def test_a_draft_that_opens_with_a_bare_label_gets_that_value(profile_engine, field, label):
    """A draft's first line sits a few tokens after BOS, where the classifier, trained only on packed
    passes, read "Phone:" as ordinary text (none 0.42, phone 0.24) and the model wrote " 100,".  Since
    it also learns every fragment alone (slots.first_line_features) the label takes the value."""
    engine, ids = profile_engine
    out = engine.generate(GenerationRequest(label, max_tokens=16, stop=["\n\n"]), record_use=False)
    assert [s.chunk_id for s in out.spans][:1] == [ids[field]], out.text


@pytest.mark.parametrize("opening", ["Hi all,", "Dear Sir or Madam,", "Hello team,\n"])
def test_no_name_of_the_users_below_or_beside_a_salutation(runtime, opening):
    """Read first-line positions too, the classifier took "Hi all," + line break for a sign-off and the
    library's name came below it (bench/prose.py dev: "Hi all," -> "\nMara Lindqvist", four times).
    The classifier's reading is set to the name here, so only whose.after_salutation keeps it out;
    "Kind regards," is the control, where the name belongs."""
    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    name = engine.store.add_chunk("Mara Lindqvist", "pii", ["Kind regards,", "Best,", "My name is"], label="name")
    engine.refresh()
    try:
        m = engine.matcher
        m.type_readings = lambda *a, **k: ({name: 0.95}, 0.0)
        m.value_ahead = lambda *a, **k: "name"
        names = lambda text: [s.chunk_id for s in engine.generate(
            GenerationRequest(text, max_tokens=12, stop=["\n\n"]), record_use=False).spans]
        assert name not in names(opening)
        assert names("Thanks for the update.\n\nKind regards,") == [name]
    finally:
        engine.store.close()
        runtime.reset()


def test_only_a_places_contact_details_are_kept_out(runtime, monkeypatch):
    """Decoder.a_places_detail and fits_here with a library of typed chunks.  Bugs caught: the cue
    judging by the value's shape, so that "Bank details:" (a context the user stored for their IBAN,
    which looks like a phone number) kept the user's own IBAN out; a booking reference after "Hotel
    confirmation:" kept out; and a refused contact detail making the whole place someone else's, so
    that the booking reference proposed next at the same cursor was refused too."""
    from chunkwise.core.decoding import DecodeSettings, Decoder
    from chunkwise.core.matching import Proposal

    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    ids = {"iban": engine.store.add_chunk("DE85 1007 0000 0532 0130 57", "pii", ["My IBAN is", "Bank details:"],
                                          label="IBAN"),
           "phone": engine.store.add_chunk("+49 151 2384 7712", "pii", ["My phone number is", "Call me on"],
                                           label="phone"),
           "ref": engine.store.add_chunk("48213977", "pii", ["My booking reference is", "Booking ref:"],
                                         label="booking reference")}
    engine.refresh()
    assert engine.matcher.typed_field(ids["iban"]) == "iban"
    assert engine.matcher.typed_field(ids["ref"]) == "booking_reference"
    value = lambda key: Proposal(ids[key], "pii", key, engine.matcher.chunk_info(ids[key])["text"], (),
                                 0.9, 0.9, 1.0, someone_elses=0.0)

    def decoder(text: str) -> Decoder:
        d = Decoder(runtime, engine.matcher, DecodeSettings())
        d._text, d._prompt_chars = text, len(text)
        monkeypatch.setattr(d, "writer_owns_slot", lambda *_: True)
        return d

    assert decoder("Bank details:").fits_here(value("iban"))
    d = decoder("Hotel confirmation:")
    assert not d.fits_here(value("phone"))               # the hotel's phone, not the user's
    assert d.fits_here(value("ref"))                     # ... but the user's booking reference, at the same place
    assert decoder("Hotel front desk:").a_places_detail(value("phone"))
    engine.store.close()
    runtime.reset()


@pytest.mark.parametrize("place, contexts", [("Hi,\n\nMy home address is", ["Where to reach me:", "Find me at"]),
                                             ("Book a time with me here:", ["Get in touch:", "Find me here:"])])
def test_a_phone_number_never_reads_as_a_field_its_shape_cannot_fill(runtime, monkeypatch, place, contexts):
    """A phone number stored with contexts that do not say which detail they lead into ("Where to
    reach me:", "Find me at") reads as an address (0.98 here), or as a calendar link ("Get in touch:"),
    so with no address or calendar link stored it cleared the cut (0.35) where the user's home address
    or a booking link comes next: the wrong field.  Its shape (core/slots.py shape_fields) rules those
    fields out.  The control reads the contexts without the shape and the phone clears the cut again,
    so only the shape keeps it out.  (With "Phone:" and "Call me at" the classifier read an address
    and a calendar link before it learned first lines; now it reads them as a phone's.)"""
    from chunkwise.core import matching_state
    from chunkwise.core.encoding import local_mean, local_rows

    def agreement() -> tuple[float, float]:
        engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
        cid = engine.store.add_chunk("(415) 555-0199", "pii", contexts, label="phone")
        engine.refresh()
        runtime.reset()
        tokens = runtime.tokenize(place, add_special=True)
        out = runtime.sync(tokens, last=local_rows(len(tokens)), hidden=True, copy=True)
        score = engine.matcher.type_agreement(out.hidden[-1], local_mean(out.hidden), place)[cid]
        cut = engine.matcher.type_cutoff
        engine.store.close()
        runtime.reset()
        return score, cut

    score, cut = agreement()
    assert score < cut / 10
    monkeypatch.setattr(matching_state, "_within_shape", lambda reading, fields, text, kind="pii": reading)
    score, cut = agreement()
    assert score > cut


def test_the_matching_state_examples_hold():
    from chunkwise.core import matching_state
    import doctest

    result = doctest.testmod(matching_state)
    assert result.failed == 0 and result.attempted >= 2


def test_the_whose_module_examples_hold():
    import doctest

    result = doctest.testmod(whose)
    assert result.failed == 0 and result.attempted >= 4


def test_writer_evidence_tells_mine_from_hers(runtime):
    def evidence(text):
        runtime.reset()
        runtime.sync(runtime.tokenize(text), last=1, hidden=False)
        before = runtime.tokens
        value = whose.writer_evidence(runtime)
        assert runtime.tokens == before        # a peek leaves the cache as it was
        return value

    assert evidence("You can call me at") > evidence("You can call my colleague Priya, her number is") + 1.0
    runtime.reset()


def test_a_trained_classifier_is_kept_in_the_store(tmp_path, runtime, monkeypatch):
    """A model without a shipped classifier trains once and reads it back from the store next time."""
    calls = []
    real_train = slots.train
    monkeypatch.setattr(slots, "shipped", lambda identity, source: None)
    monkeypatch.setattr(slots, "training_items", lambda: [("My phone number is", "phone"), ("Email me at", "email"),
                                                          ("Her number is", "third_party"), ("I hope", "none")])
    monkeypatch.setattr(slots, "train", lambda *a, **k: calls.append(1) or real_train(*a, **k))
    import chunkwise.core.engine as engine_module
    monkeypatch.setattr(engine_module, "_slots_cache", {})
    db = tmp_path / "c.db"
    first = Engine(runtime=runtime, store=ChunkStore(db))
    assert first.matcher.slots is not None and calls == [1]
    first.store.close()
    monkeypatch.setattr(engine_module, "_slots_cache", {})
    second = Engine(runtime=runtime, store=ChunkStore(db))
    assert second.matcher.slots.classes == first.matcher.slots.classes and calls == [1]
    # The same classifier read back, not only the same names (a weight laid out wrongly in to_bytes /
    # from_bytes would still load and give other readings).
    x = np.random.default_rng(0).standard_normal((4, first.matcher.slots.weights.shape[1])).astype(np.float32)
    np.testing.assert_allclose(second.matcher.slots.predict(x), first.matcher.slots.predict(x), atol=1e-6)
    second.store.close()


def test_the_slot_module_examples_hold():
    import doctest

    result = doctest.testmod(slots)
    assert result.failed == 0 and result.attempted >= 4     # the examples are there and hold


def test_the_matching_module_examples_hold():
    """Proposal.reads_as_someone_elses on its own: a typed reading close to someone else's is ruled
    out, a clear one is not, and a proposal that never read it (retrieval path, learned) is never ruled
    out by it; type_cutoff's curve.  (Catches the gate comparing the wrong readings, or blocking
    proposals of other routes.)"""
    import doctest

    result = doctest.testmod(matching)
    assert result.failed == 0 and result.attempted >= 5


def test_a_store_with_only_untyped_chunks_loads(runtime):
    """A snippet whose contexts read as no field type: nothing is typed, and matching still works."""
    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    cid = engine.store.add_chunk("Kind regards, Sam", "snippet", ["Thanks again for your help."])
    engine.refresh()
    assert len(engine.matcher) == 1 and not engine.matcher.is_typed(cid)
    engine.generate(GenerationRequest("Thanks again for your help.", max_tokens=8), record_use=False)
    engine.store.close()


def test_model_measured_for_another_store_is_kept_in_this_one(tmp_path, runtime, monkeypatch):
    """Bug caught: the statistics measured in this process (say for a locked library's in-memory
    stand-in) came from the process cache and were never written to the library opened after the
    unlock, so every later start measured the model again (8-9 s here).  A model with nothing
    shipped (any model but the bundled one) is what takes this path."""
    from chunkwise.core import engine as engine_module

    monkeypatch.setattr(ModelStats, "shipped", classmethod(lambda cls, identity: None))
    monkeypatch.setattr(engine_module, "_stats_cache", {})
    Engine(runtime=runtime, store=ChunkStore(":memory:")).matcher       # measured in this process
    db = tmp_path / "after-unlock.db"
    engine = Engine(runtime=runtime, store=ChunkStore(db))
    engine.matcher
    engine.store.close()
    with ChunkStore(db) as store:
        assert store.has_model_stats(engine.model_id, ModelStats.source_id())


def test_a_first_start_with_the_bundled_model_measures_nothing(tmp_path, runtime, monkeypatch):
    """Issue 14.9: the bundled model's statistics ship with Chunkwise, so a new library starts
    without the 8-9 s "Measuring the model".  Bugs caught: the file not shipped or not packaged,
    shipped for another background text (then silently ignored), or stale against what the
    model measures now (the classifier and the thresholds would then read other vectors)."""
    from chunkwise.core import engine as engine_module

    shipped = ModelStats.shipped(runtime.identity)
    assert shipped is not None, "run tools/train_slots.py --only stats"
    fresh = ModelStats.compute(runtime)
    # Bounds between what another CPU gives and what a stale file gives.  The same build on a CPU
    # without AVX-512 read the states differently in the last digits: the mean 0.14% off (by norm),
    # the whitener 1.8%, whitened vectors at cosine 0.9997, background rows at 0.994 or more (half
    # precision too).  Statistics from another sample of the same text (every paragraph, or every
    # third, instead of every second) were 4.4-8.1% off in the mean, 18-28% in the whitener, and
    # whitened vectors at cosine 0.97-0.90 (measured in this session's scratch run).
    off = lambda a, b: np.linalg.norm(a - b) / np.linalg.norm(b)
    assert off(shipped.mean, fresh.mean) < 0.01 and off(shipped.whitener, fresh.whitener) < 0.06
    runtime.reset()
    hidden = runtime.eval(runtime.tokenize("Thanks for the call, I will send the contract to"), outputs="all").hidden
    runtime.reset()
    assert np.einsum("ij,ij->i", shipped.transform(hidden), fresh.transform(hidden)).min() > 0.995
    assert shipped.background.shape == fresh.background.shape
    d = fresh.background.shape[1] // 2                                     # context half, local half
    for half in (slice(0, d), slice(d, None)):
        assert np.einsum("ij,ij->i", shipped.background[:, half], fresh.background[:, half]).min() > 0.98

    monkeypatch.setattr(engine_module, "_stats_cache", {})
    monkeypatch.setattr(ModelStats, "compute", classmethod(lambda cls, *a, **k: pytest.fail("measured")))
    steps = []
    engine = Engine(runtime=runtime, store=ChunkStore(tmp_path / "new.db"), progress=lambda d, t: steps.append(d))
    assert len(engine.matcher) == 0 and engine.matcher.slots is not None
    assert steps == []
    engine.store.close()


def test_a_detail_ruled_out_by_whose_it_is_leaves_the_place_to_a_mined_phrase(make_engine):
    """Bug caught: where the classifier expected the user's phone but the sentence is about someone
    else's, the rejected proposal also blocked the retrieval path, so the phrase learned from the
    user's mail for that very place never came (bench/keystrokes.py: chunks' share of accepted
    characters fell from 67% to 51% on dev when typed chunks fired more often).  Checked to fail on
    fa7dac0.  A mined phrase that carries a detail does not get that place."""
    from chunkwise.core import GenerationRequest

    engine = make_engine()
    phone = engine.store.add_chunk("+44 20 7946 0321", "pii", ["My phone number is", "You can call me on"],
                                   label="phone")
    phrase = engine.store.add_chunk("on the team contact sheet", "teacher", ["Her phone number is", "His phone number is"])
    engine.refresh()

    def spans(text):
        out = engine.generate(GenerationRequest(text, max_tokens=10, stop=["\n\n"]), record_use=False)
        return [s.chunk_id for s in out.spans]

    place = "Hi Sam,\n\nThanks for the update. Her phone number is"
    assert engine.matcher.is_typed(phone)    # the phone goes by the typed route (offered there, then ruled out:
                                             # checked by hand on fa7dac0, where this place got nothing)
    assert spans(place) == [phrase]
    assert spans("Hi,\n\nAny questions? You can call me on") == [phone]     # the user's own place keeps the detail
    engine.store.update_chunk(phrase, text="on 07700 900123 most days")
    engine.refresh()
    assert spans(place) == []


@pytest.mark.parametrize("text", ["Should you need me, my mobile is", "", "   ", "été ... 42!", "a b c d e f g h"])
def test_the_decode_time_classifier_reads_what_training_reads(runtime, text):
    """SlotClassifier.predict_one (a step's whitened rows, the words' columns only) gives what
    predict(features(...)) gives, as the classifier was trained: a wrong column offset, a lost
    normalisation or a words hash that differs from training's would move every field's probability."""
    stats = ModelStats.shipped(runtime.identity)
    classifier = slots.SlotClassifier.from_bytes(*slots.shipped(runtime.identity,
                                                                f"{slots.source_id()}|{ModelStats.source_id()}"))
    rng = np.random.default_rng(len(text))
    hidden, local = (stats.mean + rng.standard_normal((2, runtime.n_embd), dtype=np.float32))
    expected = classifier.predict(slots.features(stats, hidden[None], local[None], [text]))[0]
    got = classifier.predict_one(stats.transform(np.stack([hidden, local])), text)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert abs(float(got.sum()) - 1.0) < 1e-5


@pytest.fixture(scope="module")
def snippet_engine(runtime):
    """A library with a closing-line snippet and an availability snippet, contexts as a user types them."""
    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    ids = {"closing": engine.store.add_chunk("Many thanks, and do get in touch if anything is unclear.", "snippet",
                                             ["Closing line", "Before my sign-off"], label="closing line"),
           "availability": engine.store.add_chunk("I work Monday to Wednesday, 8:30 to 16:00.", "snippet",
                                                  ["My working days", "When I can be reached"], label="availability")}
    engine.refresh()
    yield engine, ids
    engine.store.close()
    runtime.reset()


def _snippets_at(engine, ids, text) -> list[int]:
    out = engine.generate(Settings().suggestion_request(text), record_use=False)
    return [s.chunk_id for s in out.spans if s.chunk_id in ids.values()]


@pytest.mark.parametrize("text", [
    "Dear Ms. Okonkwo,\n\n",
    "Hi Jonas,\n\n",
    "Hey Priya!\n",
    "Good morning all,\n\n",
])
def test_no_snippet_sentence_right_after_the_greeting(snippet_engine, text):
    """Bug caught (bench/paragraphs.py): at the start of a line, which passes the clause-start gate by
    definition, a snippet sentence needed only SENTENCE_CUT of the type cut, so the closing line came
    right after "Hi Jonas," at 9 of 18 such places on the dev emails.  Checked to fail without the
    line-start condition in ChunkMatcher.typed_proposal.  (After a body paragraph the closing line is
    still offered: docs/benchmarks.md.)"""
    engine, ids = snippet_engine
    assert _snippets_at(engine, ids, text) == []


def test_the_closing_line_still_comes_where_an_email_is_done(snippet_engine):
    """The other side of the fix above: where the email's content is finished, the closing-line
    snippet still comes, so the test above cannot pass by never offering it."""
    engine, ids = snippet_engine
    done = ["Hi Jonas,\n\nThe corrected invoice is attached. The VAT line now shows 19% as we agreed, and "
            "the total is unchanged.\n\n",
            "Dear Ms. Okonkwo,\n\nI confirm that the workshop room is booked for Thursday from 10:00, with a "
            "projector and coffee for twelve.\n\n"]
    assert any(_snippets_at(engine, ids, text) == [ids["closing"]] for text in done)


def test_the_writer_probe_tells_terse_own_labels_from_an_organisations_detail(runtime, monkeypatch):
    """The probe "(that is my|his|her|their|your" read terse labels of the writer's own ("Bill to:"
    -1.62) below an organisation's detail ("The club's membership form can be downloaded at" -0.23), so
    no bar could keep the one and drop the other; " — that's" separates them, and the own labels pass
    its bar (they read 0.05 or more, the organisations' -0.86 or less; bench/probes.py: AUC
    0.885 against 0.808 on the dev sets).  Phrasings written for this test, in no bench set, and none
    a form label the product would take without asking the probe (whose.form_label)."""
    own = ["Hi Lena,\n\nPost the parcel to:", "Send the keys to:", "Bill to:", "Name for the booking:"]
    others = ["The club's membership form can be downloaded at", "The dentist's surgery can be reached on",
              "Ring the council's housing office on", "The airline's baggage desk is at"]
    assert not any(map(whose.form_label, own))

    def evidence(text):
        runtime.reset()
        runtime.sync(runtime.tokenize(text), last=1, hidden=False)
        return whose.writer_evidence(runtime)

    mine = min(map(evidence, own))
    assert mine > max(map(evidence, others)) and mine > whose.OWNER_MIN
    monkeypatch.setattr(whose, "OWNER_PROBE", " (that is")      # the control: the old probe cannot
    assert min(map(evidence, own)) < max(map(evidence, others))
    runtime.reset()


def test_a_terse_label_under_a_greeting_gets_the_users_address(make_engine, monkeypatch):
    """The editor's path for a library with a home address and an email (tools/xvfb_writer_probe.sh):
    after "Hi,\n\nShip to:" the probe before " — that's" read -2.25, under its bar, and the model
    wrote " 1000 feet"; the address comes now (-0.66, bench/out/probes-quoted.txt).  Catches the old
    probe or a bar above the reading; the control puts the old probe back (under either bar: -1.5
    now, -2.0 with it before)."""
    engine = make_engine()
    home = engine.store.add_chunk("12 Rue des Lilas, 69003 Lyon, France", "pii",
                                  ["My home address is", "Please send it to my flat at", "I live at"], label="home address")
    engine.store.add_chunk("claire.dubois@posteo.fr", "pii", ["My email is", "You can email me at", "Write to me at"],
                           label="email")
    engine.refresh()
    values = lambda: [s.chunk_id for s in engine.generate(
        GenerationRequest("Hi,\n\nShip to:", max_tokens=16, stop=["\n\n"]), record_use=False).spans]
    assert values() == [home]
    monkeypatch.setattr(whose, "OWNER_PROBE", " (that is")
    assert values() == []


@pytest.fixture(scope="module")
def labels_engine(runtime):
    """A library typed the way many users type one: bare labels and short lead-ins, with an availability
    snippet beside the contact details (values invented for the test)."""
    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    add = engine.store.add_chunk
    ids = {"phone": add("(415) 555-0188", "pii", ["Phone:", "Call me at"], label="phone"),
           "email": add("jo.reyes@harborline.org", "pii", ["Email:", "Email me at"], label="email"),
           "hours": add("Around Mon–Thu, 9am–1pm Pacific.", "snippet", ["My hours", "When I'm available"],
                        label="availability"),
           "address": add("77 Pier Lane, Oakland, CA 94607", "pii", ["My address is", "Mailing address"],
                          label="address")}
    engine.refresh()
    yield engine, ids
    engine.store.close()
    runtime.reset()


def test_the_users_own_lead_in_words_settle_two_fields_read_alike(labels_engine, monkeypatch):
    """After "Call me:" the classifier reads the phone first and the availability snippet nearly as
    likely, so the rival rule (RIVAL_OVER) kept both out; the user's own lead-in for the phone says
    "call" and the snippet's say nothing of it (ChunkMatcher.named_by_lead_ins), so the phone comes.
    The control takes the words away and the phone is kept out again: only the words let it in."""
    engine, ids = labels_engine
    assert _values(engine, "Call me:")[:1] == [ids["phone"]]
    monkeypatch.setattr(matching.ChunkMatcher, "named_by_lead_ins", lambda self, chunk_id, rivals, text: False)
    assert ids["phone"] not in _values(engine, "Call me:")


def test_lead_in_words_never_put_a_weaker_reading_first(labels_engine, monkeypatch):
    """The words confirm the classifier's best reading and never overturn it.  Readings given (phone
    0.33, under its cut of 0.35; the availability snippet 0.30, over its lower snippet cut) after
    "My hours:", the snippet's own words: the typed route goes past the phone to the snippet, which
    must still count the stronger phone as its rival, so nothing comes.  Where the snippet reads
    highest, its words let it in.  Bug caught: a weaker reading let in ahead of a stronger one by its
    words, the wrong-field risk the rival rule is for."""
    engine, ids = labels_engine
    m, phone, hours = engine.matcher, ids["phone"], ids["hours"]
    text = "Hi Sam, thanks. My hours:"
    propose = lambda: m.typed_proposal(np.zeros(m.dim, np.float32), np.zeros(m.dim, np.float32), text)
    monkeypatch.setattr(m, "type_readings", lambda *a, **k: ({phone: 0.33, hours: 0.30}, 0.0))
    assert propose() is None
    monkeypatch.setattr(m, "type_readings", lambda *a, **k: ({phone: 0.20, hours: 0.30}, 0.0))
    assert propose().chunk_id == hours


def test_the_threshold_profile_never_puts_a_weaker_reading_first(profile_engine):
    """After "While I'm travelling, contact me at" the email reads first and the phone nearly as well;
    "contact" is one of the phone's lead-in words, but decoding inserts neither
    (test_two_of_the_users_fields_read_alike_get_neither).  The profile must agree: the place is listed,
    and nothing there is taken past the default threshold.  Bug caught: the profile asked the words of
    every reading, so it showed the phone taken there past the default, where decoding takes nothing."""
    from chunkwise.core.tuning import insertion_places

    engine, ids = profile_engine
    text = "While I'm travelling, contact me at"
    last = [p for p in insertion_places(engine, text) if p.end == len(text)]
    assert last and all(p.reach <= Settings().threshold for p in last)


def test_the_threshold_profile_counts_the_lead_in_words_too(labels_engine):
    """Settings' threshold profile (tuning.insertion_places) says up to which threshold each place takes
    its chunk.  It must agree with decoding: "Call me:" takes the phone at the default threshold, so the
    profile reaches past it.  Bug caught: the profile still counted the availability snippet as the
    phone's rival and reported the phone stopped below the default."""
    from chunkwise.core.tuning import insertion_places

    engine, ids = labels_engine
    last = [p for p in insertion_places(engine, "Call me:") if p.end == len("Call me:")]
    assert [p.chunk_id for p in last] == [ids["phone"]]
    assert last[0].reach > Settings().threshold


def test_a_field_named_in_an_earlier_clause_does_not_settle_it(profile_engine):
    """"Our office line, in case email is slow, is" (the paper dev set's d027) reads email first and the
    phone nearly as likely; the sentence says "email", one of the user's email lead-in words, but as the
    thing not to use.  Only the clause that leads into the value counts (text.current_clause: " is"),
    so neither goes in.  Bug caught: with the whole sentence's words the email went in where the office
    line belongs (bench/cli_profile.py --cases dev, a scratch run)."""
    engine, ids = profile_engine
    assert ids["email"] not in _values(engine, "Our office line, in case email is slow, is")


def test_the_threshold_profile_asks_the_words_of_the_best_reading_alone(runtime, monkeypatch):
    """Two phones (an office line, a mobile stored after "Call me at") and the availability snippet,
    read 0.42 / 0.41 / 0.34 after "Call me:" (readings given).  Decoding asks the words of the best
    reading alone, the office line's, which "call" does not name, so nothing comes; the profile must
    not show the mobile taken past the default.  Bug caught: the profile settled the mobile against the
    other fields by its words though a value of its own field read higher."""
    from chunkwise.core.tuning import insertion_places

    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    try:
        add = engine.store.add_chunk
        # "Office phone:", not "Office:" alone: that reads under half as a phone, a number of its own kind
        # (matching_state.KNOWN_READING), and the test is of two values of one field.
        office = add("+1 415 555 0100", "pii", ["Office phone:", "Reach the office on"], label="office line")
        mobile = add("+1 415 555 0188", "pii", ["Mobile:", "Call me at"], label="mobile")
        hours = add("Around Mon–Thu, 9am–1pm Pacific.", "snippet", ["My hours", "When I'm available"],
                    label="availability")
        engine.refresh()
        m = engine.matcher
        assert m.typed_field(office) == m.typed_field(mobile) == "phone"
        readings = {office: 0.42, mobile: 0.41, hours: 0.34}
        monkeypatch.setattr(m, "type_readings", lambda *a, **k: (readings, 0.0))
        monkeypatch.setattr(m, "type_agreement", lambda *a, **k: readings)
        zeros = np.zeros(m.dim, np.float32)
        assert m.typed_proposal(zeros, zeros, "Call me:") is None
        last = [p for p in insertion_places(engine, "Call me:") if p.end == len("Call me:")]
        assert all(p.reach <= Settings().threshold for p in last), last
    finally:
        engine.store.close()
        runtime.reset()


def _own_kinds_library(runtime, vat: bool) -> tuple[Engine, dict[str, int]]:
    """A library with a passport and a gym membership number, kinds of number the slot classifier was
    not trained on, beside a name and an email, and with *vat* a VAT number, a kind it was (values
    invented for the test)."""
    entries = [("name", "Ines Vallejo", ["My name is", "Name:"]),
               ("email", "ines@vallejo-studio.es", ["My email is", "Email me at"]),
               ("passport", "PAB482913", ["My passport number is", "Passport no.:"]),
               ("gym", "GX-2291-0457", ["My gym membership number is", "Gym card:"], "gym membership")]
    if vat:
        entries.append(("vat", "ESB12345674", ["My VAT number is", "VAT:"], "VAT number"))
    return _library(runtime, entries)


@pytest.fixture(scope="module")
def own_kinds_engine(runtime):
    engine, ids = _own_kinds_library(runtime, vat=True)
    yield engine, ids
    engine.store.close()
    runtime.reset()


def test_a_number_of_a_kind_the_classifier_does_not_know_is_a_field_of_its_own(own_kinds_engine):
    """The passport and gym numbers' own contexts read under half as any one field (the classifier
    knows no passports), so each is a field of its own, not the tax ID or phone it looks like; the VAT
    number, the email and the name keep the fields the classifier reads.  Bug caught: the passport
    typed as a tax ID, so it counted as a second value of the VAT number's field."""
    engine, ids = own_kinds_engine
    m = engine.matcher
    assert m.of_own_kind(ids["passport"]) and m.of_own_kind(ids["gym"])
    assert not any(m.of_own_kind(ids[k]) for k in ("vat", "email", "name"))
    assert m.typed_field(ids["vat"]) == "tax_id" and m.typed_field(ids["email"]) == "email"
    assert len({m.typed_field(ids[k]) for k in ("passport", "gym", "vat")}) == 3


@pytest.mark.parametrize("prompt, which", [
    ("The airline wants my passport number:", "passport"),
    ("At the front desk they asked for my gym membership number, which is", "gym"),
    ("Please put my VAT ID on the invoice:", "vat"),
    ("The hotel needs the number from my passport, it's", "passport"),      # the sentence's words, not the clause's
    ("My tax number is", None),
    ("Here is my ID number:", None),
])
def test_a_number_the_classifier_does_not_know_comes_only_where_its_own_words_are(own_kinds_engine, prompt, which):
    """Such a number's reading is borrowed, so it comes only where the sentence says a word of its own
    lead-ins or label that no other value of the user's has ("passport", "gym"; not "number").  Bug
    caught: the gym number went in after "My tax number is" and "Here is my ID number:", a wrong
    field, beside a stored VAT number (it read as a tax ID and a phone, higher than the VAT number
    itself, whose reading it borrowed).  The words are the sentence's where the clause has none
    (naming.naming_scope): with the clause's alone, "..., it's" named nothing and nothing came.
    (Where *which* is None only the numbers the classifier does not know are checked: the VAT number
    after "My tax number is" would be right.)"""
    engine, ids = own_kinds_engine
    got = _values(engine, prompt)
    if which:
        assert got == [ids[which]]
    else:
        assert ids["passport"] not in got and ids["gym"] not in got, got


def test_without_a_tax_id_stored_a_number_of_another_kind_stays_out_where_one_goes(runtime):
    """With no VAT number stored, the classifier still reads a tax ID after "the invoice needs my VAT
    registration:"; the gym number it borrowed that reading for must not come.  Bug caught: the gym
    number was inserted there."""
    engine, ids = _own_kinds_library(runtime, vat=False)
    try:
        assert _values(engine, "For the reverse charge, the invoice needs my VAT registration:") == []
        assert _values(engine, "My membership number is") == [ids["gym"]]
    finally:
        engine.store.close()
        runtime.reset()


def test_the_threshold_profile_takes_a_number_of_its_own_kind_only_by_its_words(own_kinds_engine):
    """The settings' profile asks what decoding asks: after "My tax number is" no value is shown taken
    past the default threshold (the gym number, read highest, has no word there), and after "My gym
    membership number is" the gym number is."""
    from chunkwise.core.tuning import insertion_places

    engine, ids = own_kinds_engine
    for text, which in (("My tax number is", None), ("My gym membership number is", "gym")):
        last = [p for p in insertion_places(engine, text) if p.end == len(text)]
        taken = [p.chunk_id for p in last if p.reach > Settings().threshold]
        if which:
            assert taken == [ids[which]], (text, last)
        else:
            assert ids["gym"] not in taken and ids["passport"] not in taken, (text, last)


def _staff_library(runtime, payroll: bool) -> tuple[Engine, dict[str, int]]:
    """A staff number and a passport number, kinds the slot classifier does not know, beside an email;
    with *payroll* also a payroll number under a label of its own (values invented for the test)."""
    entries = [("email", "ines@vallejo-studio.es", ["My email is", "Email me at"]),
               ("staff", "4471902", ["My staff number is", "Staff no.:"], "staff number"),
               ("passport", "PAB482913", ["My passport number is", "Passport no.:"])]
    if payroll:
        entries.append(("payroll", "PR-55810", ["My payroll number is", "Payroll:"], "payroll number"))
    return _library(runtime, entries)


def test_a_number_of_its_own_kind_is_named_by_the_other_names_of_its_kind_of_record(runtime):
    """A number the classifier does not know comes only where the user's words name it; the other
    names of the same kind of record name it too (core/data/record_names.json): the "Staff number"
    after "my personnel number is" and "my employee number:".  Where two of the user's values share
    such a name, it names neither, and each still comes by its own words.  Bugs caught: nothing came
    after "personnel" or "employee" (only the stored words named it); with the payroll number
    stored, "staff" no longer named the staff number once both were read with their kin; "my employee
    email:" got the staff number (a word of the value's, kin words included, right before "email" made
    it part of the value's name). (Phrasings in no corpus or bench set.)"""
    engine, ids = _staff_library(runtime, payroll=False)
    try:
        assert _values(engine, "The HR portal will not let me in. For reference, my personnel number is") == [ids["staff"]]
        assert _values(engine, "Please fill in the timesheet with my employee number:") == [ids["staff"]]
        assert ids["staff"] not in _values(engine, "The consulate asked for my passport number:")
        # a kin word before a field's own name is no name of the value ("employee" is the staff number's
        # kin, not its stored word): the email is asked for, as before the record names
        assert _values(engine, "Please reply to my employee email:") == [ids["email"]]
    finally:
        engine.store.close()
        runtime.reset()
    engine, ids = _staff_library(runtime, payroll=True)
    try:
        got = _values(engine, "The HR portal will not let me in. For reference, my personnel number is")
        assert ids["staff"] not in got and ids["payroll"] not in got, got
        assert _values(engine, "The HR portal will not let me in. For reference, my staff number is") == [ids["staff"]]
        assert _values(engine, "The HR portal will not let me in. For reference, my payroll number is") == [ids["payroll"]]
    finally:
        engine.store.close()
        runtime.reset()


def test_the_other_names_of_a_record_come_from_one_word_each_and_not_from_a_contact_fields_name(tmp_path, monkeypatch):
    """A value stored as its "phone PIN" is not a phone number: a word that names a contact field says
    what the record belongs to, so it brings none of its kin ("WhatsApp" must not name the PIN).  And
    an entry of the list that is not one word ("e-ticket") joins no group: split as sentences are, its
    "e" would join every such entry's group, and "ticket" would name a stored e-mail.  Bugs caught: both,
    as the review found them."""
    path = tmp_path / "names.json"
    path.write_text(json.dumps({"groups": [{"words": ["phone", "whatsapp", "e-mail"]},
                                           {"words": ["eticket", "e-ticket"]},
                                           {"words": ["staff", "personnel"]}]}), encoding="utf-8")
    names = naming._load_record_names(path)
    assert "e" not in names and "ticket" not in names and "mail" not in names, names
    monkeypatch.setattr(naming, "RECORD_NAMES", names)
    assert "whatsapp" not in naming.kin_words({"phone", "pin"})
    assert naming.kin_words({"staff", "pin"}) == {"staff", "personnel", "pin"}


@pytest.mark.parametrize("prompt, which", [
    ("Please put the loyalty points on my gym account,", "gym"),
    ("For the hotel form: my passport is", "passport"),
])
def test_a_number_of_its_own_kind_named_here_reads_as_any_value_of_the_writers(runtime, prompt, which):
    """Where the sentence names such a number ("gym", "passport"), how surely it comes is how surely any
    value of the writer's comes there, not only the reading it borrowed from the fields it looks
    like: after "...on my gym account," the classifier reads an IBAN, and that IBAN is no answer.
    Bug caught: the user's IBAN went in after "my gym account," (a wrong field), and nothing after
    "my passport is", whose borrowed reading was under the cut."""
    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    try:
        add = engine.store.add_chunk
        ids = {"iban": add("ES91 2100 0418 4502 0005 1332", "pii", ["My IBAN is", "Bank account:"], label="IBAN"),
               "passport": add("PAB482913", "pii", ["My passport number is", "Passport no.:"], label="passport"),
               "gym": add("GX-2291-0457", "pii", ["My gym membership number is", "Gym card:"],
                          label="gym membership")}
        engine.refresh()
        assert _values(engine, prompt) == [ids[which]]
    finally:
        engine.store.close()
        runtime.reset()


def test_a_name_whose_contexts_each_read_surely_is_no_kind_of_its_own(runtime):
    """"My full name is" reads as a name and "Sign my emails as" as an email, each surely; their mean
    splits under half for either, but the classifier knows what each leads into, so the name keeps
    its field and comes after a sign-off.  Bug caught: judged by the mean reading, the name was a
    kind of its own and came only where the sentence said "full", "sign" or "emails"."""
    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    try:
        add = engine.store.add_chunk
        name = add("Tomás Ferreira", "pii", ["My full name is", "Sign my emails as"], label="name")
        add("tomas@ferreira.pt", "pii", ["My email is", "Email me at"], label="email")
        engine.refresh()
        assert not engine.matcher.of_own_kind(name)
        assert _values(engine, "Thanks for your help.\n\nKind regards,") == [name]
    finally:
        engine.store.close()
        runtime.reset()


def _library(runtime, entries) -> tuple[Engine, dict[str, int]]:
    """An engine on a library of (name, value, contexts) personal values, labelled by name, or by a
    fourth item (name, value, contexts, label); name -> chunk id."""
    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    ids = {name: engine.store.add_chunk(value, "pii", contexts, label=label[0] if label else name)
           for name, value, contexts, *label in entries}
    engine.refresh()
    return engine, ids


CONTACTS = [("name", "Ines Vallejo", ["My name is", "Name:"]),
            ("email", "ines@vallejo-studio.es", ["My email is", "Email me at"]),
            ("phone", "+34 612 345 678", ["My phone number is", "Call me on"])]
OWN_KINDS = [("passport", "PAB482913", ["My passport number is", "Passport no.:"]),
             ("gym membership", "GX-2291-0457", ["My gym membership number is", "Gym card:"])]


@pytest.mark.parametrize("prompt, which", [
    ("I renewed my passport last week and my new mobile number is", "phone"),
    ("Since my passport is being renewed, you can reach me on", "phone"),
    ("My passport expired and my new phone is", "phone"),
    ("I cancelled my gym membership, and my mobile is", "phone"),
    ("Please send the passport forms to my email:", "email"),
    ("Name (as on passport):", "name"),
])
def test_a_number_of_its_own_kind_said_earlier_of_something_else_is_not_asked_for(runtime, prompt, which):
    """A passport or gym card mentioned earlier in the sentence, and the phone, email or name asked for
    after it: that one comes.  The own kind's word counts only among the last few words of the clause
    (NAMING_WORDS), the value named last is meant, and a field is named by its field's names too
    ("mobile").  Bug caught (a review's probes): named anywhere in the sentence and read as any
    value, the passport or gym number went in after "my new mobile number is" and "you can reach me on",
    and its borrowed phone reading kept the phone out after "and my mobile is" and the email out after
    "the passport forms to my email:"."""
    engine, ids = _library(runtime, CONTACTS + OWN_KINDS)
    try:
        assert engine.matcher.of_own_kind(ids["passport"]) and engine.matcher.of_own_kind(ids["gym membership"])
        assert _values(engine, prompt) == [ids[which]]
    finally:
        engine.store.close()
        runtime.reset()


def test_a_field_named_in_an_earlier_clause_settles_nothing_beside_a_number_of_its_own_kind(runtime):
    """test_a_field_named_in_an_earlier_clause_does_not_settle_it with a library card stored too: the
    rule among known fields is the clause's, whatever else the library holds.  Bug caught (a review's
    probe): with a value of its own kind among the rivals, the whole sentence's words named the email
    after "Our office line, in case email is slow, is"."""
    entries = [(f, e["value"], e["contexts"][:4]) for f, e in paper_profile().items()]
    engine, ids = _library(runtime, entries + [("library card", "2780019433217",
                                                ["My library card number is", "Library card:"])])
    try:
        assert engine.matcher.of_own_kind(ids["library card"])
        assert ids["email"] not in _values(engine, "Our office line, in case email is slow, is")
    finally:
        engine.store.close()
        runtime.reset()


def test_a_phone_stored_after_terse_lead_ins_stays_a_phone(runtime):
    """"Office:" and "Reach the office on" read under half as a phone, but the value is written as a phone
    number is (matching_state.written_as_phone), so it keeps the phone's field and comes where a phone
    is asked for.  Bug caught (a review's probe): it was a kind of its own and stopped coming after
    "You can ring me on"."""
    engine, ids = _library(runtime, [("office line", "+1 415 555 0100", ["Office:", "Reach the office on"]),
                                     ("email", "jo@harborline.org", ["My email is", "Email me at"])])
    try:
        assert not engine.matcher.of_own_kind(ids["office line"])
        assert _values(engine, "You can ring me on") == [ids["office line"]]
    finally:
        engine.store.close()
        runtime.reset()


def test_a_lone_number_of_its_own_kind_stays_out_where_another_kind_is_asked_for(runtime):
    """The gym number alone beside a name and an email, nothing to rival it: after "My VAT number is" the
    classifier reads a tax ID, which the gym number's borrowed reading follows, and neither decoding
    nor the settings' profile may take it there.  Bug caught: without the typed route's own-kind check
    (ChunkMatcher.typed_proposal) or the profile's (tuning.insertion_places), the gym number came."""
    from chunkwise.core.tuning import insertion_places

    engine, ids = _library(runtime, CONTACTS[:2] + OWN_KINDS[1:])
    try:
        gym, text = ids["gym membership"], "My VAT number is"
        assert engine.matcher.of_own_kind(gym)
        assert gym not in _values(engine, text)
        last = [p for p in insertion_places(engine, text) if p.end == len(text)]
        assert not [p for p in last if p.chunk_id == gym and p.reach > Settings().threshold], last
    finally:
        engine.store.close()
        runtime.reset()


@pytest.mark.parametrize("text", ["Since email is slow, my best contact is", "My passport or my email:",
                                  "Call me on"])
def test_the_threshold_profile_never_shows_taken_what_decoding_does_not_take(runtime, monkeypatch, text):
    """With readings given (email 0.60, phone 0.50, passport 0.05), at the default threshold: whatever
    the profile shows taken past it, decoding takes.  Bug caught (a review's probe): with a passport
    stored, the profile asked the words against every field at once by the own-kind rule, and showed
    the email taken after "Since email is slow, my best contact is" where decoding took nothing."""
    from chunkwise.core.tuning import insertion_places

    engine, ids = _library(runtime, CONTACTS[1:] + OWN_KINDS[:1])
    try:
        m = engine.matcher
        readings = {ids["email"]: 0.60, ids["phone"]: 0.50, ids["passport"]: 0.05}
        monkeypatch.setattr(m, "type_readings", lambda *a, **k: (dict(readings), 0.0))
        monkeypatch.setattr(m, "type_agreement", lambda *a, **k: dict(readings))
        zeros = np.zeros(m.dim, np.float32)
        decoded = m.typed_proposal(zeros, zeros, text)
        last = [p for p in insertion_places(engine, text) if p.end == len(text)]
        taken = {p.chunk_id for p in last if p.reach > Settings().threshold}
        assert taken <= ({decoded.chunk_id} if decoded else set()), (text, last, decoded)
    finally:
        engine.store.close()
        runtime.reset()


@pytest.mark.parametrize("text, claimed", [
    ("Please post the signed form back to me directly at", True),     # "me", then words that lead into a value
    ("If anything breaks, call me on", True), ("Questions? Reach me:", True),
    ("Let me know the address:", False), ("Tell me her number:", False),   # "me" is not who owns what comes
    ("Ask the hotel to ring me about the booking, their number is", False),
    ("For the loan, the number on my library card is", True),        # "library" says which card: the writer's
    ("Send the refund to my bank account,", True),
    ("my hotel is at", False), ("my hotel phone number is", False),   # the place owns what comes
    ("Post the documents to my hotel directly at", False), ("Ring my hotel front desk:", False),
    ("If not, call me on", True), ("Why not email me at", True),     # a "not" of another clause
    ("Happy for you to pass my email on to her, it's", True),       # the clause points back at "my email"
    ("Sure, give my email to your sister, it's", True), ("Sure, give my sister's email to Tom, it's", False),
    ("Please call my dentist, it's", False), ("I booked my room at Premier Inn, it's", False),   # no detail named
    ("Happy for you to pass my email on to her - it's", True),       # a spaced hyphen ends a clause as a comma does
    ("You asked for my home address -- that's", True), ("Please call my dentist - it's", False),
])
def test_the_writer_claims_the_value_by_me_or_by_a_thing_of_theirs(text, claimed):
    """Bug caught: only "my" claimed a value against the classifier's someone-else's reading, so "send the
    receipt to me directly at" lost the user's email; and any place's word after "my" gave the value to the
    place, so "the number on my library card is" lost the user's library card number (bench/data/fields
    dev: f051, f076).  And a clause after a spaced hyphen or "--" was read as part of the one before
    ("my email - it's" pointed back at nothing), where current_clause already split there."""
    assert whose.says_my(text) is claimed


def test_a_value_on_a_card_from_a_place_is_the_writers(runtime):
    """"my library card": a library is a place (whose._PLACES), but the card is the writer's.  Bug caught:
    the place's word after "my" gave the number to the library, and the classifier's someone-else's
    reading kept the stored card number out.  (A sentence written for this test.)"""
    card = ("library card", "2780019433217", ["My library card number is", "Library card:"])
    engine, ids = _library(runtime, CONTACTS + [card])
    try:
        assert _values(engine, "Hi,\n\nFor the loan, the number on my library card is") == [ids["library card"]]
    finally:
        engine.store.close()
        runtime.reset()


@pytest.mark.parametrize("prompt", ["Travel form\n\nDocument (passport) number:",
                                    "Hi,\n\nFor the visa application, my ID (passport) number is"])
def test_a_short_bracketed_note_names_the_value(runtime, prompt):
    """"ID (passport) number:": the note says which number.  Bug caught: the clause left every bracketed
    note out, so nothing named the passport, a value of a kind the classifier does not know, and no
    number came (bench/data/fields dev f026).  A long note is still an aside: text.current_clause."""
    engine, ids = _library(runtime, CONTACTS + OWN_KINDS)
    try:
        assert _values(engine, prompt) == [ids["passport"]]
    finally:
        engine.store.close()
        runtime.reset()


SNIPPETS = [("office hours", "My office hours are Tuesdays 10-12 in Room 4.12. If that doesn't suit, email me and we'll "
             "find a time.", ["Office hours:", "When to find me:"]),
            ("dietary", "I'm vegetarian (fish is fine) and allergic to walnuts, otherwise I eat anything.",
             ["Dietary requirements:", "About food:"])]


@pytest.mark.parametrize("prompt, which", [
    ("Happy to join the conference lunch. A note on food:", "dietary"),
    ("If you want to go over your draft, come and find me.", "office hours"),
])
def test_of_two_snippet_sentences_the_one_whose_contexts_match_comes(runtime, prompt, which):
    """The office hours read as an availability sentence, a kind the classifier knows; the dietary note
    as no kind.  Bug caught: the typed route came first whatever its reading, so the office hours went
    after "A note on food:", where the dietary note's own "About food:" matches far better (bench/data/
    fields dev f082 lost its dietary note so).  Its own place still gets the office hours.  (Sentences
    written for this test.)"""
    engine = Engine(runtime=runtime, store=ChunkStore(":memory:"))
    ids = {name: engine.store.add_chunk(value, "snippet", contexts, label=name) for name, value, contexts in SNIPPETS}
    engine.refresh()
    try:
        assert engine.matcher.is_typed(ids["office hours"]) and not engine.matcher.is_typed(ids["dietary"])
        out = engine.generate(GenerationRequest(prompt, max_tokens=30, stop=["\n\n"]), record_use=False)
        assert [s.chunk_id for s in out.spans] == [ids[which]]
    finally:
        engine.store.close()
        runtime.reset()


@pytest.mark.parametrize("prompt, which", [
    ("Hi Jo,\n\nHappy for you to forward my email to them, it's", "email"),
    ("The delivery man can text me when he gets here, on", "phone"),
])
def test_a_value_given_to_someone_else_or_awaited_from_them_is_the_writers(runtime, prompt, which):
    """"forward my email to them, it's": the email goes to them and is the writer's; "text me when he gets here,
    on": he texts the writer's number.  Bug caught: the person cue took the last third person named ("them",
    "he") for the owner, so the user's value stayed out (as in bench/personal.py dev p037 and
    bench/cli_profile.py dev d039; these sentences were written for the test)."""
    engine, ids = _library(runtime, CONTACTS)
    try:
        assert _values(engine, prompt) == [ids[which]]
    finally:
        engine.store.close()
        runtime.reset()
