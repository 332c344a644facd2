"""Events the gate emits (past tense): ``GateDecided`` for every command; ``MemoryRecorded``,
``MemoryForgotten`` and ``GovernanceChanged`` for admitted ones; ``PrincipalState`` for the registry
topic. Pure builders of the Avro record dicts; ids are deterministic in the ledger position, so a
re-run over the same input yields the same events."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from memwarden.commands.gate import Decision, Forgotten, Outcome, Position, Reason
from memwarden.commands.model import Command, RecordMemory, SupersedeMemory, to_avro
from memwarden.commands.principals import PrincipalRecord
from memwarden.epoch import from_ms_or_none

_NS = uuid.UUID("6f1d3c8e-2a57-4f0b-9d7e-8c4b1a2e5f90")


def position_id(kind: str, position: Position) -> str:
    """Deterministic UUID for the ``kind`` record derived from the command at ``position``."""
    return str(uuid.uuid5(_NS, f"{kind}:{position.topic}:{position.partition}:{position.offset}"))


def _position(position: Position) -> dict[str, Any]:
    return dict(position.as_record())


def _reasons(reasons: tuple[Reason, ...]) -> list[dict[str, Any]]:
    return [{"code": r.code, "message": r.message, "field": r.field} for r in reasons]


def _sealed_fact(fact: dict[str, Any] | None) -> dict[str, Any] | None:
    """A ``Fact`` record without its clear value (the sealed value, when there is one, stays)."""
    return None if fact is None else {**fact, "value": ""}


def gate_decided(
    command: Command | None, decision: Decision, position: Position, now: datetime, memory_id: str | None = None
) -> dict[str, Any]:
    """``GateDecided`` record for ``command`` (``None`` when the input did not decode)."""
    env = command.envelope if command is not None else None
    return {
        "decision_id": position_id("decision", position),
        "command_id": env.command_id if env else None,
        "command_type": command.kind if command is not None else None,
        "principal": env.principal if env else None,
        "subject": env.subject if env else None,
        "memory_id": memory_id,
        "memory_ids": list(decision.listed),
        "deferred_ids": list(decision.deferred),
        "outcome": decision.outcome.value,
        "reasons": _reasons(decision.reasons),
        "gate_version": decision.gate_version,
        "policy_version": decision.policy_version,
        "position": _position(position),
        "decided_at": now,
    }


def rejected_input(code: str, message: str, field: str | None, position: Position, now: datetime) -> dict[str, Any]:
    """``GateDecided`` REJECTED record for input that is not a valid command (it also goes to the
    dead-letter topic with the same reason)."""
    return gate_decided(None, Decision(Outcome.REJECTED, (Reason(code, message, field),)), position, now)


def memory_recorded(command: Command, decision: Decision, position: Position, now: datetime,
                    approved_by: str | None = None) -> dict[str, Any]:
    """``MemoryRecorded`` for an admitted ``RecordMemory`` / ``SupersedeMemory`` (``command`` is the
    released original when a reviewer approved it; ``approved_by`` is then the reviewer). The typed
    fact is copied as the ledger carries it, its value sealed; a clear value (a command of an older
    writer) is never copied: the event keeps entity, attribute and cardinality only."""
    assert decision.memory is not None and isinstance(command, RecordMemory | SupersedeMemory)
    body = to_avro(command)
    tags = sorted({*(getattr(command, "tags", ()) or ()), *decision.tags})
    return {
        "event_id": position_id("event", position),
        "command_id": command.envelope.command_id,
        "command_type": command.kind,
        "memory_id": decision.memory.memory_id,
        "version": decision.version,
        "envelope": body["envelope"],
        "content": body["content"],
        "fact": _sealed_fact(body.get("fact")),
        "outcome": decision.outcome.value,
        "position": _position(position),
        "decided_at": now,
        "closes": list(decision.closes),
        "approved_by": approved_by,
        "tags": tags,
        "follows": command.follows if isinstance(command, RecordMemory) else None,
    }


def governance_changed(command: Command, signed: bytes, position: Position, now: datetime) -> dict[str, Any]:
    """``GovernanceChanged`` for an admitted governance command (the signed command embedded)."""
    env = command.envelope
    return {
        "event_id": position_id("event", position), "command_id": env.command_id, "command_type": command.kind,
        "principal": env.principal, "subject": env.subject, "command": signed, "position": _position(position),
        "decided_at": now,
    }


def memory_forgotten(forgotten: Forgotten, position: Position, now: datetime) -> dict[str, Any]:
    """``MemoryForgotten`` for one memory a decision forgot (at ``position``): the forget command it
    carries out (a deferred one when a hold was lifted), who issued it and why. The event id is
    deterministic in the position and the memory id."""
    m = forgotten.memory
    return {
        "event_id": position_id(f"forgotten:{m.memory_id}", position),
        "command_id": forgotten.command_id,
        "memory_id": m.memory_id,
        "principal": forgotten.principal,
        "subject": m.subject,
        "reason": forgotten.reason,
        "position": _position(position),
        "decided_at": now,
    }


def principal_state(p: PrincipalRecord, position: Position) -> dict[str, Any]:
    """``PrincipalState`` for the compacted principals topic: the registry record after the command at
    ``position`` (keys with their validity in UTC datetimes)."""
    return {
        "principal_id": p.principal_id, "kind": p.kind.value, "roles": sorted(p.roles),
        "attributes": dict(p.attributes),
        "keys": [{"key": {"key_id": k.key_id, "algorithm": "Ed25519", "public_key": k.public_key},
                  "valid_from": from_ms_or_none(k.valid_from_ms), "valid_to": from_ms_or_none(k.valid_to_ms),
                  "revoked_at": from_ms_or_none(k.revoked_at_ms)}
                 for k in p.keys],
        "position": _position(position),
    }
