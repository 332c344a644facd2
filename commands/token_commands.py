"""Token commands (issue 10, the REST API's bearer tokens): ``IssueToken`` and ``RevokeToken``.
Frozen pydantic models with the Avro shapes of ``schemas/avro/memwarden.v1.{IssueToken,RevokeToken}.avsc``;
the rules are in :mod:`memwarden.commands.gate.tokens`, the token format in :mod:`memwarden.commands.tokens`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memwarden.commands.envelope import Envelope, FrozenModel, Name, Text, UtcTime


class IssueToken(FrozenModel):
    """Command (admin): token ``token_id`` acts for ``principal_id`` until ``expires_at`` (``None``:
    until revoked). ``token_sha256`` is the SHA-256 of the token (32 bytes); the token itself never
    travels on the ledger."""

    kind: Literal["IssueToken"] = "IssueToken"
    envelope: Envelope
    token_id: Name
    principal_id: Name
    token_sha256: bytes = Field(min_length=32, max_length=32)
    expires_at: UtcTime | None = None
    note: Text = ""


class RevokeToken(FrozenModel):
    """Command (admin, or the token's principal): token ``token_id`` authenticates nothing from now on."""

    kind: Literal["RevokeToken"] = "RevokeToken"
    envelope: Envelope
    token_id: Name
    reason: Text = ""


TokenCommand = IssueToken | RevokeToken

__all__ = ["IssueToken", "RevokeToken", "TokenCommand"]
