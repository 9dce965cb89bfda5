"""N-gram drafts verified in one batch (opt-in): the mechanics on the real model."""
from core.drafting import DraftLength, NGramDrafter
from core.engine import GenerationRequest

QUOTE = """Subject: Re: Offsite planning

Hi Priya,

Thanks for the details. To confirm what you wrote:

> The offsite will take place on Thursday 14 March at the Harbour View Hotel, starting at 9:30 with coffee in the lobby.
> Please bring your laptop, the quarterly numbers and one idea for next year's roadmap.

So, to summarise for the team: the offsite will take place on Thursday 14 March at the"""


def test_drafter_prefers_the_longest_recent_match():
    d = NGramDrafter(n_max=3, n_min=2)
    d.add_document([7, 8, 9, 10])
    d.start([1, 2, 3, 4, 1, 2, 5, 6])
    assert d.draft(3, extra=[]) == []                     # "5 6": nothing followed it yet
    d.extend([1])
    assert d.draft(2, extra=[2]) == [5, 6]                # latest "1 2" in the running text
    assert d.draft(2, extra=[8]) == []                    # a unigram is not enough
    d.extend([7])
    assert d.draft(5, extra=[8]) == [9, 10]               # falls back to chunk documents, stops at the end
    fork = d.fork()
    fork.start([7, 8])
    assert fork.draft(1, extra=[9]) == [10]


def test_draft_length_adapts():
    k = DraftLength(start=4)
    k.update(4, 4)
    assert k.next() == 6
    k.update(6, 0)
    assert k.next() == 0 and k.next() == 0 and k.next() == 3


def test_drafting_saves_forward_passes_on_quoted_text(make_engine):
    engine = make_engine()
    plain = engine.generate(GenerationRequest(QUOTE, max_tokens=40))
    drafted = engine.generate(GenerationRequest(QUOTE, max_tokens=40, draft=True))
    s = drafted.stats
    assert s.tokens <= 40 and s.drafted > 0 and 0 < s.draft_accepted <= s.drafted
    assert s.forward_passes < plain.stats.forward_passes
    assert abs((s.tokens - s.draft_accepted) - s.forward_passes) <= 1   # one pass per step, drafts ride along
    assert drafted.text.strip() and drafted.text[:5] == plain.text[:5]


def test_drafts_respect_the_token_budget_and_stops(make_engine):
    engine = make_engine()
    for n in (1, 2, 7):
        done = engine.generate(GenerationRequest(QUOTE, max_tokens=n, draft=True))
        assert done.stats.tokens <= n
    done = engine.generate(GenerationRequest(QUOTE, max_tokens=40, draft=True, stop=["Hotel"]))
    assert "Hotel" not in done.text
