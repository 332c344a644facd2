"""The Eq. 5 admissibility filter of the read path (``projections/recall.py`` ``read_filter``), checked
on index payloads with the reference evaluator ``commands.access.evaluate``: validity at ``as_of``,
``known_at`` (what the ledger knew), expiry at read time, the Eq. 3 freshness horizon per store kind,
status, untrusted content, and the ABAC part. The payloads have the shape the ``EmbeddingProjector``
writes (``index_projector.payload_of`` and its ``set_payload`` updates)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memwarden.commands.model import Right, Sensitivity, StoreKind
from memwarden.commands.readmodel.filters import evaluate
from memwarden.commands.readmodel.freshness import DEFAULT_FRESHNESS, horizon_s
from memwarden.commands.readmodel.payload import OPEN_END_MS, RecordAttrs, fresh_until_ms, with_access_keys
from memwarden.commands.readmodel.payload import attrs_payload as payload_of
from memwarden.commands.readmodel.permission import Grant
from memwarden.commands.readmodel.read_filter import read_filter
from memwarden.epoch import to_ms

NOW = datetime(2025, 7, 25, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def payload(**over: Any) -> dict[str, Any]:
    """An active, trusted PROFILE version of ``user:alice``, valid since NOW - 10 h, decided then, never
    closed, unexpired, never used (fresh reference = validity start); ``over`` replaces keys, and the
    freshness window end follows the store kind and the reference as the projector keeps it."""
    base: dict[str, Any] = {
        **payload_of(RecordAttrs("user:alice", "user:alice", "account:default", StoreKind.PROFILE,
                                 Sensitivity.INTERNAL)),
        "status": "active", "trust": "trusted",
        "valid_from_ms": to_ms(NOW - 10 * HOUR), "valid_to_ms": OPEN_END_MS, "expires_ms": OPEN_END_MS,
        "decided_ms": to_ms(NOW - 10 * HOUR), "closed_known_ms": OPEN_END_MS,
        "fresh_ref_ms": to_ms(NOW - 10 * HOUR),
    }
    base.update(over)
    if "fresh_until_ms" not in over:
        base["fresh_until_ms"] = fresh_until_ms(base["store_kind"], base["fresh_ref_ms"])
    return with_access_keys(base)  # the keys follow the access attributes, as the projector writes them


def admits(p: dict[str, Any], principal: str = "user:alice", *, at: datetime = NOW, now: datetime = NOW,
           **kw: Any) -> bool:
    return evaluate(read_filter(principal, at, now, **kw), p)


# -- validity at as_of ---------------------------------------------------------------------------------------


def test_as_of_admits_a_version_inside_its_half_open_validity_interval() -> None:
    start, end = NOW - 5 * HOUR, NOW - 2 * HOUR
    p = payload(valid_from_ms=to_ms(start), valid_to_ms=to_ms(end), fresh_ref_ms=to_ms(start))
    assert admits(p, at=start)  # valid_from inclusive
    assert admits(p, at=end - timedelta(milliseconds=1))
    assert not admits(p, at=end)  # valid_to exclusive
    assert not admits(p, at=start - timedelta(milliseconds=1))
    assert not admits(p)  # now: past its interval


def test_a_version_valid_only_in_the_future_is_not_current() -> None:
    assert not admits(payload(valid_from_ms=to_ms(NOW + HOUR), fresh_ref_ms=to_ms(NOW + HOUR)))


def test_a_superseded_version_is_history_now_and_current_as_of_its_interval() -> None:
    closed = payload(status="superseded", valid_to_ms=to_ms(NOW - 3 * HOUR), closed_known_ms=to_ms(NOW - 3 * HOUR))
    assert not admits(closed)
    assert admits(closed, at=NOW - 4 * HOUR)


def test_every_version_admits_history_and_the_future_but_never_another_readers_or_an_expired_one() -> None:
    """``every_version`` (forget by query): any version the reader may read now, whenever it was valid; still
    the reader's own permission, what the ledger has decided by now, and expiry."""
    closed = payload(status="superseded", valid_to_ms=to_ms(NOW - 3 * HOUR), closed_known_ms=to_ms(NOW - 3 * HOUR))
    later = payload(valid_from_ms=to_ms(NOW + HOUR), fresh_ref_ms=to_ms(NOW + HOUR))
    stale = payload(fresh_until_ms=to_ms(NOW - HOUR))
    for p in (closed, later, stale, payload()):
        assert admits(p, every_version=True)
    assert not admits(closed) and not admits(later) and not admits(stale)
    assert not admits(closed, "user:bob", every_version=True)
    assert not admits(payload(expires_ms=to_ms(NOW - HOUR)), every_version=True)
    assert not admits(payload(decided_ms=to_ms(NOW + HOUR)), every_version=True)


def test_a_version_whose_own_validity_ended_is_not_current_although_the_ledger_never_closed_it() -> None:
    """A record stored with ``effective_to`` in the past (never superseded: ``closed_known_ms`` open)
    must not be a candidate now; otherwise it takes a top-k slot and is dropped by SQL after ranking."""
    ended = payload(valid_to_ms=to_ms(NOW - HOUR))
    assert not admits(ended)
    assert not admits(ended, known_at=NOW)
    assert admits(ended, at=NOW - 2 * HOUR)


# -- known_at --------------------------------------------------------------------------------------------------


def test_a_version_decided_after_known_at_is_invisible() -> None:
    p = payload(decided_ms=to_ms(NOW - HOUR))
    assert not admits(p, known_at=NOW - 2 * HOUR)
    assert admits(p, known_at=NOW - HOUR)
    assert admits(p)


def test_a_superseded_version_is_current_as_known_before_the_supersede() -> None:
    superseded_at = NOW - 3 * HOUR
    old = payload(status="superseded", valid_to_ms=to_ms(superseded_at), closed_known_ms=to_ms(superseded_at))
    new = payload(valid_from_ms=to_ms(superseded_at), decided_ms=to_ms(superseded_at),
                  fresh_ref_ms=to_ms(superseded_at))
    before = superseded_at - timedelta(minutes=1)
    assert admits(old, known_at=before) and not admits(new, known_at=before)
    assert not admits(old, known_at=superseded_at) and admits(new, known_at=superseded_at)


def test_known_at_reads_skip_the_freshness_horizon() -> None:
    stale = payload(store_kind="EVENT", fresh_ref_ms=to_ms(NOW - timedelta(days=400)),
                    valid_from_ms=to_ms(NOW - timedelta(days=400)), decided_ms=to_ms(NOW - timedelta(days=400)))
    assert not admits(stale)
    assert admits(stale, known_at=NOW)


# -- expiry ------------------------------------------------------------------------------------------------------


def test_expiry_is_enforced_at_read_time_even_for_past_as_of() -> None:
    p = payload(expires_ms=to_ms(NOW))
    assert not admits(p)  # expires_ms == now: expired
    assert not admits(p, at=NOW - 5 * HOUR)
    assert admits(p, now=NOW - timedelta(milliseconds=1))


# -- freshness (Eq. 3 horizon per store kind) ------------------------------------------------------------------


@pytest.mark.parametrize("kind", [StoreKind.PROFILE, StoreKind.EXPERIENCE, StoreKind.EVENT])
def test_freshness_horizon_per_store_kind(kind: StoreKind) -> None:
    h_ms = math.floor(horizon_s(DEFAULT_FRESHNESS[kind]) * 1000)
    old = to_ms(NOW) - h_ms - 10 * 365 * 86_400_000  # valid long before; only the reference moves
    inside = payload(store_kind=kind.value, valid_from_ms=old, decided_ms=old, fresh_ref_ms=to_ms(NOW) - h_ms + 1000)
    outside = payload(store_kind=kind.value, valid_from_ms=old, decided_ms=old,
                      fresh_ref_ms=to_ms(NOW) - h_ms - 1000)
    assert admits(inside)
    assert not admits(outside)
    assert admits(outside, freshness=False)
    assert admits(outside, at=NOW - timedelta(seconds=2))  # fresh as of 2 s ago


def test_horizons_are_ordered_event_experience_profile() -> None:
    h = {k: horizon_s(DEFAULT_FRESHNESS[k]) for k in StoreKind}
    assert h[StoreKind.EVENT] < h[StoreKind.EXPERIENCE] < h[StoreKind.PROFILE] < h[StoreKind.PROCEDURE] == math.inf
    ref = to_ms(NOW - timedelta(days=300))
    admitted = {k for k in StoreKind if admits(payload(store_kind=k.value, valid_from_ms=ref, decided_ms=ref,
                                                       fresh_ref_ms=ref))}
    assert admitted == {StoreKind.PROFILE, StoreKind.PROCEDURE}  # 300 days: past EVENT (~75 d), EXPERIENCE (~270 d)


def test_procedures_never_go_stale() -> None:
    ancient = to_ms(NOW - timedelta(days=365 * 50))
    assert admits(payload(store_kind="PROCEDURE", valid_from_ms=ancient, decided_ms=ancient, fresh_ref_ms=ancient))


def test_a_recent_use_keeps_an_old_record_fresh() -> None:
    ref = to_ms(NOW - timedelta(days=200))
    unused = payload(store_kind="EVENT", valid_from_ms=ref, decided_ms=ref, fresh_ref_ms=ref)
    assert not admits(unused)
    assert admits(payload(store_kind="EVENT", valid_from_ms=ref, decided_ms=ref,
                          fresh_ref_ms=to_ms(NOW - timedelta(days=1))))


# -- status and untrusted content --------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["forgotten", "quarantined"])
def test_forgotten_and_quarantined_versions_never_come_back(status: str) -> None:
    p = payload(status=status)
    for kw in ({}, {"known_at": NOW}, {"freshness": False}, {"include_untrusted": True}):
        assert not admits(p, **kw)


def test_untrusted_content_only_with_include_untrusted() -> None:
    p = payload(trust="untrusted")
    assert not admits(p)
    assert admits(p, include_untrusted=True)
    assert admits(payload(), include_untrusted=True)  # trusted content stays in


def test_a_payload_missing_a_time_field_is_not_admitted() -> None:
    for key in ("valid_from_ms", "decided_ms", "expires_ms", "fresh_until_ms"):
        p = payload()
        del p[key]
        assert not admits(p), key


# -- the ABAC part ---------------------------------------------------------------------------------------------


def test_acl_purpose_and_grants_inside_the_filter() -> None:
    bobs = payload(owner="user:bob", subject="user:bob", scope="team:a", purposes=["support"])
    assert not admits(bobs, "user:carol", purpose="support")
    g = Grant("g", "role:clinician", frozenset({Right.READ}), ("team:a",), purposes=("support",),
              valid_from_ms=to_ms(NOW - HOUR))
    assert admits(bobs, "user:carol", purpose="support", roles=frozenset({"clinician"}), grants=(g,))
    assert not admits(bobs, "user:carol", purpose="marketing", roles=frozenset({"clinician"}), grants=(g,))
    assert not admits(bobs, "user:carol", purpose="support", grants=(g,))  # no role
    assert not admits(bobs, "user:bob", purpose="marketing")  # purpose binds the owner too
    revoked = Grant("g", "user:carol", frozenset({Right.READ}), ("team:a",), revoked_at_ms=to_ms(NOW))
    assert not admits(bobs, "user:carol", purpose="support", grants=(revoked,))
