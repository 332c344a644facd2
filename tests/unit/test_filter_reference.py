"""Reference semantics of the VectorIndex filter AST (``filter_matches``): the oracle both engines
are checked against in the contract test."""

from __future__ import annotations

from memwarden.projections.vector_index import FieldIn, FieldRange, Filter, filter_matches

P = {"owner": "alice", "scope": "team:a", "purposes": ["support", "billing"], "valid_from_ms": 100,
     "valid_to_ms": 200}


def test_empty_and_none_match_everything() -> None:
    assert filter_matches(P, None)
    assert filter_matches(P, Filter())
    assert filter_matches({}, Filter())


def test_must_and_must_not() -> None:
    assert filter_matches(P, Filter(must=(FieldIn("owner", ("alice", "bob")), FieldRange("valid_from_ms", lte=100))))
    assert not filter_matches(P, Filter(must=(FieldIn("owner", ("bob",)),)))
    assert not filter_matches(P, Filter(must_not=(FieldIn("purposes", ("billing",)),)))
    assert filter_matches(P, Filter(must_not=(FieldIn("missing", ("x",)),)))  # a missing key holds no condition


def test_empty_values_match_nothing() -> None:
    assert not filter_matches(P, Filter(must=(FieldIn("owner", ()),)))
    assert filter_matches(P, Filter(must_not=(FieldIn("owner", ()),)))


def test_ranges_are_strict_or_inclusive_as_asked() -> None:
    assert filter_matches(P, Filter(must=(FieldRange("valid_to_ms", gt=199),)))
    assert not filter_matches(P, Filter(must=(FieldRange("valid_to_ms", gt=200),)))
    assert filter_matches(P, Filter(must=(FieldRange("valid_to_ms", gte=200, lt=201),)))
    assert not filter_matches(P, Filter(must=(FieldRange("owner", gt=0),)))  # non-numbers never in range


def test_should_needs_one_when_non_empty() -> None:
    assert filter_matches(P, Filter(should=(FieldIn("owner", ("bob",)), FieldIn("scope", ("team:a",)))))
    assert not filter_matches(P, Filter(should=(FieldIn("owner", ("bob",)), FieldIn("scope", ("team:b",)))))


def test_nested_grants_as_or_of_conjunctions() -> None:
    grant_a = Filter(must=(FieldIn("owner", ("alice",)), FieldIn("scope", ("team:b",))))
    grant_b = Filter(must=(FieldIn("owner", ("alice",)), FieldIn("purposes", ("support",))))
    assert filter_matches(P, Filter(should=(grant_a, grant_b)))
    assert not filter_matches(P, Filter(should=(grant_a,)))
    assert not filter_matches(P, Filter(must=(Filter(should=(grant_a,)),)))
    assert not filter_matches(P, Filter(should=(grant_b,), must_not=(Filter(must=(FieldIn("owner", ("alice",)),)),)))
    assert filter_matches(P, Filter(must=(Filter(),), should=(Filter(),)))
