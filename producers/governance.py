"""Governance commands from the client: principals and keys, policy, protected core facts, quarantine
review, grants and their revocation, the gateways' bearer tokens. Each builds a signed command with
the governance envelope (scope ``governance``, source ``APPROVED_RULE``) and publishes it to the
ledger; the gate decides it (:mod:`memwarden.commands.gate.governance`, :mod:`~memwarden.commands.gate.tokens`).

A refusal never looks like success: the calls that change governance (and the client's forgets and
``supersede``) wait for the gate's decision by default (:meth:`Settling._settled`) and raise
:class:`~memwarden.errors.Refused` with the reason codes when it is ``REJECTED``; accepted, they
return a :class:`DecidedReceipt` carrying the decision. ``wait=False`` returns at once (bulk work that
reads the decisions itself with ``MemwardenClient.decided``); the receipt's ``decision`` is then
``None``. Tokens (``issue_token``/``revoke_token``) keep not waiting."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import pydantic

from memwarden.commands.gateway_status import taken
from memwarden.commands.model import (
    ApproveQuarantined,
    GrantAccess,
    IssueToken,
    PrincipalKind,
    ProtectFact,
    PublicKey,
    PublishPolicy,
    RegisterPrincipal,
    RejectQuarantined,
    RevokeAccess,
    RevokeKey,
    RevokeToken,
    RotateKey,
    Sensitivity,
)
from memwarden.errors import Refused
from memwarden.producers.building import Receipt, build, governance_envelope, names

#: Outcomes a waiting call raises ``Refused`` for (a supersede adds ``QUARANTINED``).
REFUSED = frozenset({"REJECTED"})
#: What a supersede raises for: held for review is not the new version the caller asked for.
REFUSED_WRITE = frozenset({"REJECTED", "QUARANTINED"})


@dataclass(frozen=True)
class DecidedReceipt(Receipt):
    """A :class:`~memwarden.producers.building.Receipt` with the gate's ``decision`` (as
    ``MemwardenClient.decided`` gives it: ``outcome``, ``reasons``, ...) when the call waited for it;
    ``None`` when it did not (``wait=False``)."""

    decision: Mapping[str, Any] | None = None

    @property
    def outcome(self) -> str | None:
        """The gate's outcome (``ACCEPTED``, ``DEFERRED``, ...), ``None`` when not waited for."""
        return None if self.decision is None else str(self.decision["outcome"])

    @property
    def codes(self) -> tuple[str, ...]:
        """The decision's reason codes, in order (none when not waited for)."""
        return tuple(r["code"] for r in (self.decision or {}).get("reasons") or ())


class Settling:
    """Waiting for the gate's decision of a published command (a mixin of the client, which
    provides ``decided``)."""

    #: Seconds a waiting call waits for the decision before ``StackUnavailable``.
    decision_timeout_s: float = 60.0

    def decided(self, command_ids: Sequence[str], timeout_s: float = 60.0) -> dict[str, dict[str, Any]]:
        raise NotImplementedError

    def _settled(self, receipt: Receipt, wait: bool, refused: frozenset[str] = REFUSED) -> DecidedReceipt:
        """``receipt`` with its decision when ``wait`` (raising ``Refused`` for an outcome in
        ``refused``; ``COMMAND_ID_TAKEN`` when the id it reused is another principal's command's), else at
        once without. Raises ``StackUnavailable`` when no decision comes in
        :attr:`decision_timeout_s` seconds."""
        plain = DecidedReceipt(receipt.command_id, receipt.memory_id, receipt.topic, receipt.partition,
                               receipt.offset, receipt.principal)
        if not wait:
            return plain
        decision = self.decided([receipt.command_id], self.decision_timeout_s)[receipt.command_id]
        if receipt.principal:  # a reused command id: the decision stored under it is not the caller's
            decision = taken(decision, receipt.principal) or decision
        if decision["outcome"] in refused:
            raise Refused.of(decision, receipt.command_id)
        return replace(plain, decision=decision)


class GovernanceCalls(Settling):
    """The governance half of :class:`~memwarden.producers.client.MemwardenClient` (a mixin: it
    publishes through the client's ``_publish``). Every call but the tokens' waits for the decision
    unless ``wait=False`` (see the module docstring)."""

    def _publish(self, commands: Sequence[tuple[Any, str, tuple[str, bytes] | None]],
                 sign: bool = True) -> list[Receipt]:
        raise NotImplementedError

    def _governance(self, model: type[pydantic.BaseModel], principal: str, subject: str, sign: bool,
                    fields: dict[str, Any], **envelope: Any) -> Receipt:
        env = governance_envelope(principal, subject, envelope)
        command = build(model, {"envelope": env, **fields})
        return self._publish([(command, "", None)], sign)[0]

    def register_principal(self, principal_id: str, *, by: str, kind: PrincipalKind | str = PrincipalKind.USER,
                           roles: Sequence[str] = (), attributes: Mapping[str, str] | None = None,
                           public_key: bytes, key_id: str, sign: bool = True, wait: bool = True) -> DecidedReceipt:
        """``RegisterPrincipal`` issued by admin ``by``: kind, roles, attributes and first key."""
        return self._settled(self._governance(RegisterPrincipal, by, principal_id, sign, {
            "principal_id": principal_id, "principal_kind": kind, "roles": names(roles, "roles"),
            "attributes": dict(attributes or {}), "key": PublicKey(key_id=key_id, public_key=public_key)}), wait)

    def rotate_key(self, principal_id: str, *, by: str, public_key: bytes, key_id: str, sign: bool = True,
                   wait: bool = True) -> DecidedReceipt:
        """``RotateKey``: a new key for ``principal_id`` (by itself or an admin)."""
        return self._settled(self._governance(RotateKey, by, principal_id, sign, {
            "principal_id": principal_id, "key": PublicKey(key_id=key_id, public_key=public_key)}), wait)

    def revoke_key(self, principal_id: str, key_id: str, *, by: str, reason: str = "", sign: bool = True,
                   wait: bool = True) -> DecidedReceipt:
        """``RevokeKey``: ``key_id`` verifies nothing decided from now on."""
        return self._settled(self._governance(RevokeKey, by, principal_id, sign, {
            "principal_id": principal_id, "key_id": key_id, "reason": reason}), wait)

    def publish_policy(self, document: str, *, by: str, sign: bool = True, wait: bool = True) -> DecidedReceipt:
        """``PublishPolicy`` of a JSON write-policy document (policy id and version read from it)."""
        try:
            head = json.loads(document)
            policy_id, version = str(head["policy_id"]), int(head["version"])
        except (ValueError, KeyError, TypeError):
            policy_id, version = "unparsed", 1  # the gate rejects it with the parse error, on the ledger
        return self._settled(self._governance(PublishPolicy, by, "policy", sign, {
            "policy_id": policy_id, "version": version, "document": document}), wait)

    def protect_fact(self, subject: str, entity: str, attribute: str, *, by: str, protected: bool = True,
                     sign: bool = True, wait: bool = True) -> DecidedReceipt:
        """``ProtectFact``: mark ``subject``'s (entity, attribute) as protected core fact."""
        return self._settled(self._governance(ProtectFact, by, subject, sign, {
            "entity": entity, "attribute": attribute, "protected": protected}), wait)

    def approve_quarantined(self, command_id: str, *, by: str, subject: str, note: str = "",
                            sign: bool = True, wait: bool = True) -> DecidedReceipt:
        """``ApproveQuarantined`` by reviewer ``by`` (keyed by the memory's ``subject``)."""
        return self._settled(self._governance(ApproveQuarantined, by, subject, sign, {
            "quarantined_command_id": command_id, "note": note}), wait)

    def reject_quarantined(self, command_id: str, *, by: str, subject: str, note: str = "",
                           sign: bool = True, wait: bool = True) -> DecidedReceipt:
        """``RejectQuarantined`` by reviewer ``by``: the quarantined content's key is shredded."""
        return self._settled(self._governance(RejectQuarantined, by, subject, sign, {
            "quarantined_command_id": command_id, "note": note}), wait)

    def grant_access(self, grantee: str, *, by: str, rights: Sequence[str], scopes: Sequence[str],
                     subjects: Sequence[str] = (), purposes: Sequence[str] = (), store_kinds: Sequence[str] = (),
                     sensitivity_ceiling: Sensitivity | str = Sensitivity.INTERNAL,
                     valid_from: datetime | None = None, valid_to: datetime | None = None,
                     relationship: str | None = None, grant_id: str | None = None, sign: bool = True,
                     wait: bool = True, **envelope: Any) -> DecidedReceipt:
        """``GrantAccess``: ``grantee`` (principal id or ``role:<name>``) gets ``rights`` on records in
        ``scopes`` (and ``subjects``), for ``purposes`` and ``store_kinds``, up to the ceiling. Naming no
        ``subjects``, a non-admin grants on its own memories, an admin on any subject's (the gate's
        rule, :func:`memwarden.commands.gate.governance.grant_subjects`). The receipt's ``memory_id``
        is the grant id."""
        gid = grant_id or str(uuid.uuid4())
        receipt = self._governance(GrantAccess, by, grantee, sign, {
            "grant_id": gid, "grantee": grantee, "rights": names(rights, "rights"),
            "scopes": names(scopes, "scopes"), "subjects": names(subjects, "subjects"),
            "purposes": names(purposes, "purposes"), "store_kinds": names(store_kinds, "store_kinds"),
            "sensitivity_ceiling": sensitivity_ceiling, "valid_from": valid_from, "valid_to": valid_to,
            "relationship": relationship}, **envelope)
        return self._settled(replace(receipt, memory_id=gid), wait)

    def issue_token(self, principal_id: str, *, by: str, token_sha256: bytes, token_id: str | None = None,
                    expires_at: datetime | None = None, note: str = "", sign: bool = True) -> Receipt:
        """``IssueToken`` by admin ``by``: the token whose SHA-256 is ``token_sha256`` acts for
        ``principal_id`` until ``expires_at`` (the token itself never leaves the caller; see
        :mod:`memwarden.commands.tokens`). Keyed by ``principal_id``. The receipt's ``memory_id`` is the
        token id (``tok_`` and 16 hex digits when not given)."""
        tid = token_id or f"tok_{uuid.uuid4().hex[:16]}"
        receipt = self._governance(IssueToken, by, principal_id, sign, {
            "token_id": tid, "principal_id": principal_id, "token_sha256": token_sha256, "expires_at": expires_at,
            "note": note})
        return replace(receipt, memory_id=tid)

    def revoke_token(self, token_id: str, *, by: str, principal: str, reason: str = "", sign: bool = True) -> Receipt:
        """``RevokeToken`` by ``by`` (an admin or the token's principal), keyed by the token's
        ``principal`` (the partition of its ``IssueToken``)."""
        receipt = self._governance(RevokeToken, by, principal, sign, {"token_id": token_id, "reason": reason})
        return replace(receipt, memory_id=token_id)

    def revoke_access(self, grant_id: str, *, by: str, grantee: str, reason: str = "", sign: bool = True,
                      wait: bool = True, **envelope: Any) -> DecidedReceipt:
        """``RevokeAccess``: the grant stops applying from the next read and write on. ``envelope``:
        extra envelope arguments (e.g. ``attributes``)."""
        return self._settled(self._governance(RevokeAccess, by, grantee, sign, {"grant_id": grant_id,
                                                                                "reason": reason}, **envelope), wait)
