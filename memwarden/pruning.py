"""Budgeted pruning, run (SSGM §4.3; issue 14 part 3): find the memories whose freshness stayed below
``theta_fresh`` past the grace period (:func:`memwarden.commands.pruning.prunable`) and apply the
policy of their store kind: ``forget`` through the gate with one signed ``ForgetMatching`` of their
ids (receipts follow like every forget; legal holds keep held ones waiting), ``archive`` (listed,
left to the read filter), ``keep``. A client of the ledger: it reads the namespace's profile rows
and publishes a command; it never writes a projection."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from memwarden.commands.model import StoreKind
from memwarden.commands.pruning import DEFAULT_PRUNING, PruneAction, action_of, prunable
from memwarden.epoch import to_ms
from memwarden.settings import Settings

#: Reason every pruning forget carries.
PRUNE_REASON = "pruned: freshness below theta_fresh past the grace period"


def plan(candidates: Sequence[tuple[str, str, str, int, int | None]], now_ms: int, theta: float, grace_s: float,
         kinds: Sequence[str] = (), policy: Mapping[StoreKind, PruneAction] = DEFAULT_PRUNING
         ) -> dict[str, list[str]]:
    """Memory ids by action (``forget``, ``archive``) among ``candidates`` (memory id, subject, store
    kind, valid_from ms, last use ms) that are prunable at ``now_ms``; ``kinds`` limits the store
    kinds considered (empty = all). Pure."""
    out: dict[str, list[str]] = {"forget": [], "archive": []}
    for memory_id, _subject, kind, valid_from_ms, last_used_ms in candidates:
        if kinds and kind not in kinds:
            continue
        action = action_of(kind, policy)
        if action != "keep" and prunable(kind, last_used_ms, valid_from_ms, now_ms, theta, grace_s):
            out[action].append(memory_id)
    return out


def prune(settings: Settings, theta: float, grace_s: float, kinds: Sequence[str] = (), dry_run: bool = False,
          now: datetime | None = None) -> dict[str, Any]:
    """Plan and (unless ``dry_run``) forget; returns ``{"forget": ids, "archive": ids, "decision":
    the gate's decision or None, "command_id"}``. Raises ``ValidationError`` for a bad ``theta``,
    ``grace_s`` or store kind, ``StackUnavailable`` when the worker does not decide."""
    from memwarden.keystore import admin_signer
    from memwarden.producers.client import MemwardenClient
    from memwarden.stores.pg import connect
    from memwarden.stores.profile_rows import pruning_candidates

    for k in kinds:
        StoreKind(k)
    with connect(settings) as conn:
        candidates = pruning_candidates(conn)
    found = plan(candidates, to_ms(now or datetime.now(UTC)), theta, grace_s, kinds)
    out: dict[str, Any] = {**found, "decision": None, "command_id": None, "dry_run": dry_run}
    if dry_run or not found["forget"]:
        return out
    admin = admin_signer(settings)
    with MemwardenClient(settings, signers=[admin]) as client:
        receipt = client.forget_matching(principal=admin.principal_id, memory_ids=found["forget"], cascade=False,
                                         reason=PRUNE_REASON, wait=False)
        out["command_id"] = receipt.command_id
        out["decision"] = client.decided([receipt.command_id], timeout_s=120)[receipt.command_id]
    return out


__all__ = ["PRUNE_REASON", "plan", "prune"]
