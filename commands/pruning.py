"""Budgeted pruning (SSGM §4.3, seed 000 "Temporal Decay and Freshness Governance"): a memory whose
freshness ``w`` (Eq. 3) stayed below ``theta_fresh`` for a grace period is archived or forgotten, as
the policy of its store kind says. Pure: no I/O.

``w`` only falls while a memory is not used, so "below theta for ``grace_s``" is the same as "the
time since its last valid use (or the start of its validity, if never used) is at least the
freshness horizon plus ``grace_s``" (:func:`memwarden.commands.readmodel.freshness.horizon_s`).

Actions per store kind (:data:`DEFAULT_PRUNING`):

* ``forget`` — a signed ``ForgetMatching`` of the memory ids, through the gate, with erasure
  receipts (EVENT and EXPERIENCE: raw observations and environment knowledge that aged out);
* ``archive`` — nothing is removed: Eq. 5 already keeps a stale memory out of recall, while the
  ledger, history and audit reads keep it (PROFILE: stable facts leave by supersession, not age);
* ``keep`` — never pruned (PROCEDURE: approved rules do not decay).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from memwarden.commands.model import StoreKind
from memwarden.commands.readmodel.freshness import DEFAULT_FRESHNESS, THETA_FRESH, FreshnessParams, horizon_s
from memwarden.errors import ValidationError

PruneAction = Literal["forget", "archive", "keep"]
#: What pruning does with a stale memory of each store kind (see the module doc).
DEFAULT_PRUNING: Mapping[StoreKind, PruneAction] = MappingProxyType({
    StoreKind.EVENT: "forget", StoreKind.EXPERIENCE: "forget", StoreKind.PROFILE: "archive",
    StoreKind.PROCEDURE: "keep",
})
#: Default grace period (seconds) a memory stays below theta_fresh before it is pruned: 30 days.
DEFAULT_GRACE_S = 30 * 86_400.0


def prunable(store_kind: StoreKind | str, last_used_ms: int | None, valid_from_ms: int, now_ms: int,
             theta: float = THETA_FRESH, grace_s: float = DEFAULT_GRACE_S,
             params: Mapping[StoreKind, FreshnessParams] = DEFAULT_FRESHNESS) -> bool:
    """Whether the memory's freshness has been below ``theta`` for at least ``grace_s`` seconds at
    ``now_ms`` (times in UTC epoch ms; reference = the later of the last use and ``valid_from_ms``).
    A kind that does not decay is never prunable. Raises ``ValidationError`` naming the argument for
    an unknown store kind, a ``theta`` outside [0, 1] or a negative or NaN ``grace_s``."""
    if isinstance(grace_s, bool) or not isinstance(grace_s, int | float) or math.isnan(grace_s) or grace_s < 0:
        raise ValidationError("grace_s", f"must be a number >= 0, got {grace_s!r}")
    try:
        kind = StoreKind(store_kind)
    except ValueError:
        raise ValidationError("store_kind", f"unknown store kind {store_kind!r}") from None
    horizon = horizon_s(params[kind], theta)
    if math.isinf(horizon):
        return False
    reference = max(valid_from_ms, last_used_ms if last_used_ms is not None else valid_from_ms)
    return now_ms - reference >= (horizon + grace_s) * 1000.0


def action_of(store_kind: StoreKind | str, policy: Mapping[StoreKind, PruneAction] = DEFAULT_PRUNING) -> PruneAction:
    """The pruning action of ``store_kind`` under ``policy`` (``keep`` when the policy names none)."""
    return policy.get(StoreKind(store_kind), "keep")


__all__ = ["DEFAULT_GRACE_S", "DEFAULT_PRUNING", "PruneAction", "action_of", "prunable"]
