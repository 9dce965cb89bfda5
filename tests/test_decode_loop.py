"""The decode loop's order within a step (core/decoding.py, Decoder.step): what a step commits is
shown before its one forward pass, which only prepares the next step."""
from chunkwise.core.batch_profile import BatchProfile
from chunkwise.core.engine import GenerationRequest
from tests.test_chunks_in_generation import EMAIL_OPENING
from tests.test_drafting import QUOTE


def test_a_chunk_is_shown_before_the_runtime_decodes_it(pii_engine):
    rt = pii_engine.runtime
    gen = pii_engine.stream(GenerationRequest(EMAIL_OPENING + "Please mail the package to our office at",
                                              max_tokens=30))
    arrivals, chunk_tokens = [], 0
    for piece in gen:
        if piece.from_chunk:
            new = gen.stats.chunk_tokens - chunk_tokens         # this chunk's tokens, counted when it was taken
            chunk_tokens = gen.stats.chunk_tokens
            arrivals.append((len(rt.tokens), gen.stats.prompt_tokens + gen.stats.tokens - new))
    assert arrivals and all(cached == before_chunk for cached, before_chunk in arrivals)


def test_with_drafts_the_sampled_token_is_shown_before_the_batch_that_checks_its_draft(make_engine, monkeypatch):
    """At every decode after the first piece, the text shown is the text of the tokens decoded so
    far plus the batch's first token (the step's own token): never less (a draft check ran before
    the sampled token went out), never more."""
    engine = make_engine()
    rt = engine.runtime
    monkeypatch.setattr(rt, "_batch_profile", BatchProfile(rt.batch_profile().exact, {1: 1.0, 2: 1.6, 4: 2.4, 8: 4.0}))
    gen = engine.stream(GenerationRequest(QUOTE, max_tokens=40, draft=True, draft_cap=8, guard_details=False))
    shown, checks, real_eval = [], [], rt.eval

    def eval(tokens, *args, **kwargs):
        if shown:                                               # after prefill: a step's forward pass
            decoded = rt.tokens[gen.stats.prompt_tokens:] + (tokens[0],)
            checks.append((b"".join(rt.piece(t) for t in decoded).decode("utf-8", "ignore"), "".join(shown), len(tokens)))
        return real_eval(tokens, *args, **kwargs)

    monkeypatch.setattr(rt, "eval", eval)
    for piece in gen:
        shown.append(piece.text)
    assert gen.stats.draft_accepted > 0 and any(n > 1 for *_, n in checks)   # drafts were checked in batches
    assert all(expected == text for expected, text, _ in checks), [c for c in checks if c[0] != c[1]][:2]


def test_past_the_cursor_the_users_own_chunks_are_not_searched_for(pii_engine, monkeypatch):
    """Once the model has written a word, none of the user's values can go in (Decoder.fits_here), so
    a store of values alone asks neither the slot classifier nor the context index again: the
    per-token cost of having chunks on (bench/overhead.py).  Catches the search running on at every step."""
    matcher = pii_engine.matcher_ready()
    asked = []
    for name in ("candidates", "type_readings"):              # what the decode path asks (typed_proposal)
        real = getattr(matcher, name)

        def spy(hidden, local, text, *args, _real=real, **kwargs):
            asked.append(text)
            return _real(hidden, local, text, *args, **kwargs)

        monkeypatch.setattr(matcher, name, spy)
    out = pii_engine.generate(GenerationRequest(EMAIL_OPENING + "Thanks again for the lovely dinner on", max_tokens=20))
    assert out.stats.tokens >= 10 and out.text.split()            # the model wrote words
    assert asked                                                  # the cursor itself was asked about
    assert all(not text[len(asked[0]):].split() for text in asked), asked[-1][len(asked[0]):]
