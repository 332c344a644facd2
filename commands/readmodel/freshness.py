"""Freshness: the Weibull decay of SSGM Eq. 3 and the freshness condition of Eq. 5. Pure, no I/O.

Eq. 3 (seed 000, "Temporal Decay and Freshness Governance"; Principle 2)::

    w(dt) = exp(-(dt / eta) ** kappa)

``dt`` is the time since the last valid use of the memory (a ``MemoryUsed`` event), or since the
start of its validity interval when it was never used; ``eta`` (seconds) is the characteristic time
scale and ``kappa`` the shape: ``kappa < 1`` decays fast early and then keeps a long tail, ``kappa =
1`` is plain exponential decay, ``kappa > 1`` holds on and then drops. ``w(0) = 1`` and ``w(eta) =
1/e`` for every shape.

Eq. 5 (constrained retrieval) keeps a candidate only when ``ACL(mu, u_id) and w(dt_mu) >= theta_fresh``
with one global threshold. Eq. 5 does not multiply relevance by ``w``: freshness is a condition on
membership of the retrieved set, and the order inside the set stays the semantic (here: fused)
order. :func:`rank_score` implements exactly that. Because ``w`` is monotone in ``dt``, the
condition ``w >= theta`` is the same as "last use (or valid_from) at or after ``now - horizon``", so
it can be pushed into the index query as a range (:func:`fresh_since_ms`): no filtering after ranking.

Freshness governs recall of *current* memory only; audit, history and ``known_at`` reads do not
apply it (the ledger keeps everything).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from memwarden.commands.model import StoreKind
from memwarden.commands.readmodel.checks import epoch_ms
from memwarden.errors import ValidationError

DAY_S = 86_400.0
#: The unified freshness threshold theta_fresh of Eq. 5: a record whose weight fell below 5 % is not
#: returned (for kappa = 1 that is about three time scales eta without a use).
THETA_FRESH = 0.05


def _finite(field: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ValidationError(field, f"must be a number, got {value!r}")
    return float(value)


def weight(delta_s: float, eta_s: float, kappa: float) -> float:
    """Eq. 3: ``exp(-(delta_s / eta_s) ** kappa)``, a weight in ``[0, 1]``.

    ``delta_s``: seconds since the last valid use (finite, ``>= 0``); ``eta_s``: scale in seconds
    (``> 0``; ``math.inf`` = no decay, weight 1); ``kappa``: shape (finite, ``> 0``).
    Raises ``ValidationError`` (a ``ValueError`` naming the argument) for a negative, NaN or infinite
    ``delta_s``, a non-positive or NaN ``eta_s``, or a non-positive, NaN or infinite ``kappa``."""
    delta_s = _finite("delta_s", delta_s)
    if delta_s < 0 or math.isinf(delta_s):
        raise ValidationError("delta_s", f"must be finite and >= 0, got {delta_s!r}")
    eta_s = _finite("eta_s", eta_s)
    if eta_s <= 0:
        raise ValidationError("eta_s", f"must be > 0, got {eta_s!r}")
    kappa = _finite("kappa", kappa)
    if kappa <= 0 or math.isinf(kappa):
        raise ValidationError("kappa", f"must be finite and > 0, got {kappa!r}")
    return math.exp(-((delta_s / eta_s) ** kappa))


@dataclass(frozen=True)
class FreshnessParams:
    """Eq. 3 parameters of one store kind: ``eta_s`` (seconds, ``> 0``, ``math.inf`` = no decay)
    and ``kappa`` (``> 0``). Raises ``ValidationError`` like :func:`weight`."""

    eta_s: float
    kappa: float

    def __post_init__(self) -> None:
        weight(0.0, self.eta_s, self.kappa)

    @property
    def decays(self) -> bool:
        """False when ``eta_s`` is infinite (the weight is always 1)."""
        return not math.isinf(self.eta_s)


#: Documented defaults per store kind (seed 004 "A five-store architecture", seed 000 Eq. 3):
#:
#: - PROFILE, eta 365 days, kappa 0.7: "current preferences, constraints, relationships, and stable
#:   facts", replaced by *supersession*, not by ageing. kappa < 1 gives the heavy tail of stable
#:   facts: a birthday or a dietary constraint unused for years is still true, so the weight falls
#:   below theta_fresh only after about 4.8 years without a use.
#: - EXPERIENCE, eta 90 days, kappa 1.0: environment behaviour and workflows "expire when
#:   dependencies change"; an environment changes at a roughly constant rate, hence memoryless
#:   (exponential) decay on a quarter's time scale: out of recall after about 270 days unused.
#: - EVENT, eta 30 days, kappa 1.2: raw observations are "read for audit or reconstruction; never
#:   treat a raw event as standing authority". They matter while recent and then drop together
#:   (kappa > 1: flat first, then steep): out of *recall* after about 75 days unused, still in the
#:   ledger and in history reads.
#: - PROCEDURE, no decay (eta infinite): approved rules are "versioned, tested, reviewed and signed
#:   like code"; their validity comes from the version and review, and they leave by supersession or
#:   revocation, never because nobody ran them for a while.
DEFAULT_FRESHNESS: Mapping[StoreKind, FreshnessParams] = MappingProxyType({
    StoreKind.PROFILE: FreshnessParams(eta_s=365 * DAY_S, kappa=0.7),
    StoreKind.EXPERIENCE: FreshnessParams(eta_s=90 * DAY_S, kappa=1.0),
    StoreKind.EVENT: FreshnessParams(eta_s=30 * DAY_S, kappa=1.2),
    StoreKind.PROCEDURE: FreshnessParams(eta_s=math.inf, kappa=1.0),
})


def _params(store_kind: StoreKind | str,
            params: Mapping[StoreKind, FreshnessParams] | FreshnessParams) -> FreshnessParams:
    if isinstance(params, FreshnessParams):
        return params
    try:
        kind = StoreKind(store_kind)
    except ValueError:
        raise ValidationError("store_kind", f"unknown store kind {store_kind!r}") from None
    if kind not in params:
        raise ValidationError("store_kind", f"no freshness parameters for {kind.value}")
    return params[kind]


def delta_seconds(last_used_ms: int | None, valid_from_ms: int, now_ms: int) -> float:
    """Seconds from the reference time to ``now_ms``: the reference is the later of the last use and
    ``valid_from_ms`` (a new version starts fresh; a never-used record ages from ``valid_from_ms``).
    A reference after ``now_ms`` (clock skew between nodes, as-of reads) counts as 0, not an error."""
    epoch_ms("last_used_ms", last_used_ms, optional=True)
    epoch_ms("valid_from_ms", valid_from_ms)
    epoch_ms("now_ms", now_ms)
    ref = valid_from_ms if last_used_ms is None else max(last_used_ms, valid_from_ms)
    return max(0, now_ms - ref) / 1000.0


def freshness(store_kind: StoreKind | str, last_used_ms: int | None, valid_from_ms: int, now_ms: int,
              params: Mapping[StoreKind, FreshnessParams] | FreshnessParams = DEFAULT_FRESHNESS) -> float:
    """Eq. 3 weight of one record at ``now_ms`` (all times epoch ms), with the parameters of its
    store kind (``params`` is a per-kind mapping or one ``FreshnessParams``). Raises
    ``ValidationError`` for non-integer times or a store kind missing from ``params``."""
    p = _params(store_kind, params)
    return weight(delta_seconds(last_used_ms, valid_from_ms, now_ms), p.eta_s, p.kappa)


def _theta(theta: float) -> float:
    theta = _finite("theta", theta)
    if not 0.0 <= theta <= 1.0:
        raise ValidationError("theta", f"must be within [0, 1], got {theta!r}")
    return theta


def is_fresh(store_kind: StoreKind | str, last_used_ms: int | None, valid_from_ms: int, now_ms: int,
             params: Mapping[StoreKind, FreshnessParams] | FreshnessParams = DEFAULT_FRESHNESS,
             theta: float = THETA_FRESH) -> bool:
    """Eq. 5 freshness condition ``w(dt) >= theta`` (``theta`` in ``[0, 1]``)."""
    return freshness(store_kind, last_used_ms, valid_from_ms, now_ms, params) >= _theta(theta)


def horizon_s(params: FreshnessParams, theta: float = THETA_FRESH) -> float:
    """The largest ``dt`` (seconds) with ``w(dt) >= theta``: ``eta * (-ln theta) ** (1 / kappa)``;
    ``math.inf`` when the kind does not decay or ``theta == 0``; ``0`` when ``theta == 1``."""
    theta = _theta(theta)
    if not params.decays or theta == 0.0:
        return math.inf
    return float(params.eta_s * (-math.log(theta)) ** (1.0 / params.kappa))


def fresh_since_ms(store_kind: StoreKind | str, now_ms: int,
                   params: Mapping[StoreKind, FreshnessParams] | FreshnessParams = DEFAULT_FRESHNESS,
                   theta: float = THETA_FRESH) -> int | None:
    """The earliest reference time (epoch ms; last use, else valid_from) still fresh at ``now_ms``:
    ``is_fresh`` holds iff ``max(last_used_ms, valid_from_ms) >= fresh_since_ms`` (to the
    millisecond, up to float rounding). ``None`` when every record of the kind is fresh. Use it as a
    ``FieldRange(gte=...)`` inside the index query so that stale records are never candidates."""
    epoch_ms("now_ms", now_ms)
    h = horizon_s(_params(store_kind, params), theta)
    return None if math.isinf(h) else now_ms - math.floor(h * 1000.0)


def rank_score(relevance: float, w: float, theta: float = THETA_FRESH) -> float:
    """How freshness combines with the fused retrieval score, as Eq. 5 says: it is a filter, not a
    factor. Returns ``relevance`` unchanged when ``w >= theta`` and ``-math.inf`` (= not returned)
    otherwise, so the order of the returned records is the retrieval order and a stale record never
    outranks anything. Raises ``ValidationError`` for a NaN/infinite relevance or ``w`` outside
    ``[0, 1]``."""
    relevance = _finite("relevance", relevance)
    if math.isinf(relevance):
        raise ValidationError("relevance", "must be finite")
    w = _finite("w", w)
    if not 0.0 <= w <= 1.0:
        raise ValidationError("w", f"must be within [0, 1], got {w!r}")
    return relevance if w >= _theta(theta) else -math.inf
