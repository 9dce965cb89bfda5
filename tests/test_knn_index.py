"""The kNN-LM's HNSW graph is built in the learning job, kept beside the store (sealed) and read
back on the next start instead of being built again on the first suggestion (core/knn.py
save_index / load_index, Engine.knn)."""
from __future__ import annotations

import numpy as np

import chunkwise.core.knn as knn_module
from chunkwise.core.corpus import Document
from chunkwise.core.learning import mine
from chunkwise.core.store import ChunkStore
from test_distill import EMAILS
from test_privacy_at_rest import holds_vector


def _learn(engine, texts=EMAILS):
    return mine(engine, [Document(f"e{i}", t) for i, t in enumerate(texts)], gamma=0.5, knn=True)


def _probe(engine) -> np.ndarray:
    rt = engine.runtime
    out = engine.runtime_states(rt.tokenize("Hi Sam,\n\nThank you for your email. I hope this", add_special=True))
    return out.hidden[-1]                                                       # (d,)


def test_learning_keeps_the_graph_and_the_next_start_reads_it_back(make_engine, tmp_path, monkeypatch):
    path = tmp_path / "chunks.db"
    engine = make_engine(store=ChunkStore(path))
    built = []
    real_build = knn_module.build_index
    monkeypatch.setattr(knn_module, "build_index", lambda *a, **k: built.append(1) or real_build(*a, **k))
    _learn(engine)
    assert built == [1] and engine.knn_index_path.exists()        # built once, in the learning job
    hidden = _probe(engine)
    before = engine.knn.neighbours(hidden)
    assert built == [1]                                          # the first suggestion builds nothing
    engine.store.close()

    again = make_engine(store=ChunkStore(path))                  # the next start
    after = again.knn.neighbours(hidden)
    assert built == [1]                                          # read back, not built
    assert after[0].tolist() == before[0].tolist() and np.allclose(after[1], before[1])
    assert len(again.knn) == again.store.knn_count(again.model_id)


def test_a_graph_of_other_rows_or_a_damaged_one_is_built_again(make_engine, tmp_path):
    path = tmp_path / "chunks.db"
    engine = make_engine(store=ChunkStore(path))
    _learn(engine, EMAILS[:2])
    first = engine.knn_index_path.read_bytes()
    _learn(engine, EMAILS[2:])                                    # more rows: the kept graph is for fewer
    assert engine.knn_index_path.read_bytes() == first            # a few rows: written at the close
    assert engine.knn.index.get_current_count() == engine.store.knn_count(engine.model_id)
    engine.keep_knn()                                             # (what Engine.close does first)
    assert engine.knn_index_path.read_bytes() != first
    engine.store.close()
    damaged = bytearray(engine.knn_index_path.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    engine.knn_index_path.write_bytes(bytes(damaged))
    again = make_engine(store=ChunkStore(path))
    assert again.knn.index.get_current_count() == again.store.knn_count(again.model_id)   # built, no error
    assert knn_module.load_index(again.knn_index_path, again._knn_signature(), again.store.key) is not None


def test_forgetting_what_was_learned_removes_the_kept_graph(make_engine, tmp_path):
    engine = make_engine(store=ChunkStore(tmp_path / "chunks.db"))
    _learn(engine)
    assert engine.knn_index_path.exists()
    engine.forget_learned()
    assert not engine.knn_index_path.exists()
    assert not engine.has_knn


def test_the_kept_graph_is_sealed_with_the_store_key(make_engine, tmp_path):
    engine = make_engine(store=ChunkStore(tmp_path / "chunks.db"))
    _learn(engine)
    key_row = engine.matcher.stats.transform(engine.store.knn_data(engine.model_id)[0][:1])[0]   # as the graph keeps it
    assert not holds_vector(engine.knn_index_path.read_bytes(), key_row)
    plain = tmp_path / "plain.knn.hnsw"                               # the control: unsealed, the vector is there
    knn_module.save_index(engine.knn.index, plain, "sig", key=None)
    assert holds_vector(plain.read_bytes(), key_row)
    assert knn_module.load_index(plain, "another datastore") is None
    assert knn_module.load_index(engine.knn_index_path, engine._knn_signature(), key=None) is None   # sealed


def test_learning_more_grows_the_kept_graph_instead_of_building_it_again(make_engine, tmp_path, monkeypatch):
    """A learned email adds rows to a graph that may hold 100k: building it whole again held the lane
    84 s there.  Grown, it finds what a graph built over all the rows finds, and the next start reads
    it back."""
    path = tmp_path / "chunks.db"
    engine = make_engine(store=ChunkStore(path))
    built = []
    real_build = knn_module.build_index
    monkeypatch.setattr(knn_module, "build_index", lambda *a, **k: built.append(1) or real_build(*a, **k))
    _learn(engine, EMAILS[:2])
    rows_before = len(engine.knn)
    _learn(engine, EMAILS[2:])
    assert built == [1]                                           # grown, not built again
    rows = engine.store.knn_count(engine.model_id)
    assert rows > rows_before and len(engine.knn) == engine.knn.index.get_current_count() == rows
    keys, values, ids, probs, _teacher = engine.store.knn_data(engine.model_id)
    assert engine.knn.values.tolist() == values.tolist()           # the rows in the store's order
    assert (engine.knn.topk_ids is None) == (ids is None)
    whole = knn_module.KnnLM(engine.matcher.stats, keys, values, ids, probs, engine.knn_settings)
    hidden = _probe(engine)
    grown_labels, grown_dist = engine.knn.neighbours(hidden)
    whole_labels, whole_dist = whole.neighbours(hidden)
    assert set(grown_labels.tolist()) == set(whole_labels.tolist()) and np.allclose(np.sort(grown_dist), np.sort(whole_dist))
    p_lm = np.full(engine.runtime.n_vocab, 1.0 / engine.runtime.n_vocab)
    assert np.allclose(engine.knn.distribution(p_lm, hidden), whole.distribution(p_lm, hidden))
    engine.store.close()

    engine.keep_knn()                                             # what Engine.close does first
    grown = []
    real_grow = knn_module.grow_index
    monkeypatch.setattr(knn_module, "grow_index", lambda *a, **k: grown.append(1) or real_grow(*a, **k))
    again = make_engine(store=ChunkStore(path))                   # the next start reads the grown graph back
    assert again.knn.neighbours(hidden)[0].tolist() == grown_labels.tolist()
    assert len(built) == 2 and grown == []                        # (built: the one above, for comparison)


def test_a_graph_kept_before_learning_grows_when_the_datastore_was_not_in_memory(make_engine, tmp_path, monkeypatch):
    """With "Also predict from my writing" off, or before the first suggestion used it, learning finds
    no datastore in memory: the graph kept for the earlier rows grows by the new ones."""
    path = tmp_path / "chunks.db"
    engine = make_engine(store=ChunkStore(path))
    _learn(engine, EMAILS[:2])
    engine.store.close()
    built = []
    real_build = knn_module.build_index
    monkeypatch.setattr(knn_module, "build_index", lambda *a, **k: built.append(1) or real_build(*a, **k))
    again = make_engine(store=ChunkStore(path))                   # nothing in memory yet
    _learn(again, EMAILS[2:])
    assert built == []
    assert again.knn.index.get_current_count() == again.store.knn_count(again.model_id)
    assert knn_module.load_index(again.knn_index_path, again._knn_signature(), again.store.key) is not None


def test_a_kept_graph_of_rows_the_store_no_longer_holds_is_built_again(make_engine, tmp_path):
    """Forgetting clears the rows; were its graph left behind, rows learned afterwards reuse the ids (so
    as many rows up to the same id), and the old graph must not stand in for their first rows."""
    path = tmp_path / "chunks.db"
    engine = make_engine(store=ChunkStore(path))
    _learn(engine, EMAILS[2:])
    stale = engine.knn_index_path.read_bytes()
    engine.forget_learned()
    _learn(engine, EMAILS)                                         # more rows, the first ids used again
    engine.knn_index_path.write_bytes(stale)                       # a graph for the rows forgotten
    engine.forget_knn()
    keys, values, ids, probs, _teacher = engine.store.knn_data(engine.model_id)
    whole = knn_module.KnnLM(engine.matcher.stats, keys, values, ids, probs, engine.knn_settings)
    hidden = _probe(engine)
    assert set(engine.knn.neighbours(hidden)[0].tolist()) == set(whole.neighbours(hidden)[0].tolist())


def _one_by_one(engine, texts, monkeypatch=None) -> set[str]:
    """Each text learned on its own, as the editor learns each sent email (the editor's options); with
    *monkeypatch*, the mining teacher is the batch alone, as before earlier mail joined it."""
    from chunkwise.core import learning
    from chunkwise.core.corpus import own_words

    if monkeypatch is not None:
        real = learning.corpus_knn_teacher
        monkeypatch.setattr(learning, "corpus_knn_teacher", lambda e: real(e)._replace(earlier=None))
    for i, text in enumerate(texts):
        mine(engine, [Document(f"sent email {i + 1}", own_words(text))], gamma=0.5, knn=True, corpus_teacher=True)
    return {c.text for c in engine.store.list_chunks() if c.kind in ("self", "teacher")}


def test_an_email_learned_on_its_own_is_taught_by_the_mail_learned_before(make_engine, monkeypatch):
    """The editor learns each sent email alone.  The mining teacher is the kNN-LM of the *other*
    documents; alone in its batch, an email had none, and the phrases the user repeats from earlier
    mail were cut on the model's confidence only.  Now the mail learned before teaches it: phrases
    the emails share become chunks as they do when the same mail is learned at once."""
    alone = _one_by_one(make_engine(), EMAILS, monkeypatch)
    monkeypatch.undo()
    taught = _one_by_one(make_engine(), EMAILS)
    batch_engine = make_engine()
    mine(batch_engine, [Document(f"e{i}", t) for i, t in enumerate(EMAILS)], gamma=0.5, knn=True, corpus_teacher=True)
    batch = {c.text for c in batch_engine.store.list_chunks() if c.kind in ("self", "teacher")}
    missed = batch - alone                 # ("\nDana", " this message finds you well.", ...)
    assert missed
    assert len(batch & taught) > len(batch & alone)
    assert 2 * len(missed & taught) >= len(missed)   # at least half of what learning alone missed


def test_an_email_learned_again_does_not_teach_itself(make_engine):
    """A sent email learned twice (sent again, or read again by Learn from my writing) finds its own rows
    in the datastore: taken as another document's, every token of it would read as certain and the
    whole email would become chunks."""
    once = _one_by_one(make_engine(), EMAILS[:1])
    twice = _one_by_one(make_engine(), [EMAILS[0], EMAILS[0]])
    assert twice == once


def test_the_graph_grows_in_slices_and_a_suggestion_between_two_reads_it_whole(make_engine, tmp_path, monkeypatch):
    """A first Learn of a few hundred emails adds a minute of graph: the learning job adds it in slices
    and may answer a suggestion between two (app/worker.py passes its step as index_progress).  There
    the datastore in memory is whole (as many values as graph rows); while the first graph is built
    the kNN-LM sits out rather than being built again inside the suggestion."""
    monkeypatch.setattr(knn_module, "GROW_SLICE", 16)
    engine = make_engine(store=ChunkStore(tmp_path / "chunks.db"))
    hidden = _probe(engine)
    p_lm = np.full(engine.runtime.n_vocab, 1.0 / engine.runtime.n_vocab)
    seen = []

    def between(done, total):
        if not engine.has_knn:
            seen.append((done, total, None))
            return
        knn = engine.knn
        assert len(knn) == knn.index.get_current_count()
        seen.append((done, total, float(knn.distribution(p_lm, hidden).sum())))

    mine(engine, [Document(f"e{i}", t) for i, t in enumerate(EMAILS[:2])], gamma=0.5, knn=True, index_progress=between)
    assert len(seen) > 1 and all(s[2] is None for s in seen)          # the first graph: built, not read
    assert seen[-1][0] == seen[-1][1]
    seen.clear()
    mine(engine, [Document("e2", EMAILS[2])], gamma=0.5, knn=True, index_progress=between)
    assert len(seen) > 1 and all(s[2] is not None and abs(s[2] - 1.0) < 1e-6 for s in seen)
    assert len(engine.knn) == engine.store.knn_count(engine.model_id)


def test_closing_keeps_the_rows_learned_since_the_graph_was_last_kept(make_engine, tmp_path, monkeypatch):
    """Learning writes the graph again only every KEEP_AFTER_ROWS rows; the engine's close writes the rest,
    so the next start reads it back whole instead of growing it (or, without it, building it)."""
    from chunkwise.core.engine import Engine

    path = tmp_path / "chunks.db"
    own = Engine(store=ChunkStore(path), n_threads=2)            # its own model: close() closes it
    _learn(own, EMAILS[:2])
    _learn(own, EMAILS[2:])                                       # a few rows: not written yet
    own.close()
    work = []
    for name in ("build_index", "grow_index"):
        real = getattr(knn_module, name)
        monkeypatch.setattr(knn_module, name, lambda *a, real=real, **k: work.append(1) or real(*a, **k))
    again = make_engine(store=ChunkStore(path))
    assert len(again.knn) == again.store.knn_count(again.model_id) and work == []


def test_a_learning_job_stopped_while_the_graph_grows_leaves_a_datastore_that_is_read_afresh(
        make_engine, tmp_path, monkeypatch):
    """The window closing stops a learning job at a progress call, between two slices of rows.  The
    datastore in memory then holds some of the new rows: it is neither kept under the old rows' name
    nor grown from the old rows again (which would add those rows twice)."""
    monkeypatch.setattr(knn_module, "GROW_SLICE", 16)
    engine = make_engine(store=ChunkStore(tmp_path / "chunks.db"))
    _learn(engine, EMAILS[:2])
    kept = engine.knn_index_path.read_bytes()
    calls = []

    def stop_at_the_second(done, total):
        calls.append(done)
        if len(calls) == 2:
            raise RuntimeError("the window is closing")

    try:
        mine(engine, [Document("e2", EMAILS[2])], gamma=0.5, knn=True, index_progress=stop_at_the_second)
    except RuntimeError:
        pass
    engine.keep_knn()
    assert engine.knn_index_path.read_bytes() == kept            # not written under a name it does not hold
    engine.catch_up_knn()
    keys, values, ids, probs, _teacher = engine.store.knn_data(engine.model_id)
    assert len(engine.knn) == engine.knn.index.get_current_count() == len(values)
    assert engine.knn.values.tolist() == values.tolist()


def test_a_missing_graph_of_earlier_mail_is_built_in_slices_before_the_mail_is_mined(make_engine, tmp_path, monkeypatch):
    """The mail learned before teaches the next email, so its datastore is needed before mining; where
    its kept graph is missing (or of an older format) it is built then, in slices a suggestion may come
    between, not in one block at the first suggestion."""
    from chunkwise.core.distill import Miner

    monkeypatch.setattr(knn_module, "GROW_SLICE", 16)
    engine = make_engine(store=ChunkStore(tmp_path / "chunks.db"))
    _learn(engine, EMAILS[:2])
    engine.forget_knn(kept_too=True)                              # as after an upgrade: no graph to read
    events = []
    real_mine = Miner.mine
    monkeypatch.setattr(Miner, "mine", lambda self, *a, **k: events.append("mining") or real_mine(self, *a, **k))
    mine(engine, [Document("e2", EMAILS[2])], gamma=0.5, knn=True, corpus_teacher=True,
         index_progress=lambda done, total: events.append(("slice", engine.has_knn)))
    before = events[: events.index("mining")]
    assert len(before) > 1 and all(e == ("slice", False) for e in before)
