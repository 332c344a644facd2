"""A derived record's quoted span is sealed under the record's data key (memwarden/crypto.py)."""

from __future__ import annotations

from memwarden.crypto import SPAN_PREFIX, new_data_key, open_span, seal_span


def test_a_sealed_span_opens_only_with_its_key_and_key_id() -> None:
    key, other = new_data_key(), new_data_key()
    sealed = seal_span("locker code is 4711", key, "k1")
    assert sealed.startswith(SPAN_PREFIX) and "4711" not in sealed and "locker" not in sealed
    assert open_span(sealed, "k1", {"k1": key}) == "locker code is 4711"
    assert open_span(sealed, "k1", {"k1": None}) is None  # shredded
    assert open_span(sealed, "k1", {"k1": other}) is None
    assert open_span(sealed, "k2", {"k2": key}) is None  # bound to its key id
    assert open_span(sealed[:-4], "k1", {"k1": key}) is None  # tampered
    assert open_span("plain words", "k1", {}) == "plain words"  # an older client's clear span
    assert open_span(None, "k1", {}) is None


def test_a_forget_by_query_matches_whole_words_only() -> None:
    from memwarden.producers.forgetting import contains_words

    assert contains_words("the old Bridge-17 label", "bridge-17")
    assert contains_words("Code:  216.", "216") and not contains_words("code 2160", "216")
    assert not contains_words("xbridge-17", "bridge-17") and contains_words("Northstar Bank's pilot", "northstar bank")
