"""Plain decoding against llama-cpp-python's own, and the loop's contracts."""
import re
from dataclasses import replace

import pytest

from chunkwise.core.engine import GenerationRequest
from chunkwise.core.errors import ChunkwiseError

PROMPTS = [
    "Dear Mr. Patel,\n\nThank you for your email about the",
    "Subject: Team lunch on Friday\n\nHi all,\n\n",
    "The three most important things to remember when writing a cover letter are",
]


@pytest.fixture(scope="module")
def reference_llm():
    from llama_cpp import Llama

    from chunkwise.core.paths import bundled_model_path

    llm = Llama(model_path=str(bundled_model_path()), n_ctx=2048, n_threads=2, verbose=False, seed=0)
    yield llm
    llm.close()


@pytest.mark.parametrize("prompt", PROMPTS)
def test_empty_store_equals_plain_greedy_decoding(make_engine, reference_llm, prompt):
    engine = make_engine()
    engine.refresh()
    ours = engine.generate(GenerationRequest(prompt, max_tokens=40))
    ref = reference_llm.create_completion(prompt, max_tokens=40, temperature=0.0, top_k=1)
    assert ours.text == ref["choices"][0]["text"]
    assert ours.stats.tokens == ref["usage"]["completion_tokens"]
    assert ours.spans == [] and ours.stats.chunk_tokens == 0
    assert ours.stats.forward_passes == ours.stats.tokens - (ours.stats.stop_reason == "length")


def test_streamed_pieces_make_the_completion(make_engine):
    engine = make_engine()
    gen = engine.stream(GenerationRequest("Hello Sam, 😀 I wanted to say", max_tokens=20))
    streamed = "".join(p.text for p in gen)
    assert streamed == gen.completion().text and streamed


def test_stop_sequences_cut_the_text(make_engine):
    engine = make_engine()
    full = engine.generate(GenerationRequest(PROMPTS[1], max_tokens=40)).text
    stop = full.split()[2]
    cut = engine.generate(GenerationRequest(PROMPTS[1], max_tokens=40, stop=[stop]))
    assert stop not in cut.text and full.startswith(cut.text) and cut.stats.stop_reason == "stop"


def test_cancellation_between_tokens(make_engine):
    engine = make_engine()
    calls = {"n": 0}

    def cancelled():
        calls["n"] += 1
        return calls["n"] > 3

    gen = engine.stream(GenerationRequest(PROMPTS[0], max_tokens=50), cancelled=cancelled)
    done = gen.completion()
    assert done.stats.stop_reason == "cancelled" and done.stats.tokens == 3


def test_sampling_is_reproducible_with_a_seed(make_engine):
    engine = make_engine()
    req = GenerationRequest(PROMPTS[2], max_tokens=20, temperature=0.8, seed=42)
    assert engine.generate(req).text == engine.generate(req).text


def test_prompt_longer_than_the_window_is_truncated_from_the_left(make_engine):
    engine = make_engine()
    long_prompt = "This sentence is filler text for a long email. " * 250 + "In short, the answer is"
    done = engine.generate(GenerationRequest(long_prompt, max_tokens=5))
    assert done.notices and "were left out" in done.notices[0]
    assert done.stats.prompt_tokens <= engine.runtime.n_ctx and done.stats.tokens == 5
    assert done.stats.truncated_tokens > 0 and str(done.stats.truncated_tokens) in done.notices[0]


def test_chat_mode_follows_an_instruction(make_engine):
    engine = make_engine()
    done = engine.generate(GenerationRequest("Write a one-sentence email thanking Anna for the flowers.",
                                             mode="chat", max_tokens=40))
    assert "Anna" in done.text or "flowers" in done.text.lower()


def test_bad_requests_are_refused(make_engine):
    engine = make_engine()
    with pytest.raises(ChunkwiseError, match="max_tokens"):
        engine.stream(GenerationRequest("x", max_tokens=0))
    with pytest.raises(ChunkwiseError, match="Unknown mode"):
        engine.stream(GenerationRequest("x", mode="poem"))
    with pytest.raises(ChunkwiseError, match="between 0 and 1"):
        engine.threshold = 1.5


def test_a_growing_draft_costs_only_its_new_tokens(make_engine):
    engine = make_engine()
    draft = "Hi Lena,\n\nthanks for the invitation to the workshop next"
    first = engine.generate(GenerationRequest(draft, max_tokens=3))
    second = engine.generate(GenerationRequest(draft + " week. I", max_tokens=3))
    assert second.stats.prompt_reused >= first.stats.prompt_tokens - 1


def test_alternatives_start_with_the_models_next_likeliest_tokens(make_engine):
    """Alt+] in the editor: alternative n begins with the model's n-th likeliest first token, then
    continues as usual.  Catches a rank that is ignored (every alternative the same text) or off by one."""
    engine = make_engine()
    prompt = "Dear Mr. Patel,\n\nThank you for your email about the"
    rt = engine.runtime
    first_logits = engine.runtime_states(rt.tokenize(prompt, add_special=True)).logits[-1]   # (V,)
    ranked = [int(t) for t in (-first_logits).argsort(kind="stable")[:3]]
    best = engine.generate(GenerationRequest(prompt, max_tokens=8))
    texts = []
    for rank in range(3):
        alt = engine.generate(GenerationRequest(prompt, max_tokens=8, first_rank=rank))
        assert alt.text.startswith(rt.piece(ranked[rank]).decode("utf-8", "replace"))
        texts.append(alt.text)
    assert texts[0] == best.text                 # rank 0 with an empty store is the model's own suggestion
    assert len(set(texts)) == 3


def test_an_alternative_is_the_models_own_text_where_the_best_suggestion_is_a_chunk(make_engine):
    engine = make_engine()
    phone = engine.store.add_chunk("+44 7700 900123", "pii", ["My phone number is", "Call me on"], label="phone")
    engine.refresh()
    prompt = "Hi Tom,\n\nIf the line drops, please ring me directly on"
    best = engine.generate(GenerationRequest(prompt, max_tokens=12, stop=["\n\n"]), record_use=False)
    assert [s.chunk_id for s in best.spans][:1] == [phone] and best.spans[0].start == 0
    own = engine.generate(GenerationRequest(prompt, max_tokens=12, stop=["\n\n"], first_rank=0), record_use=False)
    assert not own.spans or own.spans[0].start > 0
    assert own.text != best.text


def test_a_bad_alternative_rank_is_refused(make_engine):
    engine = make_engine()
    with pytest.raises(ChunkwiseError, match="first_rank"):
        engine.stream(GenerationRequest("x", first_rank=-1))


# ---------------------------------------------------------------- natural end (Settings.natural_end)

def test_a_natural_end_only_cuts_the_suggestion_after_a_sentence(make_engine):
    """Ended after a sentence: the same tokens as the full run, cut at a word boundary after ".!?"."""
    engine = make_engine()
    prompt = "Hi Sam,\n\nThanks for the quick reply. I"
    full = engine.generate(GenerationRequest(prompt, max_tokens=40)).text
    cut = engine.generate(GenerationRequest(prompt, max_tokens=40, natural_end=0.0))
    assert cut.stats.stop_reason == "end", (full, cut.text)
    assert full.startswith(cut.text) and len(cut.text) < len(full)
    assert cut.text.rstrip().endswith((".", "!", "?"))
    assert full[len(cut.text)].isspace()            # the next word was not started
    assert sum(cut.text.count(p) for p in ".!?") == 1    # the first sentence, not a later one


def test_a_natural_end_stops_before_a_word_the_model_is_unsure_of(make_engine):
    """A bar no word reaches: the suggestion ends at the first word boundary after its first word."""
    engine = make_engine()
    prompt = "The three most important things to remember when writing a cover letter are"
    full = engine.generate(GenerationRequest(prompt, max_tokens=30)).text
    cut = engine.generate(GenerationRequest(prompt, max_tokens=30, natural_end=0.999))
    assert cut.stats.stop_reason == "end"
    assert full.startswith(cut.text) and full[len(cut.text)].isspace()
    first_word = next(i for i, ch in enumerate(full) if ch.isalnum())
    boundary = next(i for i in range(first_word, len(full)) if full[i].isspace())
    assert cut.text == full[:boundary]
    relaxed = engine.generate(GenerationRequest(prompt, max_tokens=30, natural_end=1e-9))
    assert full.startswith(relaxed.text)
    assert relaxed.text == full or (relaxed.stats.stop_reason == "end" and relaxed.text.rstrip().endswith((".", "!", "?")))


def test_a_natural_end_never_cuts_an_inserted_value(pii_engine):
    """The user's phone number arrives whole, and the model's own talk after it is not shown."""
    phone = next(c for c in pii_engine.store.list_chunks() if c.label == "phone")
    prompt = "Hi Tom,\n\nThanks for getting back to me so quickly. If anything comes up, call me at"
    long = pii_engine.generate(GenerationRequest(prompt, max_tokens=40), record_use=False)
    short = pii_engine.generate(GenerationRequest(prompt, max_tokens=40, natural_end=0.999), record_use=False)
    assert [s.chunk_id for s in short.spans] == [phone.id] == [s.chunk_id for s in long.spans]
    span = short.spans[0]
    assert short.text[span.start:span.end].strip() == phone.text
    assert long.text.startswith(short.text) and len(short.text) < len(long.text)
    assert not short.text[span.end:].strip(" .,")


def test_building_a_decoder_leaves_the_runtime_alone():
    """Constructors do no work: the batch profile drafting needs (its first measure clears the KV
    cache) is read when the decoder runs, not when it is built."""
    from chunkwise.core.decoding import DecodeSettings, Decoder
    from chunkwise.core.drafting import NGramDrafter

    class Untouchable:
        def __getattr__(self, name):
            raise AssertionError(f"the decoder's constructor used the runtime: {name}")

    Decoder(Untouchable(), None, DecodeSettings(draft=True, anchor_keep=1), drafter=NGramDrafter())


def test_drafting_measures_the_batch_profile_when_the_decoder_runs(make_engine, monkeypatch):
    from chunkwise.core.decoding import DecodeSettings, Decoder
    from chunkwise.core.drafting import NGramDrafter

    rt = make_engine().runtime
    tokens = rt.tokenize(PROMPTS[0])
    plain = Decoder(rt, None, DecodeSettings(max_tokens=12), drafter=NGramDrafter())
    expected = "".join(p.text for p in plain.run(tokens, PROMPTS[0]))
    monkeypatch.setattr(rt, "_batch_profile", None)                 # as on a fresh runtime
    decoder = Decoder(rt, None, DecodeSettings(max_tokens=12, draft=True), drafter=NGramDrafter())
    assert rt.tokens[:len(tokens)] == tuple(tokens)                  # the cache is as the last run left it
    assert "".join(p.text for p in decoder.run(tokens, PROMPTS[0])) == expected
    assert rt._batch_profile is not None


def test_a_detail_read_too_weakly_to_insert_is_offered_by_the_readier_request(pii_engine):
    """The editor's detail alternative (Alt+]): where the suggestion at the default threshold brings none
    of the user's details, the same request at READY_THRESHOLD brings the one that comes next, and
    detail_offered names it.  Catches a per-request threshold that is ignored (the readier request
    gives the same text), one that leaks into the engine's own threshold, and a detail_offered that
    offers what the suggestion already has."""
    from chunkwise.core.engine import READY_THRESHOLD, detail_offered
    from chunkwise.core.settings import Settings

    ids = {c.label: c.id for c in pii_engine.store.list_chunks()}
    request = Settings().suggestion_request("Hi Sam,\n\nI push my side projects to")
    best = pii_engine.stream(request)
    best.completion()
    assert not any(p.from_chunk for p in best.pieces)
    ready = pii_engine.stream(request.readier(pii_engine.threshold))
    ready.completion()
    offered = detail_offered(ready.pieces, best.pieces)
    assert offered is not None and offered.chunk_id == ids["github"]
    assert pii_engine.threshold == Settings().threshold and pii_engine.matcher.threshold == Settings().threshold
    # ordinary prose: the readier request brings no detail there either
    request = Settings().suggestion_request("Hi Tom,\n\nThanks for sending the report. I will")
    plain, ready = pii_engine.stream(request), pii_engine.stream(request.readier(pii_engine.threshold))
    plain.completion(), ready.completion()
    assert detail_offered(ready.pieces, plain.pieces) is None
    # nothing readier to ask at the readier threshold itself, or with chunks off
    assert request.readier(READY_THRESHOLD) is None and replace(request, use_chunks=False).readier(0.3) is None


def test_a_bad_request_threshold_is_refused(make_engine):
    engine = make_engine()
    for bad in (-0.1, 1.5, "high"):
        with pytest.raises(ChunkwiseError, match="threshold"):
            engine.generate(GenerationRequest("Hello", max_tokens=2, threshold=bad))
    engine.store.add_chunk("+44 7700 900123", "pii", ["Call me on"], label="phone")
    engine.refresh()
    # a threshold given as text that reads as a number is taken as that number, not passed on as text
    assert engine.generate(GenerationRequest("Call me on", max_tokens=2, threshold="0.3"), record_use=False).text


@pytest.mark.parametrize("typed, rest", [("Could you ple", "ase"), ("Let me kn", "ow"),
                                         ("I hope you are doing we", "ll"), ("Thanks for your prompt resp", "onse")])
def test_a_pause_inside_a_word_gets_the_rest_of_that_word(make_engine, typed, rest):
    """Token healing (core/healing.py).  Bug caught: continued from the tokens the tokenizer cut the typed
    letters into, the model wrote another word ("ple" -> "ad with me", "kn" -> "uckle down", "we" ->
    "irder", checked with finish_word off); the typed letters must not come again either."""
    from chunkwise.core.settings import Settings

    engine = make_engine()
    request = Settings().suggestion_request("Hi Sam,\n\n" + typed)
    assert request.finish_word
    out = engine.generate(request).text
    assert re.match(re.escape(rest) + r"(?![^\W\d_])", out), out
    plain = engine.generate(replace(request, finish_word=False)).text
    assert not re.match(re.escape(rest) + r"(?![^\W\d_])", plain)          # what the editor showed before


@pytest.mark.parametrize("typed", ["Hi Sam,\n\nMeet at", "Hi Sam,\n\nBio and headshot are on",
                                   "Meeting notes from"])
def test_a_pause_after_a_whole_word_does_not_lengthen_it(make_engine, typed):
    """A pause after "at" is a pause after a word as often as inside one: the suggestion goes on after it
    ("Meet at" -> " attack" and "are on" -> "ly two" without decoding.WORD_AS_TYPED; " from" spelled as
    " ", "f", "ro", "m" and then a date when any part of the letters could be a step)."""
    from chunkwise.core.settings import Settings

    engine = make_engine()
    out = engine.generate(Settings().suggestion_request(typed)).text
    assert out == "" or not out[0].isalpha(), out


def test_a_library_value_begun_by_hand_is_finished_by_the_library_not_healed(pii_engine):
    """"...at johndoe@exa": the rest of the user's own email comes from the library, whole and marked
    (Decoder.rest_of_value), not as the model's guess at a word beginning "exa"."""
    from chunkwise.core.settings import Settings

    email = next(c for c in pii_engine.store.list_chunks() if c.label == "email")
    stream = pii_engine.stream(Settings().suggestion_request("Hi Sam,\n\nPlease email me at johndoe@exa"))
    stream.completion()
    first = stream.pieces[0]
    assert first.from_chunk and first.chunk_id == email.id and first.text == "mple.com"


def test_an_alternative_after_an_unfinished_word_finishes_it_first(make_engine):
    """Alt+]'s alternatives (first_rank) rank the tokens after the word the user is in, not the ways
    to spell its letters: each begins with the rest of the word."""
    from chunkwise.core.settings import Settings

    engine = make_engine()
    request = Settings().suggestion_request("Hi Sam,\n\nCould you ple")
    texts = [engine.generate(replace(request, first_rank=rank)).text for rank in (1, 2)]
    assert all(t.startswith("ase") for t in texts) and texts[0] != texts[1], texts


@pytest.mark.parametrize("typed, label", [("If anything comes up, please cont", "email"),
                                          ("Our office is loc", "address")])
def test_a_library_entry_can_follow_the_word_the_suggestion_finished(pii_engine, typed, label):
    """After "please cont" + "act" the user's own entry comes as it does after "please contact": the end
    of the finished word is where the user's chunks may go.  Catches the healed word's rest counted as
    words the model wrote (no entry after them, LEAD_IN_WORDS) -- "Our office is loc" then got the
    model's own house number."""
    from chunkwise.core.settings import Settings

    stream = pii_engine.stream(Settings().suggestion_request("Hi Sam,\n\n" + typed))
    stream.completion()
    assert [p.label for p in stream.pieces if p.from_chunk][:1] == [label], stream.pieces
