"""Learning while writing (core/feedback.py): values typed by hand teach their lead-in,
dismissals count against the place, and all of it can be listed and forgotten.

Engine tests use the real default model."""
from __future__ import annotations

import pytest

from chunkwise.core import GenerationRequest
from chunkwise.core.feedback import PassedOver, store_typed, typed_values, values_being_typed
from chunkwise.core.store import DISMISSED, LEARNED, SCHEMA_VERSION, ChunkStore

PHONE = "+44 20 7946 0321"
EMAIL = "mara@nordhavn.co.uk"


def suggest(engine, text: str) -> list[int]:
    out = engine.generate(GenerationRequest(text, max_tokens=10, stop=["\n\n"]), record_use=False)
    return [s.chunk_id for s in out.spans]


@pytest.fixture
def profile_engine(make_engine):
    engine = make_engine()
    phone = engine.store.add_chunk(PHONE, "pii", ["My phone number is", "You can call me on"], label="phone")
    email = engine.store.add_chunk(EMAIL, "pii", ["My email is", "Email me at"], label="email")
    engine.refresh()
    return engine, phone, email


def test_typed_values_skip_accepted_text_and_longer_numbers():
    values = {1: PHONE, 2: "Ana"}
    text = f"Hi. Ring me on {PHONE}. Her number is {PHONE}9. Thanks, Ana"
    found = typed_values(values, text)
    assert found == [(1, "Ring me on")]                 # not inside a longer number, not a 3-letter name
    start = text.index(PHONE)
    assert typed_values(values, text, inserted=[(start, start + len(PHONE))]) == []   # came from a suggestion


def test_only_a_value_begun_by_hand_has_its_phrase_read_ahead():
    """What the editor reads ahead while a value is typed (Engine.prepare_typed): each case below
    would cost a forward pass for nothing, or read a phrase that learning then never stores."""
    values = {1: PHONE, 2: EMAIL, 3: "Ana"}
    assert values_being_typed(values, "Ring me on +44 20") == [(1, "Ring me on")]
    assert values_being_typed(values, "Write to mara@nord") == [(2, "Write to")]
    assert values_being_typed(values, "Ring me on +4") == []                 # too little to tell
    assert values_being_typed(values, f"Ring me on {PHONE}") == []           # done: learn_typed's turn
    assert values_being_typed(values, "Ring me on 1+44 20") == []            # inside a longer number
    assert values_being_typed(values, "Hi,\n\nmara@no") == []               # "Hi," alone is not learned
    text = "Ring me on +44 20"
    assert values_being_typed(values, text, inserted=[(len(text) - 6, len(text))]) == []   # a suggestion's


def test_a_phrase_already_stored_for_the_value_is_not_read_ahead(profile_engine):
    """Engine.prepare_typed skips a lead-in that is already one of that value's contexts (learning it
    would add nothing), and reads a new one once."""
    engine, _phone, _email = profile_engine
    assert engine.prepare_typed("Hi Tom,\n\nYou can call me on +44 2") == 0     # a stored context
    assert engine.prepare_typed("Hi Tom,\n\nRing me any time on +44 2") == 1
    assert engine.prepare_typed("Hi Tom,\n\nRing me any time on +44 20 79") == 0   # read already


def test_a_value_typed_by_hand_teaches_its_phrase(profile_engine):
    """Bug caught: the user's own phrasing never finds their detail, however often they type it."""
    engine, phone, email = profile_engine
    draft = "Dear Sam,\n\nThe boiler is fixed. Send word to"
    assert email not in suggest(engine, draft)           # an unseen phrasing: nothing before learning
    learned = engine.learn_typed(f"Hi all,\n\nThanks for the minutes. Send word to {EMAIL} with questions.")
    assert [(x.chunk_id, x.context, x.origin) for x in learned] == [(email, "Send word to", LEARNED)]
    assert suggest(engine, draft) == [email]             # that chunk, in another email
    again = engine.learn_typed(f"Send word to {EMAIL}")
    assert again == []                                   # a duplicate changes nothing
    contexts = engine.store.get_chunk(email).contexts
    assert sum(c.text == "Send word to" for c in contexts) == 1



def test_a_lone_word_is_not_learned_and_a_label_keeps_its_colon(profile_engine):
    """Review finding: "Thanks. +44…" learned "Thanks." and then put the phone after every "Many thanks".
    bench/personal.py --feedback: "I'm" + the email was learned too, as two words ("i", "m")."""
    engine, phone, _email = profile_engine
    assert engine.learn_typed(f"Hi Jo,\n\nThe form is done. Thanks.\n{PHONE}") == []
    # A contraction is one word too: "I'm" learned put the email after every later "I'm" (a name's place).
    assert engine.learn_typed(f"Can you cc me on that thread? I'm {EMAIL}") == []
    learned = engine.learn_typed(f"Hi,\n\nMobile: {PHONE}")
    assert [x.context for x in learned] == ["Mobile:"]
    assert suggest(engine, "Dear Sam,\n\nThe boiler is fixed. Mobile:") == [phone]
    matcher = engine.matcher                  # the learned rule alone (the slot classifier may still fire)
    assert matcher.learned_proposal("Sorry, I dropped my mobile") is None                  # the word, not the label
    assert matcher.learned_proposal("Sorry, I dropped my phone. Mobile:").chunk_id == phone


def test_esc_on_a_learned_place_flips_it(profile_engine):
    """Review finding: Esc where a phrase was learned stored nothing, so the chunk kept coming back."""
    engine, _phone, email = profile_engine
    engine.learn_typed(f"Hi all,\n\nSend word to {EMAIL} with questions.")
    draft = "Dear Sam,\n\nThe boiler is fixed. Send word to"
    assert suggest(engine, draft) == [email]
    assert engine.dismiss(email, draft).origin == DISMISSED
    assert email not in suggest(engine, draft)
    chunk = engine.store.get_chunk(email)
    assert [c.text for c in chunk.avoid] == ["Send word to"] and all(c.origin != LEARNED for c in chunk.contexts)
    engine.learn_typed(f"Send word to {EMAIL}")           # typed by hand there after all: learned again
    assert suggest(engine, draft) == [email]


def test_a_dismissed_chunk_is_not_offered_there_again(profile_engine):
    """Bug caught: Esc on a wrong chunk changes nothing, and the same wrong value comes back."""
    engine, phone, _email = profile_engine
    place = "Hello Jo,\n\nThanks for the note. For the site visit, text me on"
    other = "Dear Sam,\n\nThe boiler is fixed. For the site visit, text me on"
    own = "Hi,\n\nAny questions? You can call me on"
    assert suggest(engine, own) == [phone]
    assert suggest(engine, place) == [phone]             # offered where the user does not want it
    assert engine.dismiss(phone, place).origin == DISMISSED
    assert phone not in suggest(engine, other)           # the same place in another email
    assert suggest(engine, own) == [phone]               # still offered where it belongs
    chunk = engine.store.get_chunk(phone)
    assert [c.text for c in chunk.avoid] == ["For the site visit, text me on"]
    assert all(c.origin != DISMISSED for c in chunk.contexts)


def test_a_dismissal_after_a_contraction_keeps_to_its_place(profile_engine):
    """Bug caught: places were compared by word pieces, so "I'm now" (where the user writes their new
    job) and "I'm on" shared "i" and "m", half their words, and Esc on the phone number after the
    first kept it out after the second too."""
    engine, phone, _email = profile_engine
    assert suggest(engine, "Hi,\n\nI'm on") == [phone]
    engine.dismiss(phone, "Hello Sam,\n\nI'm now")
    assert phone not in suggest(engine, "Dear Jo,\n\nI'm now")      # the place dismissed, in another email
    assert suggest(engine, "Hi,\n\nI'm on") == [phone]


def test_dismissing_a_deleted_chunk_is_a_no_op(profile_engine):
    engine, phone, _email = profile_engine
    engine.store.remove_chunk(phone)
    assert engine.dismiss(phone, "Call me on") is None
    assert engine.dismiss(phone, "   ") is None


def test_forget_learned_keeps_the_library(profile_engine):
    engine, phone, email = profile_engine
    engine.learn_typed(f"Reach me on WhatsApp: {PHONE}")
    engine.dismiss(email, "Send the invoice to")
    mined = engine.store.add_chunk("Thanks in advance for your help.", "teacher", ["Could you look at it?"])
    custom = engine.store.add_chunk("Ticket AB-1", "ticket", ["My ticket is"])   # a library entry of the user's own kind
    counts = engine.forget_learned()
    assert counts["contexts"] == 2 and counts["chunks"] == 1
    store = engine.store
    assert store.learned_contexts() == []
    assert {c.id for c in store.list_chunks()} == {phone, email, custom}
    assert [c.text for c in store.get_chunk(phone).contexts] == ["My phone number is", "You can call me on"]
    assert not store.list_chunks(ids=[mined])


def test_store_learned_contexts_survive_edits_and_only_they_can_be_removed(store):
    cid = store.add_chunk(PHONE, "pii", ["My phone:"], label="phone")
    learned = store.add_context(cid, "Ring me on", LEARNED)
    avoid = store.add_context(cid, "the caretaker on", DISMISSED)
    assert store.add_context(cid, "My phone:", LEARNED) is None
    store.update_chunk(cid, contexts=["My phone:", "Ring me on", "Call me on"])   # what the library dialog does
    chunk = store.get_chunk(cid)
    assert [c.text for c in chunk.avoid] == ["the caretaker on"]                  # the edit kept the dismissal
    assert {c.text: c.origin for c in chunk.contexts} == {"My phone:": None, "Ring me on": LEARNED,
                                                         "Call me on": None}
    assert [c.id for c, _chunk in store.learned_contexts()] == sorted([learned, avoid], reverse=True)
    library_ctx = chunk.contexts[0].id
    assert store.remove_contexts([library_ctx, avoid]) == 1                      # the library's own stays
    assert [c.text for c in store.get_chunk(cid).contexts][0] == "My phone:"
    with pytest.raises(Exception, match="no chunk"):
        store.add_context(9999, "Call me on", LEARNED)
    with pytest.raises(Exception, match="non-empty"):
        store.add_context(cid, "  ", LEARNED)


def test_schema_4_store_migrates_with_its_contexts(tmp_path):
    path = tmp_path / "old.db"
    with ChunkStore(path) as s:
        cid = s.add_chunk("Kind regards, Mara", "snippet", ["Thanks again."])
        conn = s.db.conn                   # make it look like a schema-4 store
        conn.execute("ALTER TABLE contexts DROP COLUMN origin")
        conn.execute("ALTER TABLE contexts DROP COLUMN learned_at")
        conn.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
        conn.commit()
    with ChunkStore(path) as s:
        assert s.schema_version == SCHEMA_VERSION
        assert [c.text for c in s.get_chunk(cid).contexts] == ["Thanks again."]
        assert s.add_context(cid, "Speak soon.", LEARNED) is not None


def test_schema_6_store_forgets_a_lone_word_it_learned(tmp_path):
    """A store written before learnable() counted words as written holds "I'm" learned before a value,
    which put the value after every later "I'm".  Opening it drops such learned contexts and their
    encodings; a learned label ("Call me:"), a learned phrase and the library's own contexts stay.
    Bug caught: a migration that misses them, or that takes the library's own one-word context too."""
    path = tmp_path / "old.db"
    with ChunkStore(path) as s:
        cid = s.add_chunk(EMAIL, "pii", ["My email is", "Email"], label="email")    # "Email": the user's own
        lone = s.add_context(cid, "I'm", LEARNED)
        s.add_context(cid, "Call me:", LEARNED)
        phrase = s.add_context(cid, "loop me in at", LEARNED)
        own = s.get_chunk(cid).contexts[1].id
        conn = s.db.conn                   # encodings as the index had them: the lone word's and two kept ones
        conn.execute("INSERT INTO models (id, identity, name, dim, created_at) VALUES (1, 'm', 'm', 2, '')")
        for context in (lone, phrase, own):
            conn.execute("INSERT INTO encodings (context_id, model_id, entry_token, chunk_tokens, vector, "
                         "vector_local, source_hash) VALUES (?, 1, 0, x'', x'', x'', 'h')", (context,))
        conn.execute("UPDATE meta SET value='6' WHERE key='schema_version'")   # as a schema-6 store
        conn.commit()
    with ChunkStore(path) as s:
        assert s.schema_version == SCHEMA_VERSION
        assert {c.text: c.origin for c in s.get_chunk(cid).contexts} == {
            "My email is": None, "Email": None, "Call me:": LEARNED, "loop me in at": LEARNED}
        encoded = {r[0] for r in s.db.conn.execute("SELECT context_id FROM encodings")}
        assert encoded == {phrase, own}


def test_bad_input_to_learning_is_a_no_op(profile_engine):
    """Issue 10: an empty, binary or enormous email, a NUL in the lead-in: nothing half-written, no crash."""
    engine, phone, _email = profile_engine
    before = engine.store.count()
    assert engine.learn_typed("") == [] and engine.learn_typed("\x00\x01\x02" * 1000) == []
    assert engine.learn_typed(f"Ring\x00 me on {PHONE}") == []          # a context may not hold a NUL
    huge = "word " * 1_000_000 + f"end. For anything urgent, ring me direct on {PHONE}"
    learned = engine.learn_typed(huge)                                   # only the tail near the cursor is read
    assert [x.context for x in learned] == ["For anything urgent, ring me direct on"]
    assert engine.store.count()[1] == before[1] + 1
    assert engine.dismiss(phone, "\x00") is None


def test_a_chunk_typed_over_is_left_out_for_the_rest_of_its_sentence_only():
    """Bug caught: the email offered again at every pause of "It now connects to your mailing list and
    sends..." after the user typed over it once; and, the other way, a chunk kept out for good."""
    passed = PassedOver()
    start = "Hi Jo,\n\nThe form is live. It now connects to"
    passed.add(7, start)
    assert passed.here(start + " your mailing list and") == {7}
    passed.add(9, start + " your mailing list and")
    assert passed.here(start + " your mailing list and sends") == {7, 9}
    assert passed.here(start + " your mailing list. Email me at") == frozenset()     # a new sentence
    assert passed.here("Hi Sam,\n\nThe form is live. It now connects to your") == frozenset()   # text before changed
    passed.add(3, start + " your mailing list. Email me at")
    assert passed.here(start + " your mailing list. Email me at any") == {3}          # the old sentence's are gone
    assert passed.here(start + " your mailing list. Email me") == frozenset()         # deleted back past the place
    assert passed.here("Hi Jo,\n\nThe roof is done. It now connects to your mailing list. Email me at") == frozenset()


def test_typed_over_memory_needs_no_sentence_end_to_forget_and_holds_through_a_long_sentence():
    """Review findings: a subject line (no sentence end) kept a chunk typed over in one subject out of
    every later one, and a sentence over 300 characters forgot at every keystroke."""
    subject = PassedOver()
    subject.add(4, "Update on")
    assert subject.here("Update on the roof") == {4}
    assert subject.here("Meeting notes from") == frozenset()                          # another subject
    long = "Hi Jo,\n\nThe newsletter form " + "and the shop pages " * 20 + "now connect to"
    body = PassedOver()
    body.add(7, long)
    assert len(long) > 300 and body.here(long + " your mailing list and") == {7}


def test_learning_from_mail_keeps_a_place_the_user_turned_down():
    """Review finding: the value found in old mail flipped a place where the user had pressed Esc back to
    a learned one (the editor's rule: typing the value there again is the user changing their mind)."""
    store = ChunkStore(":memory:")
    email = store.add_chunk(EMAIL, "pii", ["My email is"], label="email")
    store.add_context(email, "Send word to", DISMISSED)
    mail = f"Hi all,\n\nSend word to {EMAIL} with questions."
    assert list(store_typed(store, [mail], lookback=None, from_mail=True)) == []
    assert store.has_context(email, "Send word to", DISMISSED)
    assert [x.context for x in store_typed(store, [mail])] == ["Send word to"]      # typed in the editor: flips
    assert store.has_context(email, "Send word to", LEARNED)


def test_a_request_leaves_out_what_it_names_but_not_the_rest_of_a_value_begun(profile_engine):
    """The editor's request after a chunk was typed over (GenerationRequest.leave_out): that chunk is
    not inserted; the same request without it inserts it, and the rest of the value the user has begun
    typing still comes (their own typing says they want it)."""
    engine, phone, email = profile_engine
    draft = "Hi,\n\nAny questions? You can call me on"
    asked = lambda text, leave_out=(): [s.chunk_id for s in engine.generate(GenerationRequest(
        text, max_tokens=10, stop=["\n\n"], leave_out=leave_out), record_use=False).spans]
    assert asked(draft) == [phone]
    assert phone not in asked(draft, leave_out=[phone])
    assert asked(draft, leave_out=[email]) == [phone]                      # only what it names
    assert asked(draft + " +44 20", leave_out=[phone]) == [phone]          # the rest of it, begun by hand


def test_learning_from_mail_teaches_the_words_the_user_writes_before_their_own_details(profile_engine):
    """core/learning.py mine, as Tools → Learn from my writing runs it.  Bug caught: learning mined the
    phrases the user repeats but not how they lead into their own details, so the way they ask to be
    emailed in every sent mail never found their email address in a new one; a value further than the
    editor's look-back (2,000 characters) from a long mail's end was not seen."""
    from chunkwise.core.corpus import Document
    from chunkwise.core.learning import mine

    engine, _phone, email = profile_engine
    draft = "Dear Sam,\n\nThe boiler is fixed. Send word to"
    assert email not in suggest(engine, draft)                 # an unseen phrasing: nothing before learning
    mail = [Document("sent 1", "Hi all,\n\nThe minutes from today's meeting are attached. Thanks for coming "
                               f"along, it was a useful session. Send word to {EMAIL} with any questions.\n\n"
                               + "The agenda for next month follows once the dates are fixed. " * 40 + "\n\nBest,\nMara"),
            Document("sent 2", "Hi Tom,\n\nThe lift inspection is booked for Thursday morning. The engineers "
                               "will need access to the plant room, so please leave the keys at reception.\n\nBest,\nMara")]
    result = mine(engine, mail, gamma=0.5)
    assert result.learned_phrases == 1
    learned = [(c.text, c.origin) for c in engine.store.get_chunk(email).contexts if c.origin == LEARNED]
    assert learned == [("Send word to", LEARNED)]
    assert suggest(engine, draft) == [email]                   # that chunk, in a new email


def test_an_entry_taken_one_alt_bracket_away_comes_by_itself_next_time(pii_engine):
    """The detail alternative closes the loop: where the user took an entry the engine had only read
    weakly (Engine.confirm, what the editor sends on taking it), the phrase before it is learned and
    the next suggestion at that phrase brings the entry itself.  Catches a confirmation that stores
    nothing, the wrong kind of context, or no refresh of matching."""
    from chunkwise.core.settings import Settings

    github = next(c.id for c in pii_engine.store.list_chunks() if c.label == "github")
    prompt, later = "Hi Sam,\n\nI push my side projects to", "Hi Ana,\n\nI push my side projects to"
    before = pii_engine.generate(Settings().suggestion_request(later), record_use=False)
    assert github not in [s.chunk_id for s in before.spans]
    learned = pii_engine.confirm(github, prompt)
    assert learned is not None and (learned.chunk_id, learned.context, learned.origin) == (github, "I push my side projects to", LEARNED)
    after = pii_engine.generate(Settings().suggestion_request(later), record_use=False)
    assert [s.chunk_id for s in after.spans][:1] == [github] and after.spans[0].start <= 1
    assert pii_engine.confirm(github, prompt) is None                  # known already: nothing new
    assert pii_engine.confirm(github, "Hi Sam,\n\nAt") is None         # a lone word: too short to act on


def test_confirming_a_deleted_chunk_is_a_no_op(profile_engine):
    engine, phone, _email = profile_engine
    engine.store.remove_chunk(phone)
    assert engine.confirm(phone, "You can always ring me on") is None


def test_a_value_typed_after_another_fields_words_keeps_its_field(make_engine):
    """A freelancer types her own name by hand where an account holder or a company goes ("Invoices go
    to", "Our company is"): those phrases are learned and bring the name back there, but the name must
    not become part company, or it comes wherever an employer goes ("I work for", "Company:").  Bug
    caught: a chunk's field type was read from its learned contexts too, and those four places got the
    name (bench/personal.py --feedback: the dev cases' lessons cost the test split a third party's place)."""
    name = "Ana Sofía Marín"
    engine = make_engine()
    chunk = engine.store.add_chunk(name, "pii", ["My name is", "Kind regards,", "Hi, I'm"], label="name")
    engine.refresh()
    for phrase in ("The account is with", "Invoices go to", "Our company is"):
        engine.learn_typed(f"{phrase} {name}")
    learned = [c.text for c in engine.store.list_chunks(ids=[chunk])[0].contexts if c.origin == LEARNED]
    assert sorted(learned) == ["Invoices go to", "Our company is", "The account is with"]
    assert engine.matcher.type_reading(chunk)["company"] < 0.1            # still a name, not part company
    for place in ("I work for", "My employer is", "Company:", "I'm with"):
        assert chunk not in suggest(engine, f"Hi Jo,\n\n{place}"), place
    assert suggest(engine, "Hi Jo,\n\nInvoices go to")[:1] == [chunk]     # the phrase itself still brings it
