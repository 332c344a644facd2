"""Selective repair through lineage (issue 14 part 4; seed 004 "Persistent state separates compromise
from consequence": "lineage that supports selective repair. Broad deletion is not a satisfying
incident response if it erases useful history. Selective repair is not credible if a poisoned
summary survives after the source record is removed").

A source, a writer or a signing key is found compromised. :func:`repair` takes back everything it
put into memory, and everything derived from that, and nothing else:

1. **One command.** The root admin (:func:`memwarden.keystore.admin_signer`) publishes one signed
   ``ForgetMatching`` whose selector names the compromise (:class:`RepairTarget`: source
   references, signing key ids, writing principals, optionally a window of admission by the gate) with
   ``cascade`` on, and waits for the gate's decision (``MemwardenClient.decided``). The gate
   (:mod:`memwarden.commands.gate.forgetting`) selects the live memories matching every criterion
   given, adds every memory deriving from one of them through ``derived_from``, transitively, and
   forgets them all: each is blocked from every read from the decision on and every data key of
   every version is shredded. A legal hold still wins (outcome ``DEFERRED``). ``dry_run``: the same
   decision, listing the ids, changing nothing.
2. **Matched or derived.** The decision lists the memory ids; the gate's own state
   (``gate_memories``) and the gate's own predicate (``selects``) tell which matched the selector
   and which came in through lineage.
3. **Affected reads.** Every audited read (``ReadAudited`` on the audit topic) since the first
   affected memory was recorded (``memory_versions.decided_at``, minus a margin for clock skew)
   that returned one of the ids: its position on the ledger (``audit:P:O``, what ``memwarden audit
   at`` takes), principal, purpose, time and the affected ids it returned, so that the agents that
   acted on them can be told.

**The action is forget, never quarantine** (policy choice). The gate's quarantine holds a *command*
before admission until a reviewer releases or rejects it; an admitted memory has been projected,
indexed, read and derived from, and no command moves it back behind review. Making one would be a
second half-forget: its text would stay decryptable (its data key kept so a reviewer could "approve
it back"), which is precisely what a compromised source must not leave behind, and every derivative
would need its own review. Repair therefore forgets, with the dry run as the review step before it;
legitimate content caught by a too-broad selector is recovered by recording it again from its
original source (the ledger keeps the positions and the audit the lineage), not by unhiding it.

**Windows.** ``admitted_from`` / ``admitted_to`` bound when the gate admitted each memory's current
version (its decision's clock, ``ForgetSelector.admitted_*``), not the ``observed_at`` the writer
states: a compromised writer can back-date what it writes, not when the gate took it.

Shapes (``RepairReport.to_json()``)::

    {"action": "forget", "dry_run": false,
     "target": {"source_refs": ["import-feed-7"], "key_ids": [], "principals": [],
                "admitted_from": null, "admitted_to": null},
     "command_id": "…", "position": "commands:1:42", "outcome": "ACCEPTED",
     "reasons": [{"code": "OK", "message": "forgot 9 memories", "field": null}],
     "memory_ids": ["…"], "matched": ["…"], "derived": ["…"],
     "first_recorded_at": "2026-…+00:00",
     "affected_reads": [{"position": "audit:0:17", "read_id": "…", "principal": "agent:assistant",
                         "purpose": "general", "read_at": "2026-…+00:00", "memory_ids": ["…"]}],
     "affected_principals": {"agent:assistant": 3},
     "timings_s": {"decision": 0.41, "lineage": 0.01, "affected_reads": 0.12, "total": 0.55}}
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from memwarden.commands.forget_commands import ForgetSelector
from memwarden.errors import DecodeError, ValidationError
from memwarden.settings import Settings

#: The only repair action (see the module doc for why not "quarantine").
ACTIONS = ("forget",)
#: Why ``quarantine`` is refused, as the CLI prints it.
NO_QUARANTINE = ("quarantine is not offered: the gate quarantines commands before admission, and no command "
                 "puts an admitted memory back behind review; repair forgets (use --dry-run to review first)")
#: How far before the first affected memory's decision the audit scan starts (clock skew between the
#: gate, the read API and the broker's timestamps).
SCAN_MARGIN = timedelta(minutes=5)


def _aware(value: datetime | None, name: str) -> datetime | None:
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValidationError(name, "needs a UTC offset (e.g. 2026-07-01T09:00:00+00:00)")
    return value.astimezone(UTC)


@dataclass(frozen=True)
class RepairTarget:
    """What was compromised: memories admitted from any of ``source_refs``, signed with any of
    ``key_ids``, written by any of ``principals`` (AND across the kinds given, OR within one), with
    admitted by the gate in ``[admitted_from, admitted_to)`` when given. At least one source, key or
    principal is required: a repair never means "everything", and a bare window is not a
    compromise."""

    source_refs: tuple[str, ...] = ()
    key_ids: tuple[str, ...] = ()
    principals: tuple[str, ...] = ()
    admitted_from: datetime | None = None
    admitted_to: datetime | None = None

    def __post_init__(self) -> None:
        for name in ("source_refs", "key_ids", "principals"):
            values = getattr(self, name)
            if isinstance(values, str):
                raise ValidationError(name, "must be a list of strings, not a single string")
            if any(not isinstance(v, str) or not v.strip() for v in values):
                raise ValidationError(name, "must not contain blank names")
            object.__setattr__(self, name, tuple(dict.fromkeys(values)))
        if not (self.source_refs or self.key_ids or self.principals):
            raise ValidationError("target", "name a source reference, a key id or a principal; an empty repair "
                                  "never means everything")
        start = _aware(self.admitted_from, "admitted_from")
        end = _aware(self.admitted_to, "admitted_to")
        if start is not None and end is not None and end <= start:
            raise ValidationError("admitted_to", "must be later than admitted_from")
        object.__setattr__(self, "admitted_from", start)
        object.__setattr__(self, "admitted_to", end)

    def selector(self) -> ForgetSelector:
        """The gate's selector for this target."""
        return ForgetSelector(source_references=self.source_refs, key_ids=self.key_ids, writers=self.principals,
                              admitted_from=self.admitted_from, admitted_to=self.admitted_to)

    def describe(self) -> str:
        """One line: ``source_ref=a,b key_id=k principal=p admitted=[from, to)``."""
        parts = [f"{label}={','.join(values)}" for label, values in (
            ("source_ref", self.source_refs), ("key_id", self.key_ids), ("principal", self.principals)) if values]
        if self.admitted_from or self.admitted_to:
            parts.append(f"admitted=[{_iso(self.admitted_from) or '-'}, {_iso(self.admitted_to) or '-'})")
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """Plain dict for ``--json``."""
        return {"source_refs": list(self.source_refs), "key_ids": list(self.key_ids),
                "principals": list(self.principals), "admitted_from": _iso(self.admitted_from),
                "admitted_to": _iso(self.admitted_to)}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@dataclass(frozen=True)
class AffectedRead:
    """An audited read that returned repaired memories: where its ``ReadAudited`` record is
    (``audit:P:O``), its read id, who read, for what purpose, when, and the repaired ids it returned
    (in its rank order)."""

    position: str
    read_id: str
    principal: str
    purpose: str
    read_at: str
    memory_ids: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """Plain dict for ``--json``."""
        return {"position": self.position, "read_id": self.read_id, "principal": self.principal,
                "purpose": self.purpose, "read_at": self.read_at, "memory_ids": list(self.memory_ids)}


@dataclass
class RepairReport:
    """The outcome of one repair (see the module doc for the JSON shape)."""

    target: RepairTarget
    dry_run: bool
    command_id: str
    position: str
    outcome: str
    reasons: list[dict[str, Any]]
    memory_ids: list[str]
    matched: list[str] = field(default_factory=list)
    derived: list[str] = field(default_factory=list)
    first_recorded_at: datetime | None = None
    affected_reads: list[AffectedRead] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)

    @property
    def refused(self) -> bool:
        """The gate refused the forget (nothing changed)."""
        return self.outcome == "REJECTED"

    def affected_principals(self) -> dict[str, int]:
        """Affected reads per principal, most first."""
        counts: dict[str, int] = {}
        for r in self.affected_reads:
            counts[r.principal] = counts.get(r.principal, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def to_json(self) -> dict[str, Any]:
        """Plain dict for ``--json``."""
        return {"action": "forget", "dry_run": self.dry_run, "target": self.target.to_json(),
                "command_id": self.command_id, "position": self.position, "outcome": self.outcome,
                "reasons": self.reasons, "memory_ids": self.memory_ids, "matched": self.matched,
                "derived": self.derived, "first_recorded_at": _iso(self.first_recorded_at),
                "affected_reads": [r.to_json() for r in self.affected_reads],
                "affected_principals": self.affected_principals(), "timings_s": self.timings_s}


def check_action(action: str) -> str:
    """``action`` if it is a repair action; ``ValidationError`` (field ``action``) otherwise."""
    if action == "quarantine":
        raise ValidationError("action", NO_QUARANTINE)
    if action not in ACTIONS:
        raise ValidationError("action", f"{action!r} is not a repair action ({', '.join(ACTIONS)})")
    return action


def repair(settings: Settings, target: RepairTarget, *, dry_run: bool = False, reason: str = "",
           timeout_s: float = 120.0) -> RepairReport:
    """Run one repair of ``target`` in ``settings``' namespace (steps 1-3 of the module doc) and
    return its report. A refusal by the gate is a report with outcome ``REJECTED`` (no ids, no
    reads). Raises ``StackUnavailable`` when Kafka, the worker or Postgres does not answer."""
    from memwarden.keystore import admin_signer
    from memwarden.producers.client import MemwardenClient

    started = time.monotonic()
    admin = admin_signer(settings)
    sel = target.selector()
    with MemwardenClient(settings, signers=[admin]) as client:
        receipt = client.forget_matching(
            principal=admin.principal_id, source_references=sel.source_references, key_ids=sel.key_ids,
            writers=sel.writers, admitted_from=sel.admitted_from, admitted_to=sel.admitted_to,
            reason=reason or f"repair: {target.describe()}", dry_run=dry_run, cascade=True, wait=False)
        decision = client.decided([receipt.command_id], timeout_s=timeout_s)[receipt.command_id]
    decided = time.monotonic()
    report = RepairReport(target, dry_run, receipt.command_id, f"commands:{receipt.partition}:{receipt.offset}",
                          decision["outcome"], list(decision["reasons"]), list(decision.get("memory_ids") or []))
    report.timings_s["decision"] = round(decided - started, 3)
    if report.memory_ids:
        report.matched, report.derived = split_lineage(settings, sel, report.memory_ids)
        report.timings_s["lineage"] = round(time.monotonic() - decided, 3)
        scan = time.monotonic()
        report.first_recorded_at = first_recorded(settings, report.memory_ids)
        since = report.first_recorded_at - SCAN_MARGIN if report.first_recorded_at else None
        report.affected_reads = affected_reads(settings, report.memory_ids, since)
        report.timings_s["affected_reads"] = round(time.monotonic() - scan, 3)
    report.timings_s["total"] = round(time.monotonic() - started, 3)
    return report


def split_lineage(settings: Settings, selector: ForgetSelector, memory_ids: Sequence[str]) -> tuple[list[str],
                                                                                                      list[str]]:
    """``(matched, derived)``: the ids the selector itself matches, by the gate's own predicate on
    the gate's own state, and those that came in through ``derived_from``. An id the gate state does
    not hold counts as matched."""
    import asyncio

    from memwarden.commands.gate.forgetting import selects
    from memwarden.stores.gate_state import load_memories
    from memwarden.stores.pg import connect_async

    async def load() -> dict[str, Any]:
        conn = await connect_async(settings)
        try:
            async with conn.cursor() as cur:
                found = await load_memories(cur, list(memory_ids))
            await conn.commit()
        finally:
            await conn.close()
        return found

    states = asyncio.run(load())
    derived = [m for m in memory_ids if m in states and not selects(selector, states[m])]
    return [m for m in memory_ids if m not in derived], derived


def first_recorded(settings: Settings, memory_ids: Sequence[str]) -> datetime | None:
    """When the gate admitted the earliest version of any of ``memory_ids`` (``memory_versions``;
    ``None`` when the projection holds none of them yet)."""
    from memwarden.stores.pg import connect

    with connect(settings) as conn:
        row = conn.execute("SELECT min(decided_at) FROM memory_versions WHERE memory_id = ANY(%s::uuid[])",
                           (list(memory_ids),)).fetchone()
    value = row[0] if row else None
    return value.astimezone(UTC) if isinstance(value, datetime) else None


def reads_returning(records: Iterable[tuple[str, dict[str, Any]]], memory_ids: Iterable[str]) -> list[AffectedRead]:
    """The ``(position, ReadAudited record)`` pairs whose ``returned`` holds one of ``memory_ids``, as
    :class:`AffectedRead` in ``read_at`` order. Pure."""
    wanted = set(memory_ids)
    out = []
    for position, rec in records:
        hit = tuple(m for m in rec["returned"] if m in wanted)
        if hit:
            at = rec["read_at"]
            out.append(AffectedRead(position, rec["read_id"], rec["principal"], rec["purpose"],
                                    at.isoformat() if isinstance(at, datetime) else str(at), hit))
    return sorted(out, key=lambda r: (r.read_at, r.position))


def affected_reads(settings: Settings, memory_ids: Sequence[str], since: datetime | None = None) -> list[AffectedRead]:
    """Every audited read of the namespace that returned one of ``memory_ids``, scanning the audit
    topic from the first record at or after ``since`` (from the beginning when ``None``) to its end
    now. Raises ``StackUnavailable`` when Kafka does not answer."""
    from memwarden.epoch import to_ms
    from memwarden.schemas.codec import default_codec
    from memwarden.stores.ledger import ends_of, offsets_for_time, read

    ends = ends_of(settings, ["audit"])["audit"]
    starts = offsets_for_time(settings, "audit", to_ms(since)) if since is not None else {}
    codec = default_codec()

    def decoded() -> Iterable[tuple[str, dict[str, Any]]]:
        for r in read(settings, "audit", ends, starts):
            if r.value is None:
                continue
            try:
                name, rec = codec.decode(r.value)
            except DecodeError:
                continue
            if name == "ReadAudited":
                yield f"audit:{r.position.partition}:{r.position.offset}", rec

    return reads_returning(decoded(), memory_ids)


__all__ = ["ACTIONS", "NO_QUARANTINE", "AffectedRead", "RepairReport", "RepairTarget", "affected_reads",
           "check_action", "first_recorded", "reads_returning", "repair", "split_lineage"]
