"""Governance commands from the client: principals and keys, policy, protected core facts, quarantine
review, grants and their revocation, the gateways' bearer tokens. Each builds a signed command with
the governance envelope (scope ``governance``, source ``APPROVED_RULE``) and publishes it to the
ledger; the gate decides it (:mod:`memwarden.commands.gate.governance`, :mod:`~memwarden.commands.gate.tokens`)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import pydantic

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
from memwarden.producers.building import Receipt, build, governance_envelope, names


class GovernanceCalls:
    """The governance half of :class:`~memwarden.producers.client.MemwardenClient` (a mixin: it
    publishes through the client's ``_publish``)."""

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
                           public_key: bytes, key_id: str, sign: bool = True) -> Receipt:
        """``RegisterPrincipal`` issued by admin ``by``: kind, roles, attributes and first key."""
        return self._governance(RegisterPrincipal, by, principal_id, sign, {
            "principal_id": principal_id, "principal_kind": kind, "roles": names(roles, "roles"),
            "attributes": dict(attributes or {}), "key": PublicKey(key_id=key_id, public_key=public_key)})

    def rotate_key(self, principal_id: str, *, by: str, public_key: bytes, key_id: str, sign: bool = True) -> Receipt:
        """``RotateKey``: a new key for ``principal_id`` (by itself or an admin)."""
        return self._governance(RotateKey, by, principal_id, sign, {
            "principal_id": principal_id, "key": PublicKey(key_id=key_id, public_key=public_key)})

    def revoke_key(self, principal_id: str, key_id: str, *, by: str, reason: str = "", sign: bool = True) -> Receipt:
        """``RevokeKey``: ``key_id`` verifies nothing decided from now on."""
        return self._governance(RevokeKey, by, principal_id, sign, {
            "principal_id": principal_id, "key_id": key_id, "reason": reason})

    def publish_policy(self, document: str, *, by: str, sign: bool = True) -> Receipt:
        """``PublishPolicy`` of a JSON write-policy document (policy id and version read from it)."""
        try:
            head = json.loads(document)
            policy_id, version = str(head["policy_id"]), int(head["version"])
        except (ValueError, KeyError, TypeError):
            policy_id, version = "unparsed", 1  # the gate rejects it with the parse error, on the ledger
        return self._governance(PublishPolicy, by, "policy", sign, {
            "policy_id": policy_id, "version": version, "document": document})

    def protect_fact(self, subject: str, entity: str, attribute: str, *, by: str, protected: bool = True,
                     sign: bool = True) -> Receipt:
        """``ProtectFact``: mark ``subject``'s (entity, attribute) as protected core fact."""
        return self._governance(ProtectFact, by, subject, sign, {
            "entity": entity, "attribute": attribute, "protected": protected})

    def approve_quarantined(self, command_id: str, *, by: str, subject: str, note: str = "",
                            sign: bool = True) -> Receipt:
        """``ApproveQuarantined`` by reviewer ``by`` (keyed by the memory's ``subject``)."""
        return self._governance(ApproveQuarantined, by, subject, sign, {
            "quarantined_command_id": command_id, "note": note})

    def reject_quarantined(self, command_id: str, *, by: str, subject: str, note: str = "",
                           sign: bool = True) -> Receipt:
        """``RejectQuarantined`` by reviewer ``by``: the quarantined content's key is shredded."""
        return self._governance(RejectQuarantined, by, subject, sign, {
            "quarantined_command_id": command_id, "note": note})

    def grant_access(self, grantee: str, *, by: str, rights: Sequence[str], scopes: Sequence[str],
                     subjects: Sequence[str] = (), purposes: Sequence[str] = (), store_kinds: Sequence[str] = (),
                     sensitivity_ceiling: Sensitivity | str = Sensitivity.INTERNAL,
                     valid_from: datetime | None = None, valid_to: datetime | None = None,
                     relationship: str | None = None, grant_id: str | None = None, sign: bool = True,
                     **envelope: Any) -> Receipt:
        """``GrantAccess``: ``grantee`` (principal id or ``role:<name>``) gets ``rights`` on records in
        ``scopes`` (and ``subjects``), for ``purposes`` and ``store_kinds``, up to the ceiling."""
        gid = grant_id or str(uuid.uuid4())
        receipt = self._governance(GrantAccess, by, grantee, sign, {
            "grant_id": gid, "grantee": grantee, "rights": names(rights, "rights"),
            "scopes": names(scopes, "scopes"), "subjects": names(subjects, "subjects"),
            "purposes": names(purposes, "purposes"), "store_kinds": names(store_kinds, "store_kinds"),
            "sensitivity_ceiling": sensitivity_ceiling, "valid_from": valid_from, "valid_to": valid_to,
            "relationship": relationship}, **envelope)
        return Receipt(receipt.command_id, gid, receipt.topic, receipt.partition, receipt.offset)

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
        return Receipt(receipt.command_id, tid, receipt.topic, receipt.partition, receipt.offset)

    def revoke_token(self, token_id: str, *, by: str, principal: str, reason: str = "", sign: bool = True) -> Receipt:
        """``RevokeToken`` by ``by`` (an admin or the token's principal), keyed by the token's
        ``principal`` (the partition of its ``IssueToken``)."""
        receipt = self._governance(RevokeToken, by, principal, sign, {"token_id": token_id, "reason": reason})
        return Receipt(receipt.command_id, token_id, receipt.topic, receipt.partition, receipt.offset)

    def revoke_access(self, grant_id: str, *, by: str, grantee: str, reason: str = "", sign: bool = True,
                      **envelope: Any) -> Receipt:
        """``RevokeAccess``: the grant stops applying from the next read and write on. ``envelope``:
        extra envelope arguments (e.g. ``attributes``)."""
        return self._governance(RevokeAccess, by, grantee, sign, {"grant_id": grant_id, "reason": reason}, **envelope)
