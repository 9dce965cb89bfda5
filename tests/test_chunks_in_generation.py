"""Expert injection with the paper's PII profile (appendix G.5/G.6) on the real model."""
import pytest

from chunkwise.core.engine import GenerationRequest
from tests.conftest import paper_profile, phrasings

EMAIL_OPENING = "Hi Tom,\n\nThanks for getting back to me so quickly. "


def held_out_prompts():
    """Phrasings never stored: the profile's unstored prefixes and other wordings."""
    profile = paper_profile()
    cases = []
    for field, entry in profile.items():
        for ctx in entry["contexts"][4:]:
            cases.append((field, ctx))
    for field, items in phrasings()["positives"].items():
        cases += [(field, p) for p in items]
    return cases


def test_stored_values_complete_new_sentences_and_are_highlighted(pii_engine):
    values = {f: e["value"] for f, e in paper_profile().items()}
    results = {}
    for field, prefix in held_out_prompts():
        done = pii_engine.generate(GenerationRequest(EMAIL_OPENING + prefix, max_tokens=4), record_use=False)
        span = done.spans[0] if done.spans else None
        right = (span is not None and span.label == field and done.text[span.start:span.end].strip() == values[field])
        results.setdefault(field, []).append(right)
    total = sum(map(sum, results.values())) / sum(map(len, results.values()))
    per_field = {f: sum(r) / len(r) for f, r in results.items()}
    print("recall per field:", per_field, "overall:", total)
    assert total >= 0.7, per_field
    for field in ("phone", "email", "address", "website"):
        assert per_field[field] >= 0.5, (field, per_field)


def test_no_insertion_into_unrelated_sentences(pii_engine):
    """Every word boundary of ordinary sentences. Two places where the user's name does belong are not
    counted: right after a sign-off ("Best regards," -- the independently written evaluation data,
    bench/data/personal, counts that as the name's place) and a self-introduction the model itself
    writes ("Hi Sarah, I" -> "'m John Doe")."""
    inserted = []
    checked = 0
    for sentence in phrasings()["negatives"]:
        words = sentence.split(" ")
        for i in range(2, len(words) + 1):
            prompt = EMAIL_OPENING + " ".join(words[:i])
            done = pii_engine.generate(GenerationRequest(prompt, max_tokens=3), record_use=False)
            checked += 1
            for span in done.spans:
                written = (prompt + done.text[:span.start]).rstrip()
                if span.label == "name" and (written.endswith("regards,") or written.endswith("I'm")):
                    continue
                inserted.append((prompt[-40:], done.text))
    assert checked > 200
    assert len(inserted) <= 1, inserted


def test_a_chunk_is_one_forward_pass_and_is_reported(pii_engine):
    done = pii_engine.generate(GenerationRequest(EMAIL_OPENING + "Please mail the package to our office at",
                                                 max_tokens=30))
    value = "100 Innovation Drive, Tech Park, Silicon Valley, CA 94088, USA"
    (span,) = [s for s in done.spans if s.label == "address"]
    assert done.text[span.start:span.end].strip() == value and span.kind == "pii"
    assert 0 < span.match <= 1.5
    s = done.stats
    assert s.chunks >= 1 and s.chunk_tokens >= 20
    # every step is one llama_decode: chunk tokens arrive in one pass
    assert s.forward_passes <= s.tokens - s.chunk_tokens + s.chunks
    assert s.passes_saved >= s.chunk_tokens - s.chunks - 1


def test_threshold_controls_insertion(pii_engine):
    prompt = EMAIL_OPENING + "Please give me a call at"
    pii_engine.threshold = 1.0
    assert pii_engine.generate(GenerationRequest(prompt, max_tokens=6)).spans == []
    pii_engine.threshold = 0.0
    assert pii_engine.generate(GenerationRequest(prompt, max_tokens=6)).spans


def test_no_chunks_flag_and_no_repeats(pii_engine):
    prompt = EMAIL_OPENING + "Feel free to phone me at"
    assert pii_engine.generate(GenerationRequest(prompt, max_tokens=6, use_chunks=False)).spans == []
    # the value is already in the text: it is not inserted again
    again = pii_engine.generate(GenerationRequest("My number is (555) 123-4567. " + prompt, max_tokens=6))
    assert not any(s.label == "phone" for s in again.spans)


def test_use_count_and_live_updates(pii_engine):
    store = pii_engine.store
    (phone,) = [c for c in store.list_chunks() if c.label == "phone"]
    pii_engine.generate(GenerationRequest(EMAIL_OPENING + "You can reach me by phone at", max_tokens=4))
    assert store.get_chunk(phone.id).use_count == 1
    store.update_chunk(phone.id, text="+44 20 7946 0000")
    pii_engine.refresh()
    done = pii_engine.generate(GenerationRequest(EMAIL_OPENING + "You can reach me by phone at", max_tokens=12))
    assert "+44 20 7946 0000" in done.text
    store.remove_chunk(phone.id)
    pii_engine.refresh()
    done = pii_engine.generate(GenerationRequest(EMAIL_OPENING + "You can reach me by phone at", max_tokens=12))
    assert "7946" not in done.text and not any(s.chunk_id == phone.id for s in done.spans)


def test_sampled_acceptance_is_seeded(pii_engine):
    req = GenerationRequest(EMAIL_OPENING + "Call me any time at", max_tokens=10, temperature=0.7, seed=5,
                            sample_acceptance=True)
    assert pii_engine.generate(req).text == pii_engine.generate(req).text
