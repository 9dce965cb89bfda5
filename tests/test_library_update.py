"""A library edit reaches matching in place (Engine.refresh(chunk_ids=...), core/matching_state.py):
what the updated matcher proposes is what a matcher loaded from scratch proposes."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import paper_profile, phrasings
from chunkwise.core.encoding import local_mean
from chunkwise.core.matching import ChunkMatcher
from chunkwise.core.store import DISMISSED, LEARNED
from test_editor import WAIT, answer, make_window, type_text  # noqa: F401  (make_window: a fixture)

PROBES = [
    "Thanks for the call. You can reach me on",
    "My email address is",
    "Please send the parcel to my home address:",
    "The code is on my GitHub:",
    "Our company is called",
    "Hi Sam,\n\nI hope you are well.",
    "Best regards,\n",
]


def _fresh(engine) -> ChunkMatcher:
    m = ChunkMatcher(engine.matcher.stats, engine.threshold)
    m.slots = engine.matcher.slots
    m.load(engine.store, engine.model_id, engine.runtime.identity, None)
    return m


def _answers(engine, matcher: ChunkMatcher, texts) -> list:
    """What matching says after each text: its proposal and every typed chunk's agreement."""
    rt, out = engine.runtime, []
    for text in texts:
        tokens = rt.tokenize(text, add_special=True)
        states = engine.runtime_states(tokens)                         # logits (n, V), hidden (n, d)
        h, local = states.hidden[-1], local_mean(states.hidden)
        p = matcher.propose(h, local, text, last_token=tokens[-1], model_choice=int(np.argmax(states.logits[-1])))
        agreement = {k: round(v, 5) for k, v in matcher.type_agreement(h, local, text).items()}
        out.append(((p.chunk_id, round(p.q, 5)) if p else None, agreement))
    return out


def _passes(rt, monkeypatch) -> list:
    """The forward passes either context of *rt* (main or side) is asked for from now on."""
    passes = []
    for context in (rt, rt.aside()):
        monkeypatch.setattr(context, "sync", lambda *a, real=context.sync, **k: passes.append(a) or real(*a, **k))
    return passes


def _same(engine) -> None:
    fresh, updated = _fresh(engine), engine.matcher
    assert len(updated) == len(fresh)
    assert updated.calibration.background == pytest.approx(fresh.calibration.background, abs=1e-5)
    assert updated._phrases == fresh._phrases
    assert updated._mined_entries == fresh._mined_entries              # the entry-token gate, counted per edit
    assert _answers(engine, updated, PROBES + TEXTS) == _answers(engine, fresh, PROBES + TEXTS)


TEXTS = [phrasings()["positives"][field][0] for field in ("phone", "email", "address", "website")] \
    + phrasings()["negatives"][:2]


@pytest.fixture
def library(make_engine):
    engine = make_engine()
    for field, entry in paper_profile().items():
        engine.store.add_chunk(entry["value"], "pii", entry["contexts"][:4], label=field)
    engine.store.add_chunk("Let me know if you have any questions.", "snippet", ["Hope this helps."])
    engine.refresh()
    return engine


def test_added_edited_and_deleted_chunks_match_as_after_a_reload(library):
    engine, store = library, library.store
    ids = {c.label: c.id for c in store.list_chunks()}
    before = engine.contexts
    added = store.add_chunk("Northwind Traders Ltd", "pii", ["I work at", "Our company is called"], label="company")
    assert engine.refresh(chunk_ids=[added]) == 2                       # its two contexts, nothing else encoded
    assert engine.contexts == before + 2
    _same(engine)
    store.update_chunk(ids["phone"], text="+44 20 7946 0000", contexts=["Call me on", "My mobile number is"])
    engine.refresh(chunk_ids=[ids["phone"]])
    _same(engine)
    store.remove_chunks([ids["website"]])
    engine.refresh(chunk_ids=[ids["website"]])
    assert ids["website"] not in engine.matcher._chunks
    _same(engine)


def test_learned_and_dismissed_contexts_match_as_after_a_reload(library):
    engine, store = library, library.store
    ids = {c.label: c.id for c in store.list_chunks()}
    store.add_context(ids["email"], "Drop me a line at", LEARNED)
    store.add_context(ids["phone"], "Drop me a line at", LEARNED)          # the same phrase: two chunks, neither
    store.add_context(ids["address"], "Ship it over to", LEARNED)
    store.add_context(ids["github"], "The code is on my GitHub:", DISMISSED)
    engine.refresh(chunk_ids=[ids["email"], ids["phone"], ids["address"], ids["github"]])
    assert engine.matcher.learned_proposal("Please ship it over to").chunk_id == ids["address"]
    assert engine.matcher.learned_proposal("Drop me a line at") is None
    assert engine.matcher.avoided(ids["github"], "The code is on my GitHub:")
    _same(engine)


def test_mined_chunks_removed_in_place_leave_the_entry_gate_as_a_reload(library):
    """The entry tokens of mined rows are counted as rows come and go, not rebuilt per edit.  Two mined
    chunks share entry token 11, one has 12 alone: removing that one must close the gate for 12 (a count
    never decremented keeps proposing work after it) and keep 11 open (a shared count dropped whole
    closes it for the chunk that stays).  A mined chunk made a snippet keeps its encodings but is no
    longer mined: its row kept as it was left the gate open."""
    from chunkwise.core.distill import MinedChunk, MinedContext

    engine, store = library, library.store
    rng = np.random.default_rng(0)
    d = engine.runtime.n_embd
    mean = engine.matcher.stats.mean

    def mined(text, entry):
        return MinedChunk(text, (900, 901), [MinedContext(f"before {text}", entry,
                                                          mean + rng.standard_normal(d).astype(np.float32),
                                                          mean + rng.standard_normal(d).astype(np.float32))])

    store.add_mined(engine.model_id, "self", [mined("a", 11), mined("b", 11), mined("c", 12)])
    ids = {c.text: c.id for c in store.list_chunks() if c.kind == "self"}
    engine.refresh(chunk_ids=list(ids.values()))
    assert {11, 12} <= set(engine.matcher._mined_entries)
    _same(engine)
    store.remove_chunks([ids["a"], ids["c"]])
    engine.refresh(chunk_ids=[ids["a"], ids["c"]])
    assert 11 in engine.matcher._mined_entries and 12 not in engine.matcher._mined_entries
    _same(engine)
    store.update_chunk(ids["b"], kind="snippet")          # the user keeps the mined phrase as a snippet
    engine.refresh(chunk_ids=[ids["b"]])
    assert 11 not in engine.matcher._mined_entries        # its row is no longer a mined one
    _same(engine)


def test_an_edit_before_matching_was_loaded_loads_it_whole(make_engine):
    engine = make_engine()
    cid = engine.store.add_chunk("ana@example.org", "pii", ["My email is"], label="email")
    engine.refresh(chunk_ids=[cid])                     # nothing loaded yet: a whole load, not an update
    assert engine.contexts == 1
    _same(engine)


def test_a_chunk_added_in_the_library_is_the_next_suggestion(qtbot, make_window):
    """Through the editor: the dialog's add reaches matching (in place) before the next suggestion."""
    from chunkwise.app.library import LibraryDialog

    w = make_window()
    dialog = LibraryDialog(w)
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(w.worker.store_ready, timeout=WAIT):
        cid = answer(qtbot, dialog, "add", lambda: dialog.add_chunk(values={
            "text": "(555) 987-6543", "kind": "pii", "label": "phone",
            "contexts": ["Call me at", "My number is", "please give me a call at"]}))
    dialog.accept()
    assert w.worker.engine.contexts == 3
    body = w.body_edit
    body.setFocus()
    type_text(qtbot, body, "Hi Tom,\n\nThanks for the quick reply. If anything comes up, please give me a call at")
    qtbot.waitUntil(lambda: any(p.from_chunk and p.chunk_id == cid for p in body.pieces), timeout=WAIT)


def test_a_matcher_never_loaded_proposes_nothing(library):
    """Before its first load (an empty or still-locked library) matching answers, it does not fail."""
    m = ChunkMatcher(library.matcher.stats, library.threshold)
    m.slots = library.matcher.slots
    h = np.zeros(m.dim, np.float32)
    assert m.propose(h, h, "Please call me at") is None and m.type_agreement(h, h, "x") == {} and len(m) == 0


def test_a_snippet_needs_the_full_type_cut_only_at_the_start_of_a_line(library, monkeypatch):
    """The lowered bar for a snippet sentence (SENTENCE_CUT of the type cut) holds after a sentence
    within a line and not at a line start, where every place passes the clause-start gate
    (bench/paragraphs.py: the closing line right after "Hi Jonas,").  Deterministic: the classifier's
    agreement is set between the two bars, so a change to either side of the rule fails here."""
    from chunkwise.core import matching

    engine = library
    snippet = engine.store.add_chunk("Many thanks, and do get in touch if anything is unclear.", "snippet",
                                     ["Closing line", "Before my sign-off"], label="closing line")
    engine.refresh(chunk_ids=[snippet])
    m = engine.matcher
    assert m.is_typed(snippet)
    between = m.type_cutoff * (matching.SENTENCE_CUT + 1.0) / 2
    monkeypatch.setattr(m, "type_readings", lambda *a, **k: ({snippet: between}, 0.0))   # no one else's reading
    d = engine.runtime.n_embd
    state = (np.zeros(d, np.float32), np.zeros(d, np.float32))
    mid_line = m.typed_proposal(*state, "Hi Jonas,\n\nThe corrected invoice is attached, as we agreed. ")
    line_start = m.typed_proposal(*state, "Hi Jonas,\n\n")
    assert mid_line is not None and mid_line.chunk_id == snippet
    assert line_start is None


def test_contexts_read_ahead_of_the_save_are_not_read_again_and_encode_the_same(library, monkeypatch):
    """Issue 15.6: the library's entry dialog has the model read an entry's contexts while the user
    types them (Engine.prepare_contexts), so its save costs no forward pass.  Catches a read-ahead the
    save does not find (tokens keyed differently from Encoder.split's), and states kept as a view into
    llama.cpp's buffer, which a later pass overwrites: the stored vectors must equal a plain encoding's."""
    engine, store = library, library.store
    contexts = ["I work at", "The company I work for is"]
    assert engine.prepare_contexts(contexts + ["  "]) == 2               # blank lines are not contexts
    assert engine.prepare_contexts(contexts) == 0                        # already read
    engine.runtime_states(engine.runtime.tokenize("Something else entirely, to overwrite the buffers."))
    passes = _passes(engine.runtime, monkeypatch)
    ahead = store.add_chunk("Northwind Traders Ltd", "pii", contexts, label="company")
    assert engine.refresh(chunk_ids=[ahead]) == 2
    assert passes == []                                                 # the save read nothing
    monkeypatch.undo()
    engine._read_ahead.clear()                                           # the same entry, read at its save
    at_save = store.add_chunk("Northwind Traders Ltd.", "pii", contexts, label="company")
    engine.refresh(chunk_ids=[at_save])
    for column in ("vector", "vector_local"):
        a, b = (store.encoding_vectors([e.label for e in store.valid_encodings(engine.model_id, [cid])], column)
                for cid in (ahead, at_save))
        assert a.shape == (2, engine.runtime.n_embd) and np.array_equal(a, b), column
    _same(engine)


def test_an_edit_reads_only_the_contexts_it_changes(library, monkeypatch):
    """Issue 15.6, a save whose contexts were not read ahead: an edit that changes the value and one
    context reads only the new context (the states of the kept one do not depend on the value).
    Bugs caught: an edit reading every context again; the remembered states differing from a plain
    encoding's (a view into llama.cpp's buffer, overwritten by a later pass); a whole-library
    refresh filling the memory of states read lately, which holds what the entry dialog read ahead."""
    engine, store = library, library.store
    engine._read_ahead.clear()
    cid = store.add_chunk("Northwind Traders Ltd", "pii", ["I work at", "The company I work for is"], label="company")
    assert engine.refresh(chunk_ids=[cid]) == 2
    engine.runtime_states(engine.runtime.tokenize("Something else entirely, to overwrite the buffers."))
    passes = _passes(engine.runtime, monkeypatch)
    store.update_chunk(cid, text="Contoso Pharmaceuticals", contexts=["I work at", "My employer is"])
    assert engine.refresh(chunk_ids=[cid]) == 2                          # both encoded for the new value...
    assert [engine.runtime.detokenize(p[0]) for p in passes] == ["My employer is"]   # ...one read
    monkeypatch.undo()
    engine._read_ahead.clear()                                           # the same contexts, read at a save
    plain = store.add_chunk("Contoso Pharmaceuticals.", "pii", ["I work at", "My employer is"], label="company")
    engine.refresh(chunk_ids=[plain])
    for column in ("vector", "vector_local"):
        a, b = (store.encoding_vectors([e.label for e in sorted(store.valid_encodings(engine.model_id, [c]),
                                                                  key=lambda e: e.context_id)], column)
                for c in (cid, plain))
        assert a.shape == (2, engine.runtime.n_embd) and np.array_equal(a, b), column
    _same(engine)
    engine._read_ahead.clear()
    store.add_chunk("Fabrikam", "pii", ["Our supplier is"], label="company")
    engine.refresh()                                                     # the whole library, as at a start
    assert len(engine._read_ahead) == 0


def test_a_library_edit_leaves_the_draft_in_the_cache(library, monkeypatch):
    """Reading an edited entry's contexts must not replace the draft in the model's cache: it did,
    and the next suggestion read the whole draft again (bench/library_update.py --main-context).
    The contexts are read on the side context (LlamaRuntime.aside); the draft's next step evaluates
    only its new tokens."""
    engine, rt = library, library.runtime
    draft = rt.tokenize("Hi Tom,\n\nThanks for the quick reply about the delivery. For anything urgent, ring me on")
    rt.sync(draft)
    cid = engine.store.add_chunk("Northwind Traders Ltd", "pii", ["I work at", "My employer is"], label="company")
    assert engine.refresh(chunk_ids=[cid]) == 2
    assert engine.prepare_typed("Hi Tom,\n\nThese days I am with Nor") == 1   # a value being typed: its lead-in
    passes = _passes(rt, monkeypatch)
    assert [x.chunk_id for x in engine.learn_typed("Hi Tom,\n\nThese days I am with Northwind Traders Ltd")] == [cid]
    assert passes == []                                                  # learning found the phrase read
    monkeypatch.undo()
    assert rt.tokens == tuple(draft)
    before = rt.evaluated_tokens
    rt.sync(draft + rt.tokenize(" +49", add_special=False))
    assert rt.evaluated_tokens - before == len(rt.tokenize(" +49", add_special=False))


def test_the_entry_dialog_has_the_contexts_read_while_they_are_typed(qtbot):
    """The dialog asks for the contexts a moment after the typing stops (and not per key)."""
    from PySide6.QtCore import Qt

    from chunkwise.app.library import CONTEXT_PAUSE_MS, ChunkEditDialog

    asked = []
    dialog = ChunkEditDialog(prepare=asked.append)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.contexts.setFocus()
    qtbot.keyClicks(dialog.contexts, "I work at")
    qtbot.keyClick(dialog.contexts, Qt.Key_Return)
    qtbot.keyClicks(dialog.contexts, "My employer is")
    assert asked == []                                                   # still typing
    qtbot.waitUntil(lambda: bool(asked), timeout=CONTEXT_PAUSE_MS * 10)
    assert asked == [["I work at", "My employer is"]]
    # Cancelled before the pause: what was typed last is not read (it is thrown away).
    qtbot.keyClick(dialog.contexts, Qt.Key_Return)
    qtbot.keyClicks(dialog.contexts, "I am employed by")
    qtbot.keyClick(dialog, Qt.Key_Escape)
    assert not dialog.isVisible()
    qtbot.wait(CONTEXT_PAUSE_MS * 3)
    assert asked == [["I work at", "My employer is"]]


def test_contexts_pasted_into_the_entry_dialog_are_read_at_once(qtbot):
    """A paste is read without waiting for the typing pause, since OK may follow at once (the save
    then read them itself: 88 ms from save to suggestions instead of ~20).  Keys typed after it
    wait for the pause again."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from chunkwise.app.library import CONTEXT_PAUSE_MS, ChunkEditDialog

    asked = []
    dialog = ChunkEditDialog(prepare=asked.append)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.contexts.setFocus()
    QApplication.clipboard().setText("I work at\nMy employer is")
    qtbot.keyClick(dialog.contexts, Qt.Key_V, Qt.ControlModifier)
    assert asked == [["I work at", "My employer is"]]                  # no pause waited for
    qtbot.keyClick(dialog.contexts, Qt.Key_Return)
    qtbot.keyClicks(dialog.contexts, "I am with")
    assert len(asked) == 1
    qtbot.waitUntil(lambda: len(asked) == 2, timeout=CONTEXT_PAUSE_MS * 10)
    assert asked[-1] == ["I work at", "My employer is", "I am with"]


def test_learning_from_mail_reaches_matching_in_place_as_a_reload(library, monkeypatch):
    """Tools → Learn and each sent email learned follow matching in place (core/learning.mine): read
    whole, a large library held the lane for seconds per email.  What it proposes afterwards is what
    a matcher loaded from scratch proposes, mined phrases included, and nothing was read whole."""
    from chunkwise.core.corpus import Document
    from chunkwise.core.learning import mine
    from test_distill import EMAILS

    engine = library
    loads = []
    monkeypatch.setattr(engine.matcher, "load", lambda *a, real=engine.matcher.load, **k: loads.append(1) or real(*a, **k))
    result = mine(engine, [Document(f"e{i}", t) for i, t in enumerate(EMAILS)], gamma=0.5, knn=True)
    mine(engine, [Document("later", EMAILS[0] + "\n\n" + EMAILS[1])], gamma=0.5, knn=True)   # more contexts
    assert result.new_chunks > 0 and loads == []
    assert engine.contexts == len(_fresh(engine))
    # Where each mined phrase was written: the text before it, as the next suggestion would read it.
    mined = [c.text for c in engine.store.list_chunks() if c.kind in ("self", "teacher")]
    places = [e[: e.index(m)] for m in mined[:8] for e in EMAILS if m in e and e.index(m) > 0][:8]
    assert places
    assert _answers(engine, engine.matcher, places) == _answers(engine, _fresh(engine), places)
    _same(engine)


def test_many_mined_rows_reach_matching_in_place_without_a_huge_array(library):
    """Matching's in-place update compared every new row with every background query in one (queries,
    rows, d) array: 43 GB for the 20,000 contexts a Learn of a few hundred emails adds, a MemoryError
    after the store write.  (Engine.refresh reads an edit of more than IN_PLACE_MAX chunks whole, as
    learning did before; the update itself must still hold them.)"""
    from chunkwise.core.distill import MinedChunk, MinedContext

    engine, store = library, library.store
    rng = np.random.default_rng(1)
    d, mean = engine.runtime.n_embd, engine.matcher.stats.mean
    chunks = [MinedChunk(f"phrase {i}", (900 + i % 50, 901), [
        MinedContext(f"before phrase {i}.{j}", 100 + i % 300, mean + rng.standard_normal(d).astype(np.float32),
                     mean + rng.standard_normal(d).astype(np.float32)) for j in range(4)]) for i in range(5_000)]
    added = store.add_mined(engine.model_id, "self", chunks)
    engine.matcher.update(store, engine.model_id, added.chunk_ids)          # in place, whatever the size
    assert len(engine.matcher) == len(_fresh(engine)) > 20_000


def test_many_own_contexts_reach_matching_in_place_without_a_huge_array(library):
    """An edit of the user's own entries (an import of snippets, up to IN_PLACE_MAX chunks) is scored
    against every background query in _recalibrate.  Bug caught: the scores gathered each (query, row)
    pair's vectors, two (1,000 x rows, d) arrays: 1.8 GB each for 800 contexts, where one product of
    the distinct queries and rows needs 3 MB.  The background level must still be a reload's."""
    import tracemalloc

    from chunkwise.core.store_records import Encoding

    engine, store = library, library.store
    rng = np.random.default_rng(2)
    d, mean = engine.runtime.n_embd, engine.matcher.stats.mean
    ids = [store.add_chunk(f"Snippet number {i}, as imported.", "snippet", [f"Before snippet {i}.{j}" for j in range(4)])
           for i in range(200)]
    vector = lambda: (mean + rng.standard_normal(d)).astype(np.float32)
    store.save_encodings(engine.model_id, [Encoding(p.context_id, 500 + p.chunk_id % 100, (900, 901), vector(), vector(),
                                                    p.source_hash) for p in store.pending_encodings(engine.model_id, ids)])
    tracemalloc.start()
    try:
        engine.matcher.update(store, engine.model_id, ids)                  # in place: 800 own rows added
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 300 * 2**20, f"{peak / 2**20:.0f} MiB"
    fresh = _fresh(engine)
    assert len(engine.matcher) == len(fresh) and engine.matcher.calibration.background == pytest.approx(
        fresh.calibration.background, abs=1e-5)
