"""Pure figures of ``memwarden bench peers``: latency percentiles, a peer's ranked dialogue ids, one
system's figures and the side-by-side ratios (memwarden / peer). No I/O.

Directions: ``ingest_per_s`` and ``recall_at_<k>`` are better higher, ``recall_p50_ms`` and
``recall_p95_ms`` better lower. A ratio is ``memwarden / peer`` for every key, so memwarden is ahead
when an ingest or recall@k ratio is above 1 and when a latency ratio is below 1.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "DIRECTIONS",
    "compare",
    "figures_from_locomo",
    "latency_ms",
    "percentile",
    "ranked_dia_ids",
    "recall_key",
    "system_figures",
]


def recall_key(k: int) -> str:
    """The figure name of evidence recall at ``k`` (``recall_at_10``)."""
    return f"recall_at_{k}"


def directions(k: int) -> dict[str, str]:
    """Figure name -> ``"higher"`` or ``"lower"`` (which way is better)."""
    return {"ingest_per_s": "higher", "recall_p50_ms": "lower", "recall_p95_ms": "lower", recall_key(k): "higher"}


#: The directions at the default cut-off (k = 10).
DIRECTIONS: dict[str, str] = directions(10)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile ``q`` in [0, 1] of ``values`` (0.0 when empty), the same rule as
    ``memwarden eval locomo`` uses for its p95."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q}")
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def latency_ms(latencies: Sequence[float]) -> dict[str, float]:
    """``{"p50", "p95"}`` of per-call latencies in ms, rounded to 2 places (p50 is the median)."""
    return {"p50": round(statistics.median(latencies), 2) if latencies else 0.0,
            "p95": round(percentile(latencies, 0.95), 2)}


def ranked_dia_ids(results: Iterable[Mapping[str, Any]], key: str = "dia_id") -> list[str]:
    """The dialogue ids of a Mem0 ``search`` answer's ``results``, best first, from each memory's
    ``metadata[key]``; a memory without one counts as an empty id (it can never match evidence)."""
    out = []
    for item in results:
        metadata = item.get("metadata") or {}
        out.append(str(metadata.get(key) or ""))
    return out


def system_figures(turns: int, ingest_s: float, latencies: Sequence[float],
                   recall_by_k: Mapping[int, Mapping[str, float]], k: int) -> dict[str, Any]:
    """One system's figures: ``ingest_per_s`` (``turns`` over ``ingest_s``), ``recall_p50_ms``,
    ``recall_p95_ms``, ``recall_at_<k>`` (the ``"all"`` of a :class:`RecallTable` result row) and
    ``recall_by_category`` (the whole row). Raises ``ValueError`` for a non-positive ``ingest_s``."""
    if ingest_s <= 0:
        raise ValueError(f"ingest time must be positive, got {ingest_s}")
    lat = latency_ms(latencies)
    row = dict(recall_by_k.get(k, {}))
    return {"ingest_per_s": round(turns / ingest_s, 1), "recall_p50_ms": lat["p50"], "recall_p95_ms": lat["p95"],
            recall_key(k): float(row.get("all", 0.0)), "recall_by_category": row}


def figures_from_locomo(result: Mapping[str, Any], k: int) -> dict[str, Any]:
    """memwarden's figures from a ``run_locomo`` result (the ``memwarden eval locomo`` JSON), under the
    same names as :func:`system_figures`. Raises ``KeyError`` when ``k`` was not scored."""
    row = dict(result["recall_at_k"][str(k)])
    return {"ingest_per_s": float(result["ingest_per_s"]), "recall_p50_ms": float(result["recall_ms"]["p50"]),
            "recall_p95_ms": float(result["recall_ms"]["p95"]), recall_key(k): float(row.get("all", 0.0)),
            "recall_by_category": row}


def compare(memwarden: Mapping[str, Any], peer: Mapping[str, Any], k: int = 10) -> dict[str, Any]:
    """Ratios ``memwarden / peer`` of the four headline figures (``None`` where the peer's is 0), which
    way each is better, and whether memwarden is ahead (recall@k strictly higher) or no worse (ingest
    and recall p50 at least as good), as issue 11 asks."""
    dirs = directions(k)
    ratios: dict[str, float | None] = {}
    for name in dirs:
        ours, theirs = float(memwarden[name]), float(peer[name])
        ratios[name] = round(ours / theirs, 3) if theirs else None
    rk = recall_key(k)
    goals = {
        f"{rk}_higher": float(memwarden[rk]) > float(peer[rk]),
        "ingest_per_s_no_worse": float(memwarden["ingest_per_s"]) >= float(peer["ingest_per_s"]),
        "recall_p50_ms_no_worse": float(memwarden["recall_p50_ms"]) <= float(peer["recall_p50_ms"]),
    }
    return {"ratios": ratios, "better": {n: f"{d} (memwarden ahead when the ratio is {'>' if d == 'higher' else '<'} 1)"
                                         for n, d in dirs.items()},
            "goals": {**goals, "all_met": all(goals.values())}}
