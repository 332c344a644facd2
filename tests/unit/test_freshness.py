"""Weibull freshness (SSGM Eq. 3), the freshness condition of Eq. 5, and the MemoryUsed batcher."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memwarden.commands.model import StoreKind
from memwarden.commands.readmodel.freshness import (
    DAY_S,
    DEFAULT_FRESHNESS,
    THETA_FRESH,
    FreshnessParams,
    delta_seconds,
    fresh_since_ms,
    freshness,
    horizon_s,
    is_fresh,
    rank_score,
    weight,
)
from memwarden.commands.readmodel.usage import Usage, UsageBatcher
from memwarden.errors import ValidationError

DAY_MS = 86_400_000
T0 = 1_700_000_000_000

# -- Eq. 3 -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kappa", [0.3, 0.7, 1.0, 1.2, 3.0])
def test_weight_is_one_at_zero_and_one_over_e_at_eta(kappa: float) -> None:
    assert weight(0.0, 3600.0, kappa) == 1.0
    assert weight(3600.0, 3600.0, kappa) == pytest.approx(math.exp(-1), rel=1e-12)


def test_kappa_one_is_plain_exponential_decay() -> None:
    for d in (1.0, 10.0, 123.4, 1e5):
        assert weight(d, 1000.0, 1.0) == pytest.approx(math.exp(-d / 1000.0), rel=1e-12)


def test_weight_matches_the_formula() -> None:
    assert weight(2 * DAY_S, 10 * DAY_S, 0.5) == pytest.approx(math.exp(-math.sqrt(0.2)), rel=1e-12)
    assert weight(30.0, 10.0, 2.0) == pytest.approx(math.exp(-9.0), rel=1e-12)


@settings(max_examples=300, deadline=None)
@given(st.floats(0, 1e9), st.floats(0, 1e9), st.floats(1e-3, 1e9), st.floats(0.05, 5))
def test_weight_is_in_unit_interval_and_non_increasing(a: float, b: float, eta: float, kappa: float) -> None:
    lo, hi = sorted((a, b))
    w_lo, w_hi = weight(lo, eta, kappa), weight(hi, eta, kappa)
    assert 0.0 <= w_hi <= w_lo <= 1.0


def test_weight_strictly_decreases_where_it_is_not_saturated() -> None:
    ws = [weight(d * 3600.0, 86_400.0, 0.9) for d in range(0, 200)]
    assert all(x > y for x, y in zip(ws, ws[1:], strict=False))


def test_kappa_shapes_the_curve_around_eta() -> None:
    eta = 100.0
    # before eta a larger kappa holds on longer; after eta it drops faster
    assert weight(50.0, eta, 0.5) < weight(50.0, eta, 1.0) < weight(50.0, eta, 2.0)
    assert weight(200.0, eta, 0.5) > weight(200.0, eta, 1.0) > weight(200.0, eta, 2.0)
    # kappa < 1: fast early decay with a long tail
    assert 1 - weight(1.0, eta, 0.5) > 1 - weight(1.0, eta, 1.0)
    assert weight(1000.0, eta, 0.5) > 1e-2 > weight(1000.0, eta, 1.0)


def test_infinite_eta_means_no_decay() -> None:
    assert weight(1e12, math.inf, 0.7) == 1.0


@pytest.mark.parametrize("args, field", [
    ((-1.0, 10.0, 1.0), "delta_s"),
    ((math.nan, 10.0, 1.0), "delta_s"),
    ((math.inf, 10.0, 1.0), "delta_s"),
    (("1", 10.0, 1.0), "delta_s"),
    ((True, 10.0, 1.0), "delta_s"),
    ((1.0, 0.0, 1.0), "eta_s"),
    ((1.0, -5.0, 1.0), "eta_s"),
    ((1.0, math.nan, 1.0), "eta_s"),
    ((1.0, 10.0, 0.0), "kappa"),
    ((1.0, 10.0, -1.0), "kappa"),
    ((1.0, 10.0, math.nan), "kappa"),
    ((1.0, 10.0, math.inf), "kappa"),
])
def test_weight_rejects_bad_arguments_naming_them(args: tuple, field: str) -> None:
    with pytest.raises(ValueError) as err:
        weight(*args)
    assert isinstance(err.value, ValidationError) and err.value.field == field


def test_freshness_params_validate() -> None:
    with pytest.raises(ValidationError, match="eta_s"):
        FreshnessParams(eta_s=0, kappa=1)
    with pytest.raises(ValidationError, match="kappa"):
        FreshnessParams(eta_s=1, kappa=0)
    assert not FreshnessParams(math.inf, 1.0).decays and FreshnessParams(1.0, 1.0).decays


# -- defaults per store kind -----------------------------------------------------------------------


def test_every_store_kind_has_documented_defaults() -> None:
    assert set(DEFAULT_FRESHNESS) == set(StoreKind)
    assert DEFAULT_FRESHNESS[StoreKind.PROFILE] == FreshnessParams(365 * DAY_S, 0.7)
    assert DEFAULT_FRESHNESS[StoreKind.EXPERIENCE] == FreshnessParams(90 * DAY_S, 1.0)
    assert DEFAULT_FRESHNESS[StoreKind.EVENT] == FreshnessParams(30 * DAY_S, 1.2)
    assert not DEFAULT_FRESHNESS[StoreKind.PROCEDURE].decays
    with pytest.raises(TypeError):
        DEFAULT_FRESHNESS[StoreKind.EVENT] = FreshnessParams(1, 1)  # type: ignore[index]


def test_profile_facts_outlast_experience_which_outlasts_events() -> None:
    for days in (10, 60, 200, 700):
        now = T0 + days * DAY_MS
        p, x, e = (freshness(k, None, T0, now) for k in (StoreKind.PROFILE, StoreKind.EXPERIENCE, StoreKind.EVENT))
        assert p > x > e, days
        assert freshness(StoreKind.PROCEDURE, None, T0, now) == 1.0


@pytest.mark.parametrize("kind, fresh_days, stale_days", [
    (StoreKind.PROFILE, 4 * 365, 5 * 365),
    (StoreKind.EXPERIENCE, 265, 275),
    (StoreKind.EVENT, 74, 76),
])
def test_default_horizons_at_theta_fresh(kind: StoreKind, fresh_days: int, stale_days: int) -> None:
    assert is_fresh(kind, None, T0, T0 + fresh_days * DAY_MS)
    assert not is_fresh(kind, None, T0, T0 + stale_days * DAY_MS)
    assert is_fresh(StoreKind.PROCEDURE, None, T0, T0 + 100 * 365 * DAY_MS)


# -- reference time and the threshold --------------------------------------------------------------


def test_delta_counts_from_the_last_use_or_else_from_valid_from() -> None:
    assert delta_seconds(None, T0, T0 + 5_000) == 5.0
    assert delta_seconds(T0 + 2_000, T0, T0 + 5_000) == 3.0
    assert delta_seconds(T0 - 9_000, T0, T0 + 5_000) == 5.0  # a new version starts fresh
    assert delta_seconds(T0 + 9_000, T0, T0 + 5_000) == 0.0  # skew: a use "after now" counts as now
    assert delta_seconds(None, T0 + 9_000, T0) == 0.0


def test_a_use_resets_the_freshness_clock() -> None:
    now = T0 + 200 * DAY_MS
    assert not is_fresh(StoreKind.EVENT, None, T0, now)
    assert is_fresh(StoreKind.EVENT, now - DAY_MS, T0, now)
    assert freshness(StoreKind.EVENT, now, T0, now) == 1.0


def test_freshness_takes_one_params_object_or_a_mapping() -> None:
    p = FreshnessParams(1.0, 1.0)
    assert freshness("EVENT", None, 0, 1000, p) == pytest.approx(math.exp(-1))
    assert freshness(StoreKind.EVENT, None, 0, 1000, {StoreKind.EVENT: p}) == pytest.approx(math.exp(-1))
    with pytest.raises(ValidationError, match="store_kind"):
        freshness(StoreKind.PROFILE, None, 0, 1000, {StoreKind.EVENT: p})
    with pytest.raises(ValidationError, match="store_kind"):
        freshness("ARCHIVE", None, 0, 1000)
    with pytest.raises(ValidationError, match="now_ms"):
        freshness(StoreKind.EVENT, None, 0, 1000.5)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="last_used_ms"):
        freshness(StoreKind.EVENT, "yesterday", 0, 1000)  # type: ignore[arg-type]


def test_threshold_is_inclusive_and_validated() -> None:
    p = FreshnessParams(1.0, 1.0)
    w = freshness(StoreKind.EVENT, None, 0, 1000, p)
    assert is_fresh(StoreKind.EVENT, None, 0, 1000, p, theta=w)
    assert not is_fresh(StoreKind.EVENT, None, 0, 1000, p, theta=math.nextafter(w, 1.0))
    assert is_fresh(StoreKind.EVENT, None, 0, 10**12, p, theta=0.0)
    assert not is_fresh(StoreKind.EVENT, None, 0, 1, p, theta=1.0)
    for bad in (-0.1, 1.1, math.nan):
        with pytest.raises(ValidationError, match="theta"):
            is_fresh(StoreKind.EVENT, None, 0, 1, p, theta=bad)
    assert 0 < THETA_FRESH < 1


@pytest.mark.parametrize("kind", [StoreKind.PROFILE, StoreKind.EXPERIENCE, StoreKind.EVENT])
@pytest.mark.parametrize("theta", [0.01, THETA_FRESH, 0.5, 0.9])
def test_horizon_is_where_the_weight_meets_theta(kind: StoreKind, theta: float) -> None:
    p = DEFAULT_FRESHNESS[kind]
    h = horizon_s(p, theta)
    assert weight(h, p.eta_s, p.kappa) == pytest.approx(theta, rel=1e-9)


def test_horizon_edges() -> None:
    assert horizon_s(DEFAULT_FRESHNESS[StoreKind.PROCEDURE]) == math.inf
    assert horizon_s(FreshnessParams(10.0, 1.0), 0.0) == math.inf
    assert horizon_s(FreshnessParams(10.0, 1.0), 1.0) == 0.0


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([StoreKind.PROFILE, StoreKind.EXPERIENCE, StoreKind.EVENT]),
       st.sampled_from([0.01, THETA_FRESH, 0.3, 0.8]), st.integers(0, 3 * 10**12))
def test_fresh_since_is_the_range_form_of_the_threshold(kind: StoreKind, theta: float, now: int) -> None:
    since = fresh_since_ms(kind, now, theta=theta)
    assert since is not None
    assert is_fresh(kind, None, since + 1, now, theta=theta)
    assert not is_fresh(kind, None, since - 2, now, theta=theta)
    assert is_fresh(kind, since + 1, 0, now, theta=theta)


def test_fresh_since_is_none_when_nothing_can_go_stale() -> None:
    assert fresh_since_ms(StoreKind.PROCEDURE, T0) is None
    assert fresh_since_ms(StoreKind.EVENT, T0, theta=0.0) is None


# -- Eq. 5: how freshness combines with the retrieval score ----------------------------------------


def test_rank_score_keeps_the_retrieval_order_of_fresh_records() -> None:
    hits = [("a", 0.91, 0.06), ("b", 0.80, 1.0), ("c", 0.75, 0.5), ("d", 0.99, 0.01)]
    scored = sorted(((rank_score(rel, w), name) for name, rel, w in hits), reverse=True)
    returned = [name for score, name in scored if score != -math.inf]
    assert returned == ["a", "b", "c"]  # d is stale: not returned, whatever its relevance
    assert rank_score(0.42, 1.0) == 0.42 and rank_score(0.42, THETA_FRESH) == 0.42
    assert rank_score(0.42, math.nextafter(THETA_FRESH, 0.0)) == -math.inf
    assert rank_score(-3.0, 0.5) == -3.0  # fused scores need not be positive


@pytest.mark.parametrize("args, field", [
    ((math.nan, 0.5), "relevance"), ((math.inf, 0.5), "relevance"), ((0.5, 1.5), "w"), ((0.5, -0.1), "w"),
    ((0.5, math.nan), "w"),
])
def test_rank_score_rejects_bad_inputs(args: tuple, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        rank_score(*args)
    assert err.value.field == field


# -- the MemoryUsed batcher ------------------------------------------------------------------------


def test_batch_is_due_at_max_items_distinct_memories() -> None:
    b = UsageBatcher(max_items=3, max_wait_ms=10_000)
    assert b.add("m1", 100, now_ms=0) is None
    assert b.add("m1", 105, now_ms=1) is None  # same memory: still one item
    assert b.add("m2", 101, now_ms=2) is None
    assert len(b) == 2
    assert b.add("m3", 102, now_ms=3) == (Usage("m1", 105), Usage("m2", 101), Usage("m3", 102))
    assert len(b) == 0 and b.due_at_ms is None


def test_batch_is_due_max_wait_after_its_first_use() -> None:
    b = UsageBatcher(max_items=100, max_wait_ms=1_000)
    b.add("m1", 5, now_ms=5_000)
    assert b.due_at_ms == 6_000
    assert b.add("m2", 6, now_ms=5_999) is None
    assert b.poll(5_999) is None
    assert b.poll(6_000) == (Usage("m1", 5), Usage("m2", 6))
    assert b.poll(7_000) is None and b.due_at_ms is None
    b.add("m3", 7, now_ms=9_000)
    assert b.due_at_ms == 10_000  # a new batch starts its own clock
    assert b.add("m4", 8, now_ms=10_500) == (Usage("m3", 7), Usage("m4", 8))


def test_batcher_keeps_the_latest_use_even_out_of_order() -> None:
    b = UsageBatcher(max_items=10, max_wait_ms=10)
    b.add("m1", 300, now_ms=0)
    b.add("m1", 200, now_ms=1)
    b.add("m1", 400, now_ms=2)
    assert b.flush() == (Usage("m1", 400),)
    assert b.flush() == ()


def test_add_many_returns_every_batch_that_fills() -> None:
    b = UsageBatcher(max_items=2, max_wait_ms=10_000)
    batches = b.add_many(["a", "b", "c", "d", "e"], 77, now_ms=0)
    assert batches == [(Usage("a", 77), Usage("b", 77)), (Usage("c", 77), Usage("d", 77))]
    assert b.flush() == (Usage("e", 77),)


def test_zero_wait_flushes_every_add() -> None:
    b = UsageBatcher(max_items=10, max_wait_ms=0)
    assert b.add("m", 1, now_ms=0) == (Usage("m", 1),)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdefg"), st.integers(0, 10**6), st.integers(0, 50)), max_size=60),
       st.integers(1, 5), st.integers(0, 200))
def test_batcher_loses_no_use_and_keeps_the_max(events: list, max_items: int, max_wait: int) -> None:
    b = UsageBatcher(max_items, max_wait)
    now, seen = 0, []
    for mid, used, step in events:
        now += step
        out = b.add(mid, used, now)
        if out:
            assert len(out) <= max_items and len({u.memory_id for u in out}) == len(out)
            seen.append(out)
    seen.append(b.flush())
    latest: dict[str, int] = {}
    for batch in seen:
        for u in batch:
            latest[u.memory_id] = max(latest.get(u.memory_id, -1), u.used_at_ms)
    expected: dict[str, int] = {}
    for mid, used, _ in events:
        expected[mid] = max(expected.get(mid, -1), used)
    assert latest == expected


@pytest.mark.parametrize("kwargs, field", [({"max_items": 0}, "max_items"), ({"max_wait_ms": -1}, "max_wait_ms"),
                                           ({"max_items": 2.5}, "max_items")])
def test_batcher_validates_its_limits(kwargs: dict, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        UsageBatcher(**kwargs)
    assert err.value.field == field


def test_batcher_validates_uses() -> None:
    b = UsageBatcher()
    with pytest.raises(ValidationError, match="memory_id"):
        b.add("", 1, 1)
    with pytest.raises(ValidationError, match="used_at_ms"):
        b.add("m", 1.5, 1)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="now_ms"):
        b.add("m", 1, None)  # type: ignore[arg-type]
    assert len(b) == 0
