"""The figures of ``memwarden eval api-load`` (issue 10 part 5), pure: latency percentiles, per-endpoint
throughput and latency, which answers count as expected, which acknowledged writes were never decided
(lost), which memories must still be recallable, and the pass rule. No I/O; the driver
(:mod:`memwarden.evals.api_load`) collects the calls and decisions and hands them here.

Units: latencies in milliseconds, durations in seconds, throughput in requests per second.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The gate's answer to a ``?wait=true`` write whose text its instruction detector holds for review: the API
#: telling the caller why, not an error of the API; :func:`content_refusals` counts it.
CONTENT_REFUSAL = (422, "INSTRUCTIONS_IN_CONTENT")
#: The share of the load's writes the gate may hold for review (answered 422 with ``?wait=true``, or decided
#: ``QUARANTINED`` after a 202) before the run fails: the load's generated notes are ordinary, and a detector
#: holding more than one in twenty would make the run measure the review queue, not the API. How often the
#: detector misreads ordinary text is ``memwarden eval poisoning``'s false-alarm rate (budget 0.001).
MAX_CONTENT_REFUSAL_SHARE = 0.05
#: The status (and, for a 4xx, the code) each endpoint of the mix is expected to answer; anything else
#: is an unexpected error. ``decision`` may also answer 404 ``NOT_DECIDED`` while the gate is deciding.
EXPECTED: dict[str, tuple[tuple[int, str | None], ...]] = {
    "record": ((202, None),),
    "record_wait": ((201, None), CONTENT_REFUSAL),
    "supersede": ((202, None),),
    "forget": ((202, None),),
    "recall": ((200, None),),
    "decision": ((200, None), (404, "NOT_DECIDED")),
}
#: The intended refusals: kind -> the status and code the API must answer.
REFUSALS: dict[str, tuple[int, str]] = {
    "forget_other": (403, "NOT_OWNER"),
    "supersede_other": (403, "NOT_OWNER"),
    "unknown_token": (401, "UNKNOWN_TOKEN"),
}
#: Outcomes of the gate that make a write take effect.
ACCEPTED = ("ACCEPTED", "ACCEPTED_UNVERIFIED")


@dataclass(frozen=True)
class Call:
    """One HTTP request of the load: its endpoint (a key of :data:`EXPECTED`, or ``refusal:<kind>``),
    the status (0 when no answer came: a timeout or a connection error), the ``code`` of an error body,
    the latency in ms, and ``error`` (the exception's name when no answer came)."""

    endpoint: str
    status: int
    latency_ms: float
    code: str | None = None
    error: str = ""

    @property
    def refusal_kind(self) -> str | None:
        """The intended refusal this call tried (a key of :data:`REFUSALS`), ``None`` for a call of the mix."""
        return self.endpoint.removeprefix("refusal:") if self.endpoint.startswith("refusal:") else None


@dataclass(frozen=True)
class Ack:
    """A write the API acknowledged (202, or 201 with ``?wait=true``): its kind (``record``,
    ``supersede``, ``forget``), ids, the unique marker word of its text (``""`` for a forget), the
    client that sent it and its sequence number in that client (its order on the ledger: a client's
    writes are about its own subject and go to one partition)."""

    kind: str
    command_id: str
    memory_id: str
    marker: str
    client: int
    seq: int


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) of ``values`` by linear interpolation between the closest ranks
    (numpy's default); ``None`` for no values. Raises ``ValueError`` when ``q`` is outside 0-100."""
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"q: between 0 and 100, not {q}")
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def expected(call: Call) -> bool:
    """Whether ``call`` got an answer its endpoint may give (:data:`EXPECTED`, :data:`REFUSALS`)."""
    if call.refusal_kind is not None:
        want = REFUSALS.get(call.refusal_kind)
        return want is not None and (call.status, call.code) == want
    for status, code in EXPECTED.get(call.endpoint, ()):
        if call.status == status and (code is None or call.code == code):
            return True
    return False


def _rounded(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def endpoint_figures(calls: Iterable[Call], duration_s: float) -> dict[str, dict[str, Any]]:
    """Per endpoint (refusals excluded): ``count``, ``per_s`` (count / ``duration_s``), ``p50_ms``,
    ``p95_ms``, ``p99_ms``, ``max_ms`` over the answered calls, and ``unexpected`` (calls with an answer
    not in :data:`EXPECTED`, or none). Raises ``ValueError`` when ``duration_s`` is not positive."""
    if duration_s <= 0:
        raise ValueError("duration_s: must be positive")
    grouped: dict[str, list[Call]] = {}
    for call in calls:
        if call.refusal_kind is None:
            grouped.setdefault(call.endpoint, []).append(call)
    out: dict[str, dict[str, Any]] = {}
    for endpoint in sorted(grouped):
        group = grouped[endpoint]
        latencies = [c.latency_ms for c in group if c.status]
        out[endpoint] = {"count": len(group), "per_s": round(len(group) / duration_s, 1),
                         "p50_ms": _rounded(percentile(latencies, 50)), "p95_ms": _rounded(percentile(latencies, 95)),
                         "p99_ms": _rounded(percentile(latencies, 99)),
                         "max_ms": _rounded(max(latencies) if latencies else None),
                         "unexpected": sum(1 for c in group if not expected(c))}
    return out


def refusal_figures(calls: Iterable[Call]) -> dict[str, dict[str, Any]]:
    """Per intended refusal kind: ``count``, ``expected`` (``"403 NOT_OWNER"``), ``as_expected`` (how
    many answered exactly that) and ``answers`` (status and code -> count)."""
    out: dict[str, dict[str, Any]] = {}
    for call in calls:
        kind = call.refusal_kind
        if kind is None:
            continue
        status, code = REFUSALS.get(kind, (0, "?"))
        entry = out.setdefault(kind, {"count": 0, "expected": f"{status} {code}", "as_expected": 0, "answers": {}})
        entry["count"] += 1
        entry["as_expected"] += expected(call)
        answer = f"{call.status} {call.code or ''}".strip() if call.status else call.error or "no answer"
        entry["answers"][answer] = entry["answers"].get(answer, 0) + 1
    return out


def unexpected_errors(calls: Iterable[Call]) -> list[Call]:
    """Calls of the mix that got no expected answer: any 5xx, timeout or connection error, any 4xx but
    the intended refusals (a refusal answered otherwise than intended counts here too)."""
    return [c for c in calls if not expected(c)]


def content_refusals(calls: Iterable[Call]) -> int:
    """How many calls of the mix the gate answered with :data:`CONTENT_REFUSAL` (a write held for review)."""
    return sum(1 for c in calls if c.refusal_kind is None and (c.status, c.code) == CONTENT_REFUSAL)


def lost(acks: Iterable[Ack], decided: Mapping[str, str]) -> list[Ack]:
    """Acknowledged writes without a decision in ``decided`` (command id -> outcome)."""
    return [a for a in acks if a.command_id not in decided]


def live_memories(acks: Iterable[Ack], decided: Mapping[str, str]) -> dict[str, Ack]:
    """Memory id -> the accepted write whose text is current: a record or supersession accepted by the
    gate, not followed (in its client's order) by an accepted forget. Writes not accepted change nothing."""
    live: dict[str, Ack] = {}
    for ack in sorted(acks, key=lambda a: (a.client, a.seq)):
        if decided.get(ack.command_id) not in ACCEPTED:
            continue
        if ack.kind == "record" or (ack.kind == "supersede" and ack.memory_id in live):
            live[ack.memory_id] = ack
        elif ack.kind == "forget":
            live.pop(ack.memory_id, None)
    return live


def passed(figures: Mapping[str, Any]) -> bool:
    """The goal: writes were acknowledged, none lost, none unrecallable, no unexpected error, every
    intended refusal happened and answered exactly as intended, and the gate held at most
    :data:`MAX_CONTENT_REFUSAL_SHARE` of the writes for review: ``content_refusals`` (422 answers) and the
    acknowledged writes decided ``QUARANTINED`` (``outcomes``) over both."""
    refusals = figures["intended_refusals"]
    refused = figures.get("content_refusals", 0)
    held = refused + figures.get("outcomes", {}).get("QUARANTINED", 0)
    writes = figures["acknowledged"] + refused
    return (figures["acknowledged"] > 0 and figures["lost"] == 0 and figures["unrecallable"] == 0
            and figures["unexpected_errors"] == 0 and bool(refusals)
            and all(r["as_expected"] == r["count"] for r in refusals.values())
            and held <= MAX_CONTENT_REFUSAL_SHARE * writes)


__all__ = ["ACCEPTED", "CONTENT_REFUSAL", "EXPECTED", "MAX_CONTENT_REFUSAL_SHARE", "REFUSALS", "Ack", "Call",
           "content_refusals", "endpoint_figures", "expected", "live_memories",
           "lost", "passed", "percentile", "refusal_figures", "unexpected_errors"]
