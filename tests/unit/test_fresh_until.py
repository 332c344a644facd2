"""The freshness window end kept in every index payload (``fresh_until_ms``) and the ``MemoryUsed``
updates that move it: one integer range in the read filter must say exactly what Eq. 5's freshness
condition says per store kind (``fresh_since_ms``, ``is_fresh``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memwarden.commands.model import StoreKind
from memwarden.commands.readmodel.filters import evaluate
from memwarden.commands.readmodel.freshness import fresh_since_ms, is_fresh
from memwarden.commands.readmodel.payload import OPEN_END_MS, fresh_until_ms, point_payload, use_update
from memwarden.errors import ValidationError

T0 = 1_700_000_000_000
YEAR_MS = 365 * 86_400_000


@settings(max_examples=400, deadline=None)
@given(kind=st.sampled_from(list(StoreKind)), ref=st.integers(0, 2 * T0),
       dt=st.integers(-YEAR_MS, 8 * YEAR_MS))
def test_fresh_until_says_what_the_per_kind_horizon_says(kind: StoreKind, ref: int, dt: int) -> None:
    t = max(0, ref + dt)
    since = fresh_since_ms(kind, t)
    assert (t < fresh_until_ms(kind, ref)) == (since is None or ref >= since)
    if t >= ref:  # is_fresh ages from the reference; a later reference (clock skew) counts as fresh
        assert (t < fresh_until_ms(kind, ref)) == is_fresh(kind, ref, ref, t)


@pytest.mark.parametrize("kind", [k for k in StoreKind if k is not StoreKind.PROCEDURE])
def test_the_window_ends_right_after_the_last_fresh_millisecond(kind: StoreKind) -> None:
    end = fresh_until_ms(kind, T0)
    last_fresh, first_stale = fresh_since_ms(kind, end - 1), fresh_since_ms(kind, end)
    assert last_fresh is not None and first_stale is not None
    assert last_fresh <= T0  # still fresh at end - 1
    assert first_stale > T0  # stale from end on


def test_procedures_never_leave_the_window() -> None:
    assert fresh_until_ms(StoreKind.PROCEDURE, 0) == OPEN_END_MS
    assert fresh_until_ms("PROCEDURE", T0) == OPEN_END_MS


@pytest.mark.parametrize(("kind", "ref", "field"), [("NOTE", T0, "store_kind"), ("EVENT", None, "fresh_ref_ms"),
                                                    ("EVENT", 1.5, "fresh_ref_ms")])
def test_bad_input_names_the_field(kind: str, ref: object, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        fresh_until_ms(kind, ref)  # type: ignore[arg-type]
    assert err.value.field == field


def _recorded(kind: str, valid_from: datetime) -> dict[str, object]:
    env = {"principal": "user:a", "subject": "user:a", "scope": "s", "store_kind": kind, "sensitivity": "INTERNAL",
           "purposes": [], "effective_from": None, "observed_at": valid_from, "effective_to": None,
           "expires_at": None}
    return {"memory_id": "m", "command_id": "c", "version": 1, "envelope": env,
            "decided_at": valid_from, "tags": []}


@pytest.mark.parametrize("kind", list(StoreKind))
def test_a_use_moves_the_window_of_each_version_by_its_own_kind(kind: StoreKind) -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    payload = point_payload(_recorded(kind.value, start))
    assert payload["fresh_until_ms"] == fresh_until_ms(kind, payload["fresh_ref_ms"])
    used = payload["fresh_ref_ms"] + 30 * 86_400_000
    updates = use_update("m", used)
    applied = [p for where, p in updates if evaluate(where, payload)]
    assert applied == [{"fresh_ref_ms": used, "fresh_until_ms": fresh_until_ms(kind, used)}]
    # the same update is what a version projected after the use starts from
    assert point_payload(_recorded(kind.value, start), used)["fresh_until_ms"] == applied[0]["fresh_until_ms"]
    # memories used at the same time share one update per kind
    shared = use_update(["m", "other", "m"], used)
    assert len(shared) == len(StoreKind) and [p for where, p in shared if evaluate(where, payload)] == applied
    assert use_update([], used) == []
    # a use older than the reference moves nothing
    assert not [p for where, p in use_update("m", payload["fresh_ref_ms"] - 1) if evaluate(where, payload)]
