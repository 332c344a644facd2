"""The principal registry as gate state, and signature verification (issue 3 part 1).

Every command carries σ(μ) (SSGM Principle 2): an Ed25519 signature over its canonical bytes by a
key of ``envelope.principal``. The gate verifies it against the key that was valid when the command
was issued (``envelope.issued_at``): a rotated key still verifies commands issued before the
rotation; a revoked key verifies nothing decided after the revocation (compromise semantics), and
an unknown principal or key never verifies. Pure: records in, a reason or ``None`` out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from memwarden.commands.model import Command, PrincipalKind
from memwarden.commands.signing import ALGORITHM, verify
from memwarden.epoch import to_ms

ADMIN_ROLE = "admin"
REVIEWER_ROLE = "reviewer"
APPROVER_ROLE = "approver"


@dataclass(frozen=True)
class KeyRecord:
    """One signing key: raw public key, validity ``[valid_from_ms, valid_to_ms)`` (UTC ms; ``None``
    = open) and the revocation time, if revoked."""

    key_id: str
    public_key: bytes
    valid_from_ms: int
    valid_to_ms: int | None = None
    revoked_at_ms: int | None = None


@dataclass(frozen=True)
class PrincipalRecord:
    """A registered principal: kind, roles, attributes and every key it ever had."""

    principal_id: str
    kind: PrincipalKind
    roles: frozenset[str] = frozenset()
    attributes: Mapping[str, str] = field(default_factory=dict)
    keys: tuple[KeyRecord, ...] = ()

    def key(self, key_id: str) -> KeyRecord | None:
        """The key ``key_id`` of this principal, or ``None``."""
        return next((k for k in self.keys if k.key_id == key_id), None)

    def has_role(self, *roles: str) -> bool:
        """Whether the principal holds any of ``roles`` (REVIEWER kind implies the reviewer role)."""
        held = self.roles | ({REVIEWER_ROLE} if self.kind is PrincipalKind.REVIEWER else frozenset())
        return any(r in held for r in roles)

    def with_key(self, key: KeyRecord, rotated_at_ms: int) -> PrincipalRecord:
        """A copy with ``key`` added; every open key closes at ``rotated_at_ms``."""
        closed = tuple(k if k.valid_to_ms is not None else replace(k, valid_to_ms=rotated_at_ms) for k in self.keys)
        return replace(self, keys=(*closed, key))

    def with_revoked(self, key_id: str, at_ms: int) -> PrincipalRecord:
        """A copy with ``key_id`` revoked at ``at_ms``."""
        return replace(self, keys=tuple(replace(k, revoked_at_ms=at_ms) if k.key_id == key_id else k
                                        for k in self.keys))


@dataclass(frozen=True)
class SignatureProblem:
    """Why a signature does not verify: reason ``code`` and human ``message``."""

    code: str
    message: str


def check_signature(command: Command, signed_bytes: bytes | None,
                    principals: Mapping[str, PrincipalRecord]) -> SignatureProblem | None:
    """Verify σ(μ) of ``command`` (SSGM Principle 2). ``signed_bytes`` are the canonical unsigned bytes
    (``None`` when they could not be derived). Returns ``None`` when it verifies, else the problem:
    ``UNSIGNED``, ``UNKNOWN_PRINCIPAL``, ``UNKNOWN_KEY``, ``UNSUPPORTED_ALGORITHM``, ``KEY_REVOKED``,
    ``KEY_NOT_VALID_AT_ISSUE`` or ``BAD_SIGNATURE``."""
    sig = command.envelope.signature
    if sig is None or signed_bytes is None:
        return SignatureProblem("UNSIGNED", "the command carries no signature")
    principal = principals.get(command.envelope.principal)
    if principal is None:
        return SignatureProblem("UNKNOWN_PRINCIPAL", f"principal {command.envelope.principal!r} is not registered")
    if sig.algorithm != ALGORITHM:
        return SignatureProblem("UNSUPPORTED_ALGORITHM", f"algorithm {sig.algorithm!r} is not {ALGORITHM}")
    key = principal.key(sig.key_id)
    if key is None:
        return SignatureProblem("UNKNOWN_KEY", f"key {sig.key_id!r} is not a key of {principal.principal_id}")
    if key.revoked_at_ms is not None:
        return SignatureProblem("KEY_REVOKED", f"key {sig.key_id!r} was revoked")
    issued = to_ms(command.envelope.issued_at)
    if issued < key.valid_from_ms or (key.valid_to_ms is not None and issued >= key.valid_to_ms):
        return SignatureProblem("KEY_NOT_VALID_AT_ISSUE",
                                f"key {sig.key_id!r} was not valid when the command was issued")
    if not verify(key.public_key, sig.value, signed_bytes):
        return SignatureProblem("BAD_SIGNATURE", "the signature does not verify over the command bytes")
    return None


def kind_from_id(principal_id: str) -> PrincipalKind:
    """The kind an id's prefix names (``agent:x`` → AGENT); USER for any other prefix."""
    prefix = principal_id.split(":", 1)[0].upper()
    return PrincipalKind[prefix] if prefix in PrincipalKind.__members__ else PrincipalKind.USER


def all_key_ids(principals: Mapping[str, PrincipalRecord]) -> dict[str, str]:
    """``key_id -> principal_id`` over the registry (key ids are unique across principals)."""
    return {k.key_id: p.principal_id for p in principals.values() for k in p.keys}
