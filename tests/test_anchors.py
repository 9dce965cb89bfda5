"""Anchor-based KV reduction on the real model: what stays, what goes, and that decoding goes on."""
from chunkwise.core.anchors import AnchorReducer, is_anchor_piece
from chunkwise.core.engine import GenerationRequest

TEXT = "Dear team,\n\nSales grew by ten percent. Costs stayed flat. The new office opens in May. Next"


def test_anchor_pieces():
    assert is_anchor_piece(b".") and is_anchor_piece(b"? ") and is_anchor_piece(b" May.")
    assert not is_anchor_piece(b" May") and not is_anchor_piece(b"...") and not is_anchor_piece(b"\n")


def test_reduction_keeps_prefix_anchors_and_the_current_sentence(runtime):
    runtime.reset()
    tokens = runtime.tokenize(TEXT)
    runtime.sync(tokens, hidden=False)
    reducer = AnchorReducer(runtime, keep_prefix=4)
    removed = reducer.reduce()
    anchors = [i for i, t in enumerate(tokens) if reducer.is_anchor(t)]
    last = anchors[-1]
    kept = set(range(len(tokens))) - runtime.dropped
    assert removed > 0 and runtime.kv_tokens_kept == len(tokens) - removed
    assert set(range(4)) <= kept and set(anchors) <= kept and set(range(last, len(tokens))) <= kept
    assert all(i in kept or (4 <= i < last) for i in range(len(tokens)))
    assert reducer.reduce() == 0                              # idempotent
    out = runtime.eval(runtime.tokenize(" week", add_special=False), hidden=False)   # decoding goes on
    assert out.logits.shape[0] == 1 and runtime.tokens[-1] == runtime.tokenize(" week", add_special=False)[-1]
    runtime.truncate(5)
    assert runtime.dropped == {4} & runtime.dropped and runtime.kv_tokens_kept == 5 - len(runtime.dropped)


def test_generation_with_anchor_reduction_reports_cells(make_engine):
    engine = make_engine()
    full = engine.generate(GenerationRequest(TEXT, max_tokens=20))
    reduced = engine.generate(GenerationRequest(TEXT, max_tokens=20, anchor_reduction=True))
    assert full.stats.kv_tokens_kept == full.stats.kv_positions
    assert reduced.stats.kv_tokens_kept < reduced.stats.kv_positions and reduced.text
    # the reduced cache is not reused as if it were whole by a later plain request
    again = engine.generate(GenerationRequest(TEXT, max_tokens=20))
    assert again.text == full.text
