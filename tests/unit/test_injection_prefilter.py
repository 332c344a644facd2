"""The detector's per-rule word prefilter only skips rules that cannot match: a rule that matches a
text always finds one of its required words in it, on every labelled item and on adversarial
spellings. (The prefilter made the gate twice as fast; it must never change a detection.)"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memwarden.commands.injection import rules as R
from memwarden.commands.injection.normalisation import normalise
from memwarden.commands.injection.prefilter import NEEDS, prefilter
from memwarden.evals.injection_set import load_labelled


def _matching_rules_without_prefilter(text: str) -> set[str]:
    norm = normalise(text).text
    return {rule.name for rule in R.RULES if rule.pattern.search(norm)}


def test_every_rule_has_a_prefilter_and_it_never_hides_a_match_on_the_labelled_set() -> None:
    assert all(NEEDS[rule.name] for rule in R.RULES), "a rule without required words is scanned always"
    for item in load_labelled():
        norm = normalise(item.text).text
        for rule in R.RULES:
            if rule.pattern.search(norm):
                assert any(w in norm for w in NEEDS[rule.name]), (rule.name, item.id)


@pytest.mark.parametrize(("pattern", "must_contain"), [
    (r"\b(?:ignore|disregard)\s+(?:all\s+)?rules", {"ignore", "disregard"}),
    (r"(?:ab)?cd(?:ef|gh)+", {"cd"}),
    (r"(?:ab)?c(?:eff|ghh)+", {"eff", "ghh"}),
    (r"x?(?:send|wire) money", {" money"}),
])
def test_required_literals_of_small_patterns(pattern: str, must_contain: set[str]) -> None:
    found = prefilter(re.compile(pattern))
    assert found is not None and set(found) == must_contain


def test_case_insensitive_parts_get_no_prefilter() -> None:
    assert prefilter(re.compile(r"(?i:Ignore) rules")) is not None  # " rules" is still required
    assert prefilter(re.compile(r"Ignore", re.IGNORECASE)) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["ignore", "previous", "instructions", "send", "the", "password", "to",
                                 "account", "wire", "refund", "always", "from now on", "you", "must",
                                 "assistant", ",", ".", "run", "curl", "bash", "admin", "mode", "iban"]),
                min_size=1, max_size=14))
def test_detections_with_the_prefilter_equal_a_full_scan(words: list[str]) -> None:
    text = " ".join(words)
    norm = normalise(text)
    for name in _matching_rules_without_prefilter(text):  # a rule that matches always passes its prefilter
        assert any(w in norm.text for w in NEEDS[name]), name
