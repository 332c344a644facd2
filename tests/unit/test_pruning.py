"""Budgeted pruning's pure rule (commands/pruning.py) and plan (memwarden/pruning.py)."""

from __future__ import annotations

import math

import pytest

from memwarden.commands.model import StoreKind
from memwarden.commands.pruning import DEFAULT_GRACE_S, action_of, prunable
from memwarden.commands.readmodel.freshness import DEFAULT_FRESHNESS, horizon_s
from memwarden.errors import ValidationError
from memwarden.pruning import plan

DAY_MS = 86_400_000
NOW = 1_800_000_000_000


def _edge(kind: StoreKind, theta: float = 0.05, grace_s: float = DEFAULT_GRACE_S) -> int:
    """Milliseconds since the reference at which ``kind`` becomes prunable."""
    return math.ceil((horizon_s(DEFAULT_FRESHNESS[kind], theta) + grace_s) * 1000)


@pytest.mark.parametrize("kind", [StoreKind.EVENT, StoreKind.EXPERIENCE, StoreKind.PROFILE])
def test_a_memory_is_prunable_exactly_once_below_theta_for_the_grace_period(kind: StoreKind) -> None:
    edge = _edge(kind)
    assert prunable(kind, None, NOW - edge, NOW)
    assert not prunable(kind, None, NOW - edge + 1000, NOW)
    assert not prunable(kind, NOW - 1000, NOW - 10 * edge, NOW)  # a recent use keeps it fresh
    assert prunable(kind, NOW - edge, NOW - 10 * edge, NOW)  # the last use is the reference


def test_procedures_never_decay_and_bad_arguments_name_the_field() -> None:
    assert not prunable(StoreKind.PROCEDURE, None, 0, NOW)
    assert not prunable("EVENT", None, NOW - _edge(StoreKind.EVENT), NOW, theta=0.0)  # theta 0: infinite horizon
    with pytest.raises(ValidationError, match="grace_s"):
        prunable("EVENT", None, 0, NOW, grace_s=-1)
    with pytest.raises(ValidationError, match="store_kind"):
        prunable("NOTES", None, 0, NOW)
    with pytest.raises(ValidationError, match="theta"):
        prunable("EVENT", None, 0, NOW, theta=1.5)


def test_the_policy_forgets_events_archives_profiles_keeps_procedures() -> None:
    assert [action_of(k) for k in StoreKind] == [
        {"EVENT": "forget", "EXPERIENCE": "forget", "PROFILE": "archive", "PROCEDURE": "keep"}[k.value]
        for k in StoreKind]
    old = NOW - 4000 * DAY_MS
    rows = [("e", "s", "EVENT", old, None), ("p", "s", "PROFILE", old, None), ("r", "s", "PROCEDURE", old, None),
            ("fresh", "s", "EVENT", NOW - DAY_MS, None)]
    assert plan(rows, NOW, 0.05, DEFAULT_GRACE_S) == {"forget": ["e"], "archive": ["p"]}
    assert plan(rows, NOW, 0.05, DEFAULT_GRACE_S, kinds=["PROFILE"]) == {"forget": [], "archive": ["p"]}
