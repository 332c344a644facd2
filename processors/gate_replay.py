"""What the ledger recorded of each gate decision, in the form the gate processor folds on replay.

For the command at a ledger position: its ``GateDecided`` (bytes as published, and decoded into a
:class:`~memwarden.commands.gate.recorded.RecordedDecision`) and the events it produced
(``MemoryRecorded``, ``GovernanceChanged``, a ``MemoryForgotten`` per memory forgotten). The replayed gate
stores exactly these bytes as the decision's published records, so a replayed namespace answers redeliveries and
decision lookups byte for byte as the live one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memwarden.commands import events
from memwarden.commands.gate import Decision, Outcome, Position, PrincipalUpsert, Reason
from memwarden.commands.gate.recorded import RecordedDecision
from memwarden.schemas.codec import AvroCodec
from memwarden.stores.decisions import record


@dataclass(frozen=True)
class RecordedOutcome:
    """The recorded decision of one command and the bytes published with it."""

    decision: RecordedDecision
    decided_key: bytes | None
    decided: bytes
    events: tuple[tuple[bytes | None, bytes], ...] = ()

    def records(self, codec: AvroCodec, decision: Decision, position: Position) -> list[dict[str, Any]]:
        """The records the live gate published for this decision: the recorded ``GateDecided`` and
        event bytes, the registry entries of its principal changes, a tombstone per shredded key."""
        out = [record("decisions", self.decided_key, self.decided)]
        out += [record("events", key, value) for key, value in self.events]
        out += [record("principals", e.record.principal_id.encode(),
                       codec.encode("PrincipalState", events.principal_state(e.record, position)))
                for e in decision.effects if isinstance(e, PrincipalUpsert)]
        out += [record("keys", key_id.encode(), None) for key_id in decision.shred]
        return out


def recorded_decision(decided: Mapping[str, Any], event: Mapping[str, Any] | None) -> RecordedDecision:
    """A ``GateDecided`` record (and the ``MemoryRecorded`` it produced, if any) as a recorded decision."""
    memory = event if event is not None and "closes" in event else None
    listed = tuple(decided.get("memory_ids") or ())
    return RecordedDecision(
        Outcome(decided["outcome"]),
        tuple(Reason(r["code"], r["message"], r.get("field")) for r in decided["reasons"]),
        decided["decided_at"], decided["policy_version"], decided["gate_version"],
        int(memory["version"]) if memory else 0, tuple(memory["closes"] or ()) if memory else (), listed)
