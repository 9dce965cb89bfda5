"""Tuning the threshold against what users weigh (core/tuning.py), with the real default model."""
from __future__ import annotations

import pytest

from chunkwise.core import ChunkwiseError
from chunkwise.core.tuning import built_in_negatives, insertion_places, tune_insertions
from tests.conftest import paper_profile

OWN_TEXT = ("Hi Tom,\n\nThanks for sorting out the delivery. If the driver gets lost, he can call me at "
            "(555) 123-4567 and I will come down. You can also email me at johndoe@example.com with the "
            "invoice.\n\nBest,\nJohn")
NEGATIVES = ["The restaurant is on the corner of", "Our accountant's direct line is",
             "Let's meet in front of the museum at", "I hope you had a relaxing weekend. I wanted to"]


@pytest.fixture
def profile(make_engine):
    engine = make_engine()
    ids = {}
    for field, entry in paper_profile().items():
        ids[field] = engine.store.add_chunk(entry["value"], "pii", entry["contexts"][:4], label=field)
    engine.refresh()
    return engine, ids


def test_tuning_weighs_right_insertions_against_misplaced_ones(profile):
    """Bug caught: perplexity-only tuning chose 0.00 from one email and put the phone where a time goes."""
    engine, ids = profile
    assert paper_profile()["phone"]["value"] in OWN_TEXT and paper_profile()["email"]["value"] in OWN_TEXT
    engine.threshold = 0.33
    result = tune_insertions(engine, [OWN_TEXT], grid=(0.0, 0.15, 0.5, 0.9), negatives=NEGATIVES)
    assert engine.threshold == 0.33                                  # the engine's own setting is untouched
    assert result.positives == 2                                     # the two values the user wrote themself
    by_t = {g["threshold"]: g for g in result.grid}
    chosen = result.best
    assert chosen["right"] >= 1                                      # it still inserts the user's values
    assert chosen["false"] <= by_t[0.0]["false"] and chosen["wrong"] == 0


def test_tuning_needs_the_users_own_values_in_the_text(profile):
    engine, _ids = profile
    with pytest.raises(ChunkwiseError, match="None of your library's values"):
        tune_insertions(engine, ["Thanks for the slides. See you on Monday."], negatives=NEGATIVES)
    with pytest.raises(ChunkwiseError, match="empty"):
        tune_insertions(engine, ["   "], negatives=NEGATIVES)


def test_built_in_negatives_hold_no_personal_detail():
    from chunkwise.core.details import find_details

    prompts = built_in_negatives()
    assert len(prompts) >= 30 and not any(find_details(p) for p in prompts)


def test_insertion_places_say_which_phrase_takes_which_chunk(profile):
    engine, ids = profile
    text = "Hi Tom,\n\nThanks for the update. If anything comes up, please give me a call at"
    places = insertion_places(engine, text)
    phone = [p for p in places if p.chunk_id == ids["phone"]]
    assert phone and phone[-1].phrase.endswith("give me a call at") and 0 < phone[-1].reach <= 1
    assert text[:phone[-1].end] == text                   # where in the draft: the end, not short by "Hi"
    assert all(p.chunk_id != ids["phone"] for p in places if p.phrase.endswith("Thanks for the"))
