"""The llama.cpp runtime against the real default model."""
import numpy as np
import pytest

from chunkwise.core.errors import ModelError
from chunkwise.core.llama_runtime import BATCH_TOLERANCE, LlamaRuntime, check_gguf


@pytest.fixture(scope="module")
def reference_tokenizer():
    from llama_cpp import Llama

    from chunkwise.core.paths import bundled_model_path

    return Llama(model_path=str(bundled_model_path()), vocab_only=True, verbose=False)


@pytest.mark.parametrize("text", ["Dear Anna,\n\nThanks for the report.", "Grüße 👋 — ok", " leading space", ""])
def test_tokenize_matches_llama_cpp_python(runtime, reference_tokenizer, text):
    assert runtime.tokenize(text) == reference_tokenizer.tokenize(text.encode(), add_bos=True, special=False)


def test_detokenize_round_trips(runtime):
    text = "Hello there, Grüße 👋\nsecond line"
    assert runtime.detokenize(runtime.tokenize(text, add_special=False)) == text


def test_eval_returns_logits_and_hidden_for_the_positions_asked(runtime):
    runtime.reset()
    toks = runtime.tokenize("The quick brown fox jumps over")
    out = runtime.eval(toks, outputs=[1, len(toks) - 1])
    assert out.logits.shape == (2, runtime.n_vocab)
    assert out.hidden.shape == (2, runtime.n_embd)
    assert out.positions.tolist() == [1, len(toks) - 1]
    assert np.isfinite(out.hidden).all() and not np.allclose(out.hidden[0], out.hidden[1])
    assert runtime.tokens == tuple(toks)


def test_the_kv_bookkeeping_is_read_only_from_outside(runtime):
    """One owner of the KV state (core/llama_runtime.py): callers read ``tokens`` and ``dropped``
    and change the cache only through the runtime's methods."""
    runtime.reset()
    runtime.sync(runtime.tokenize("One. Two. Three"), hidden=False)
    assert isinstance(runtime.tokens, tuple) and isinstance(runtime.dropped, frozenset)
    for name in ("tokens", "dropped"):
        with pytest.raises(AttributeError):
            setattr(runtime, name, ())                  # no setter: assigning them is an error
    assert runtime.drop([2, 3]) == 2 and runtime.dropped == {2, 3} and runtime.kv_tokens_kept == len(runtime.tokens) - 2
    runtime.reset()
    assert runtime.tokens == () and runtime.dropped == frozenset()


def test_sync_reuses_the_longest_shared_prefix(runtime):
    runtime.reset()
    base = runtime.tokenize("Dear Anna, thank you for the lovely dinner on Saturday.")
    runtime.sync(base)
    before = runtime.evaluated_tokens
    grown = base + runtime.tokenize(" We had a great time.", add_special=False)
    incremental = runtime.sync(grown)
    assert runtime.evaluated_tokens - before == len(grown) - len(base)   # only the new tokens
    # an edit in the middle reuses up to the first changed token
    edited = base[:5] + runtime.tokenize(" Bob, thanks", add_special=False)
    before = runtime.evaluated_tokens
    runtime.sync(edited)
    assert runtime.evaluated_tokens - before == len(edited) - 5
    # incremental logits agree with a fresh evaluation
    runtime.reset()
    fresh = runtime.sync(grown)
    assert np.argmax(fresh.logits[-1]) == np.argmax(incremental.logits[-1])
    np.testing.assert_allclose(fresh.logits[-1], incremental.logits[-1], atol=0.05)


def test_sync_reuses_hidden_states_read_before_and_only_those(runtime):
    """What a typing pause does: the previous suggestion read the draft's last tokens with their hidden
    states; the next request, one word longer, evaluates only the new tokens and gets the local
    window's rows of the old ones as read then (the same numbers a fresh evaluation gives).
    Bugs caught: rows re-evaluated every time (the cost this saves), and stale rows served for
    positions whose tokens changed since, or that were evaluated without their hidden states."""
    runtime.reset()
    draft = runtime.tokenize("Dear Anna, thank you for the lovely dinner on Saturday.")
    word = runtime.tokenize(" We", add_special=False)
    runtime.sync(draft, last=3)                                   # the previous request read 3 rows
    before = runtime.evaluated_tokens
    reused = runtime.sync(draft + word, last=3, reuse_hidden=True)
    assert runtime.evaluated_tokens - before == len(word)         # the new word alone
    assert reused.hidden.shape == (3, runtime.n_embd) and len(reused.logits) == len(word)
    runtime.reset()
    fresh = runtime.sync(draft + word, last=3)
    np.testing.assert_allclose(reused.hidden, fresh.hidden, atol=BATCH_TOLERANCE)
    np.testing.assert_allclose(reused.logits[-1], fresh.logits[-1], atol=BATCH_TOLERANCE)

    # Only some of the window's rows read (the last one): the window is evaluated again, not half taken.
    runtime.reset()
    runtime.sync(draft, last=1)
    before = runtime.evaluated_tokens
    partial = runtime.sync(draft + word, last=3, reuse_hidden=True)
    assert runtime.evaluated_tokens - before == 3
    np.testing.assert_allclose(partial.hidden, fresh.hidden, atol=BATCH_TOLERANCE)
    # A hole in the window (anchor reduction dropped a cell): nothing past it is taken.
    runtime.reset()
    runtime.sync(draft, last=3)
    runtime.drop([len(draft) - 2])
    before = runtime.evaluated_tokens
    runtime.sync(draft + word, last=3, reuse_hidden=True)
    assert runtime.evaluated_tokens - before == 3

    # Read without hidden states: nothing to reuse, so the window is evaluated as before.
    runtime.reset()
    runtime.sync(draft, hidden=False)
    before = runtime.evaluated_tokens
    runtime.sync(draft + word, last=3, reuse_hidden=True)
    assert runtime.evaluated_tokens - before == 3
    # Other tokens at the same positions since: their rows are not the old ones.
    runtime.reset()
    other = runtime.tokenize("Dear Anna, thank you for the lovely lunch on Sunday.")
    assert len(other) == len(draft) and other[:8] == draft[:8] and other[8] != draft[8]   # "lunch" for "dinner"
    runtime.sync(other, last=3)                                   # rows read at the last three positions
    runtime.truncate(8)
    runtime.eval(draft[8:], outputs="last", hidden=False)         # draft's tail there, no rows read
    before = runtime.evaluated_tokens
    now = runtime.sync(draft + word, last=3, reuse_hidden=True)
    assert runtime.evaluated_tokens - before == 3                 # other's rows were not taken
    runtime.reset()
    np.testing.assert_allclose(now.hidden, runtime.sync(draft + word, last=3).hidden, atol=BATCH_TOLERANCE)
    runtime.reset()


def test_a_prompt_the_cache_holds_whole_is_answered_from_the_logits_read_then(runtime):
    """A word healed back to the very token the last suggestion spelled, or a suggestion taken whole
    with Tab: the next prompt is all in the cache and its last token's logits were read by an earlier
    decode, so nothing is evaluated again.  Bugs caught: the last token decoded once more (the decode
    this saves, the first-token latency of bench/first_token.py), and logits served from the other mode
    (contract point 4), from another token that held the position, or from a position forgotten since."""
    draft = runtime.tokenize("Dear Anna, thank you for the lovely dinner on Saturday.")
    steps = runtime.tokenize(" We had", add_special=False)
    for hidden, last in ((False, 1), (True, 1), (True, 3)):
        runtime.reset()
        runtime.sync(draft[:-1], last=last, hidden=hidden)            # a request's prefill...
        runtime.eval(draft[-1:], hidden=hidden)                       # ...its suggestion's first step
        runtime.eval(steps, outputs="all", hidden=hidden)             # ...and the steps after it
        before = runtime.evaluated_tokens
        served = runtime.sync(draft, last=last, hidden=hidden, reuse_hidden=True)
        assert runtime.evaluated_tokens == before, (hidden, last)
        assert runtime.tokens == tuple(draft)                         # the suggestion's steps are gone
        runtime.reset()
        fresh = runtime.sync(draft, last=last, hidden=hidden)
        assert np.argmax(served.logits[-1]) == np.argmax(fresh.logits[-1])
        np.testing.assert_allclose(served.logits[-1], fresh.logits[-1], atol=BATCH_TOLERANCE)
        np.testing.assert_allclose(served.hidden, fresh.hidden, atol=BATCH_TOLERANCE)

    # Read with hidden states on: a plain request (the path that must be llama-cpp-python's, contract
    # point 1) evaluates the token again; and the other way round.
    for read, asked in ((True, False), (False, True)):
        runtime.reset()
        runtime.sync(draft, hidden=read)
        before = runtime.evaluated_tokens
        runtime.sync(draft, hidden=asked, reuse_hidden=True)
        assert runtime.evaluated_tokens == before + 1
    # Another token held the last position; the cache forgot it and took the draft's token there in
    # a prefill's head, which reads no outputs (_segments): the other token's row is not served.
    runtime.reset()
    text = runtime.tokenize("Dear Anna, thank you for the lovely dinner on Saturday. The food was wonderful and "
                            "the company even better; we talked until midnight about the garden, the new job "
                            "and the trip to Lisbon next spring.")
    tail = runtime.tokenize(" We should do it again soon, perhaps at our place this time, once the kitchen "
                            "is finished and the boxes are gone from the hall, and the children are back from "
                            "their grandparents in the mountains.", add_special=False)
    other = text[:-1] + runtime.tokenize("!", add_special=False)
    assert other[-1] != text[-1] and len(tail) > 32
    runtime.sync(other, hidden=False)                                 # logits read at the last position
    runtime.truncate(len(text) - 8)
    runtime.sync(text + tail, hidden=True)                            # text's last 8 in a head of no outputs
    before = runtime.evaluated_tokens
    now = runtime.sync(text, hidden=False)
    assert runtime.evaluated_tokens == before + 1
    runtime.reset()
    np.testing.assert_allclose(now.logits[-1], runtime.sync(text, hidden=False).logits[-1], atol=BATCH_TOLERANCE)
    runtime.reset()


def test_the_logits_memo_serves_no_cache_with_holes_and_no_other_context(runtime):
    """Two ways the logits memo could serve a row the prompt does not have.  Anchor reduction removed
    positions from the cache (holes): a request that asks for no reduction must see every token, so the
    cache is rebuilt from the first hole, not answered from the logits read before the holes were made.
    And the side context (library contexts) keeps its own memo: a row it read at a position must not
    answer the main context's prompt there.  Bugs caught: a cache left with holes under a plain request;
    the main context served the side's logits for another text of the same length."""
    text = runtime.tokenize("Dear Anna, thank you for the lovely dinner on Saturday. We had a wonderful time.")
    runtime.reset()
    runtime.sync(text, hidden=False)
    assert runtime.drop(range(5, 9)) == 4
    before = runtime.evaluated_tokens
    runtime.sync(text, hidden=False)
    assert runtime.dropped == frozenset() and runtime.evaluated_tokens == before + len(text) - 5

    other = runtime.tokenize("Hello Tom, thanks for the quick reply about the invoice and the plan for Monday.")
    other = (other + other)[:len(text)]
    assert len(other) == len(text) and other[-1] != text[-1]
    runtime.reset()
    mine = runtime.sync(text, hidden=False).logits[-1].copy()
    runtime.aside().sync(other, hidden=False)                         # the same position, another text
    served = runtime.sync(text, hidden=False)
    np.testing.assert_array_equal(served.logits[-1], mine)
    runtime.reset()


def test_numpy_leaves_the_cores_to_llama_cpp(runtime):
    """OpenBLAS threads spinning after a small product took the cores a decode needed (one-token
    decodes p90 61 ms against 13 with one BLAS thread, bench/first_token.py).  Bug caught: loading a
    model leaving numpy's BLAS threads as they were."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        x = np.ones((300, 300), np.float32)
        assert (x @ x).shape == (300, 300)            # BLAS loaded and used
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    threadpool_limits(2, user_api="blas")             # as a process starts on this machine, or more
    assert blas_threads() == {2}
    other = LlamaRuntime(runtime.model_path, n_ctx=256)
    try:
        assert blas_threads() == {1}
    finally:
        other.close()


def test_the_side_context_reads_as_the_main_one(runtime):
    """Library contexts are read in the side context (LlamaRuntime.aside) so the draft stays cached in
    the main one; their stored vectors must be what the main context gives (matching compares them
    with states the main context computes while decoding), and the main cache must not move."""
    from chunkwise.core.encoding import local_rows

    side = runtime.aside()
    assert side is runtime.aside() and side.n_ctx < runtime.n_ctx
    draft = runtime.tokenize("Hi Tom,\n\nThanks for the quick reply.")
    for text in ("My email is", "Please send the parcel to my home address:"):
        toks = runtime.tokenize(text)
        runtime.reset()
        main = runtime.sync(toks, last=local_rows(len(toks), first=1))
        runtime.sync(draft)
        read = side.sync(toks, last=local_rows(len(toks), first=1))
        assert np.array_equal(main.hidden, read.hidden) and np.array_equal(main.logits, read.logits)
        assert runtime.tokens == tuple(draft)


def test_a_closed_runtime_has_no_side_context():
    """After close, asking for the side context is a clear error, not a context over a freed model."""
    from chunkwise.core.paths import bundled_model_path

    rt = LlamaRuntime(bundled_model_path(), n_ctx=256, n_threads=1)
    rt.aside()
    rt.close()
    with pytest.raises(ModelError):
        rt.aside()


def test_truncate_forgets_the_tail(runtime):
    runtime.reset()
    toks = runtime.tokenize("one two three four five")
    runtime.sync(toks)
    runtime.truncate(3)
    assert runtime.tokens == tuple(toks[:3])
    out = runtime.sync(toks)
    assert runtime.tokens == tuple(toks) and out.logits.shape[0] == 1


def test_a_memory_that_cannot_drop_a_tail_keeps_the_context_it_kept(runtime, monkeypatch):
    """Issue 12. Bug caught: for a model whose memory cannot remove a tail (llama_memory_seq_rm says
    no, as recurrent models do), truncate cleared the whole cache and generation went on at position 0
    with no context. The runtime double is that one call only; the model and its cache are real."""
    toks = runtime.tokenize("Hi Tom,\n\nThanks for the update on the budget. I will send")
    runtime.reset()
    runtime.eval(toks[:10], hidden=False)
    expected = runtime.eval(toks[10:11], hidden=False).logits[-1].copy()
    runtime.reset()
    runtime.eval(toks, hidden=False)
    monkeypatch.setattr(runtime._lib, "llama_memory_seq_rm", lambda *args: False)
    runtime.truncate(10)
    monkeypatch.undo()
    assert runtime.tokens == tuple(toks[:10])
    assert np.array_equal(runtime.eval(toks[10:11], hidden=False).logits[-1], expected)


def test_chat_template_is_the_models_own(runtime):
    text = runtime.chat_prompt([{"role": "user", "content": "Hi"}])
    assert "<|im_start|>user\nHi<|im_end|>" in text and text.rstrip().endswith("<|im_start|>assistant")


def test_context_window_overflow_is_a_clear_error(runtime):
    runtime.reset()
    with pytest.raises(ModelError, match="context window"):
        runtime.sync([runtime.bos] * (runtime.n_ctx + 1))


def test_bad_model_files_get_clear_messages(tmp_path):
    with pytest.raises(ModelError, match="not found"):
        check_gguf(tmp_path / "missing.gguf")
    text = tmp_path / "notes.gguf"
    text.write_text("hello")
    with pytest.raises(ModelError, match="Not a GGUF"):
        check_gguf(text)
    with pytest.raises(ModelError, match="folder"):
        check_gguf(tmp_path)


def test_truncated_gguf_does_not_crash(tmp_path):
    from chunkwise.core.paths import bundled_model_path

    cut = tmp_path / "cut.gguf"
    with open(bundled_model_path(), "rb") as src:
        cut.write_bytes(src.read(2 << 20))
    with pytest.raises(ModelError, match="could not load"):
        LlamaRuntime(cut)


def test_memory_check_counts_page_cache_as_available(tmp_path):
    """A machine with most memory in page cache has little *free* but plenty *available*: the
    context-size check read free pages and refused contexts that fit."""
    from chunkwise.core.memory_budget import available_memory

    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemFree:          300000 kB\n"
                       "MemAvailable:   20000000 kB\nCached:         19000000 kB\n", encoding="ascii")
    assert available_memory(str(meminfo)) == 20000000 * 1024
    assert available_memory(str(tmp_path / "missing")) is not None      # falls back to the system's figure


def test_a_context_too_large_for_memory_is_refused_before_llama_cpp_tries(monkeypatch):
    from chunkwise.core import memory_budget
    from chunkwise.core.errors import ModelError

    need = memory_budget.kv_cache_bytes(n_layer=30, n_embd=576, n_head=9, n_head_kv=3, n_ctx=2048)
    monkeypatch.setattr(memory_budget, "available_memory", lambda: int(need / memory_budget.HEADROOM))
    memory_budget.check_context(2048, need, "m.gguf")                      # fits, just
    with pytest.raises(ModelError, match="2,049 tokens needs"):
        memory_budget.check_context(2049, need + 1, "m.gguf")
    monkeypatch.setattr(memory_budget, "available_memory", lambda: None)
    memory_budget.check_context(1 << 30, 1 << 60, "m.gguf")               # the system does not say: no check


def test_kv_bytes_is_the_models_cache(runtime):
    assert runtime.kv_bytes(2048) == 2048 * runtime.kv_bytes(1) > 0


# ------------------------------------------------------------ the bit-exactness contract
# Stated once, in core/llama_runtime.py's docstring; these check its points 2 and 3 (point 1:
# tests/test_generation.py::test_empty_store_equals_plain_greedy_decoding).

CONTRACT_PROMPT = "Hi Tom,\n\nThanks for getting back to me so quickly. Please mail the package to our office at"
CONTRACT_CHUNK = " 100 Innovation Drive, Tech Park, Silicon Valley, CA 94088, USA"


def _token_by_token(runtime, head, tail, hidden):
    """Logits (n, V) and hidden states (n, d) of *tail* decoded one token at a time after *head*."""
    runtime.reset()
    runtime.eval(head, hidden=hidden)
    outs = [runtime.eval([t], hidden=hidden) for t in tail]
    return np.stack([o.logits[0] for o in outs]), np.stack([o.hidden[0] for o in outs]) if hidden else None


def _greedy(runtime, logits, n, hidden):
    """*n* greedy choices from *logits* on, one decode each; and the top-2 margin at each."""
    chosen, margins = [], []
    for _ in range(n):
        top2 = np.sort(logits)[-2:]
        chosen.append(int(np.argmax(logits)))
        margins.append(float(top2[1] - top2[0]))
        logits = runtime.eval([chosen[-1]], hidden=hidden).logits[0].copy()
    return chosen, margins


@pytest.mark.parametrize("hidden", [False, True])
def test_batches_up_to_the_exact_size_are_single_steps_bit_for_bit(runtime, hidden):
    """Point 2, at positions the probe did not measure: every batch of up to ``exact`` tokens gives,
    row for row, the bits of one token at a time (what keeps drafting lossless)."""
    exact = runtime.batch_profile().exact
    toks = runtime.tokenize(CONTRACT_PROMPT + CONTRACT_CHUNK)
    head, tail = toks[:20], toks[20:20 + exact]
    logits, states = _token_by_token(runtime, head, tail, hidden)
    for n in range(1, exact + 1):
        runtime.truncate(len(head))
        out = runtime.eval(tail[:n], outputs="all", hidden=hidden)
        assert np.array_equal(out.logits, logits[:n]), n
        if hidden:
            assert np.array_equal(out.hidden, states[:n]), n
    runtime.reset()


@pytest.mark.parametrize("hidden", [False, True])
def test_a_chunk_in_one_decode_is_the_chunk_token_by_token(runtime, hidden):
    """Point 3: a chunk of 22 tokens (past any exact size probed) decoded in one batch, as the
    decoder inserts it, leaves logits and hidden states within BATCH_TOLERANCE of stepping through
    it, and greedy decoding after it makes the same choices (a near-tie may flip, no more)."""
    head = runtime.tokenize(CONTRACT_PROMPT)
    chunk = runtime.tokenize(CONTRACT_CHUNK, add_special=False)
    assert len(chunk) > 8
    logits, states = _token_by_token(runtime, head, chunk, hidden)
    after_steps = _greedy(runtime, logits[-1], 8, hidden)
    for outputs in ("all", "last"):                    # "last": Decoder.decode_step's request
        runtime.reset()
        runtime.eval(head, hidden=hidden)
        out = runtime.eval(chunk, outputs=outputs, hidden=hidden)
        rows = slice(None) if outputs == "all" else slice(-1, None)
        np.testing.assert_allclose(out.logits, logits[rows], rtol=0, atol=BATCH_TOLERANCE)
        if hidden:
            np.testing.assert_allclose(out.hidden, states[rows], rtol=0, atol=BATCH_TOLERANCE)
        chosen, margins = _greedy(runtime, out.logits[-1].copy(), 8, hidden)
        first_diff = next((i for i, (a, b) in enumerate(zip(chosen, after_steps[0])) if a != b), None)
        assert first_diff is None or margins[first_diff] < 2 * BATCH_TOLERANCE, (chosen, after_steps[0])
    runtime.reset()
