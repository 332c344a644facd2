"""Retractions: signed, audited commands that take admitted memories back (``memwarden regate``;
seed 004 "Persistent state separates compromise from consequence"). A client of the ledger like any
agent: it publishes commands and waits for the gate's decisions."""

from __future__ import annotations

from memwarden.processors.regate import Finding
from memwarden.settings import Settings


def retract(live: Settings, findings: list[Finding]) -> list[str]:
    """Publish one ``ForgetMemory`` per memory of ``findings``, signed by the root admin, and wait for
    the gate; returns the command ids. Raises ``StackUnavailable`` when the worker does not decide."""
    from memwarden.keystore import admin_signer
    from memwarden.producers.client import MemwardenClient

    admin = admin_signer(live)
    by_memory = {f.memory_id: f for f in findings}
    with MemwardenClient(live, signers=[admin]) as client:
        receipts = [client.forget(f.memory_id, principal=admin.principal_id, subject=f.subject,
                                  reason="regate: " + ",".join(f.reasons), wait=False) for f in by_memory.values()]
        client.decisions([r.command_id for r in receipts], timeout_s=120)
    return [r.command_id for r in receipts]
