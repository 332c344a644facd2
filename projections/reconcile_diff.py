"""What differs between a live projection and the state the ledger implies (SSGM Eq. 7), by kind,
and the drift δ of Eq. 4 as memwarden measures it. Pure comparisons over rows and points.

Kinds, per memory version (``memory_versions`` row, keyed by command id):
``lost_write`` (the ledger implies the row, the projection lacks it), ``resurrected`` (the
projection holds a row the ledger does not imply), ``missed_delete`` (forgotten by the ledger, still
holding content or another status), ``corrupted_interval`` (validity interval, closing or expiry
differ), ``stale_row`` (any other column). Per index point (keyed by point id): ``lost_point``,
``extra_point``, ``stale_payload``, ``wrong_vector`` (cosine below :data:`VECTOR_TOLERANCE`).
Per memory: ``stale_use`` (its last use).

Drift δ (Eq. 4, per memory version): δ = (1/|K|) Σ_v (1 − sim(E_M(v), E_K(v))), where ``E_K(v)`` is
the version as the ledger implies it and ``E_M(v)`` as the projection serves it; a version whose row
or point diverges in anything but its vector counts as orthogonal (sim 0: it is served wrongly or not
at all), a vector-only divergence counts its cosine. ``|K|`` is the number of versions the ledger
implies. δ is additive over versions, which is what Theorem 1's argument needs: a step that damages
at most ``f`` versions adds at most ``f/|K|`` (README, "Reconciliation and drift").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memwarden.projections.state_digest import PROCESSING_TIME
from memwarden.projections.vector_index import IndexPoint

#: Columns of the validity interval and lifecycle times of a version.
INTERVAL = ("valid_from", "valid_to", "closed_at", "expires_at")
#: Below this cosine two stored vectors of one point differ.
VECTOR_TOLERANCE = 0.9999


@dataclass
class Divergences:
    """Diverging keys by kind: ``rows`` (command ids), ``points`` (point ids), ``uses`` (memory ids),
    and the per-version drift contributions (command id -> 1 − sim)."""

    rows: dict[str, list[str]] = field(default_factory=dict)
    points: dict[str, list[str]] = field(default_factory=dict)
    uses: list[str] = field(default_factory=list)
    contributions: dict[str, float] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """How many divergences of each kind."""
        out = {k: len(v) for k, v in (*self.rows.items(), *self.points.items()) if v}
        if self.uses:
            out["stale_use"] = len(self.uses)
        return out

    def drift(self, versions: int) -> float:
        """δ over ``versions`` versions the ledger implies (0 when there are none)."""
        return sum(self.contributions.values()) / versions if versions else 0.0


def _comparable(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in PROCESSING_TIME}


def _row_kind(expected: Mapping[str, Any], live: Mapping[str, Any]) -> str | None:
    a, b = _comparable(expected), _comparable(live)
    if a == b:
        return None
    if expected["status"] == "forgotten" and (live["status"] != "forgotten" or live["content_sealed"] is not None):
        return "missed_delete"
    if any(a.get(c) != b.get(c) for c in INTERVAL):
        return "corrupted_interval"
    return "stale_row"


def diff_rows(expected: Mapping[str, Mapping[str, Any]], live: Mapping[str, Mapping[str, Any]],
              out: Divergences) -> None:
    """Compare ``memory_versions`` rows by command id into ``out``."""
    for cid, row in expected.items():
        kind = "lost_write" if cid not in live else _row_kind(row, live[cid])
        if kind:
            out.rows.setdefault(kind, []).append(cid)
            out.contributions[cid] = 1.0
    for cid in live.keys() - expected.keys():
        out.rows.setdefault("resurrected", []).append(cid)
        out.contributions[cid] = 1.0


def cosine(a: Any, b: Any) -> float:
    """Cosine similarity of two vectors (0 when one is empty or null)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or not x.size:
        return 0.0
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norm if norm else 0.0


def diff_points(expected: Mapping[str, IndexPoint], live: Mapping[str, IndexPoint], out: Divergences) -> None:
    """Compare index points by point id into ``out`` (contributions keyed by the version's command id)."""
    for pid, point in expected.items():
        cid = str(point.payload.get("command_id", pid))
        found = live.get(pid)
        if found is None:
            out.points.setdefault("lost_point", []).append(pid)
            out.contributions[cid] = 1.0
        elif dict(found.payload) != dict(point.payload) or found.sparse != point.sparse:
            out.points.setdefault("stale_payload", []).append(pid)
            out.contributions[cid] = 1.0
        elif (sim := cosine(found.vector, point.vector)) < VECTOR_TOLERANCE:
            out.points.setdefault("wrong_vector", []).append(pid)
            out.contributions[cid] = max(out.contributions.get(cid, 0.0), 1.0 - sim)
    for pid in live.keys() - expected.keys():
        out.points.setdefault("extra_point", []).append(pid)
        out.contributions[str(live[pid].payload.get("command_id", pid))] = 1.0


def diff_uses(expected: Mapping[str, Any], live: Mapping[str, Any], out: Divergences) -> None:
    """Compare the last use of each memory."""
    out.uses = sorted(k for k in expected.keys() | live.keys() if expected.get(k) != live.get(k))
