"""Reference semantics of the VectorIndex filter AST (``evaluate``): the oracle both engines
are checked against in the contract test."""

from __future__ import annotations

from memwarden.commands.readmodel.filters import FieldIn, FieldRange, Filter, evaluate

P = {"owner": "alice", "scope": "team:a", "purposes": ["support", "billing"], "valid_from_ms": 100,
     "valid_to_ms": 200}


def test_empty_and_none_match_everything() -> None:
    assert evaluate(None, P)
    assert evaluate(Filter(), P)
    assert evaluate(Filter(), {})


def test_must_and_must_not() -> None:
    assert evaluate(Filter(must=(FieldIn("owner", ("alice", "bob")), FieldRange("valid_from_ms", lte=100))), P)
    assert not evaluate(Filter(must=(FieldIn("owner", ("bob",)),)), P)
    assert not evaluate(Filter(must_not=(FieldIn("purposes", ("billing",)),)), P)
    assert evaluate(Filter(must_not=(FieldIn("missing", ("x",)),)), P)  # a missing key holds no condition


def test_empty_values_match_nothing() -> None:
    assert not evaluate(Filter(must=(FieldIn("owner", ()),)), P)
    assert evaluate(Filter(must_not=(FieldIn("owner", ()),)), P)


def test_ranges_are_strict_or_inclusive_as_asked() -> None:
    assert evaluate(Filter(must=(FieldRange("valid_to_ms", gt=199),)), P)
    assert not evaluate(Filter(must=(FieldRange("valid_to_ms", gt=200),)), P)
    assert evaluate(Filter(must=(FieldRange("valid_to_ms", gte=200, lt=201),)), P)
    assert not evaluate(Filter(must=(FieldRange("owner", gt=0),)), P)  # non-numbers never in range


def test_should_needs_one_when_non_empty() -> None:
    assert evaluate(Filter(should=(FieldIn("owner", ("bob",)), FieldIn("scope", ("team:a",)))), P)
    assert not evaluate(Filter(should=(FieldIn("owner", ("bob",)), FieldIn("scope", ("team:b",)))), P)


def test_nested_grants_as_or_of_conjunctions() -> None:
    grant_a = Filter(must=(FieldIn("owner", ("alice",)), FieldIn("scope", ("team:b",))))
    grant_b = Filter(must=(FieldIn("owner", ("alice",)), FieldIn("purposes", ("support",))))
    assert evaluate(Filter(should=(grant_a, grant_b)), P)
    assert not evaluate(Filter(should=(grant_a,)), P)
    assert not evaluate(Filter(must=(Filter(should=(grant_a,)),)), P)
    assert not evaluate(Filter(should=(grant_b,), must_not=(Filter(must=(FieldIn("owner", ("alice",)),)),)), P)
    assert evaluate(Filter(must=(Filter(),), should=(Filter(),)), P)
