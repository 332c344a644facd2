"""Builders of valid commands for tests (no I/O)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from memwarden.commands.model import EncryptedContent, Envelope, ForgetMemory, RecordMemory, Source, SupersedeMemory
from memwarden.crypto import encrypt_text, new_data_key

T0 = datetime(2025, 7, 25, 2, 0, tzinfo=UTC)


def envelope(principal: str = "user:alice", subject: str | None = None, **over: Any) -> Envelope:
    data: dict[str, Any] = {
        "command_id": str(uuid.uuid4()), "principal": principal, "subject": subject or principal,
        "source": Source(kind="USER_STATEMENT", reference="t1"), "scope": "account:default",
        "observed_at": T0, "issued_at": T0,
    }
    data.update(over)
    return Envelope(**data)


def content(text: str = "prefers tea") -> tuple[EncryptedContent, bytes]:
    key, key_id = new_data_key(), str(uuid.uuid4())
    nonce, ct = encrypt_text(text, key, key_id)
    return EncryptedContent(key_id=key_id, nonce=nonce, ciphertext=ct), key


def test_key(key_id: str) -> bytes:
    """A data key derived from its id (tests that write rows or events without a keys topic)."""
    import hashlib

    return hashlib.sha256(b"memwarden-test-key" + key_id.encode()).digest()


def sealed(text: str, key_id: str | None = None) -> dict[str, Any]:
    """The ``EncryptedContent`` record of ``text`` under :func:`test_key` of ``key_id`` (new when None)."""
    key_id = key_id or str(uuid.uuid4())
    nonce, ct = encrypt_text(text, test_key(key_id), key_id)
    return {"key_id": key_id, "nonce": nonce, "ciphertext": ct}


class TestKeys:
    """The read path's key lookup for rows written with :func:`sealed` (``forgotten``: shredded ids)."""

    __test__ = False

    def __init__(self) -> None:
        self.forgotten: set[str] = set()

    def lookup(self, key_ids: list[str], timeout_s: float = 30.0) -> dict[str, bytes | None]:
        return {k: None if k in self.forgotten else test_key(k) for k in key_ids}


def record(text: str = "prefers tea", memory_id: str | None = None, **env: Any) -> RecordMemory:
    return RecordMemory(envelope=envelope(**env), memory_id=memory_id or str(uuid.uuid4()), content=content(text)[0])


def supersede(target: str, text: str = "prefers coffee", **env: Any) -> SupersedeMemory:
    return SupersedeMemory(envelope=envelope(supersedes=target, **env), content=content(text)[0])


def forget(target: str, **env: Any) -> ForgetMemory:
    return ForgetMemory(envelope=envelope(**env), memory_id=target, reason="user asked")


# -- principals and signatures (issue 3) -----------------------------------------------------------
from memwarden.commands.model import PrincipalKind  # noqa: E402
from memwarden.commands.principals import ADMIN_ROLE, KeyRecord, PrincipalRecord, kind_from_id  # noqa: E402
from memwarden.commands.signing import Signer  # noqa: E402
from memwarden.schemas.codec import default_codec  # noqa: E402

SIGNERS: dict[str, Signer] = {}


def signer(principal: str) -> Signer:
    """A stable per-test-session signer for ``principal``."""
    if principal not in SIGNERS:
        SIGNERS[principal] = Signer.generate(principal)
    return SIGNERS[principal]


def principal(principal_id: str, kind: PrincipalKind | None = None, roles: tuple[str, ...] = (),
              valid_from_ms: int = 0) -> PrincipalRecord:
    """Registry record of ``principal_id`` with its factory signer's key."""
    s = signer(principal_id)
    if kind is None:
        kind = kind_from_id(principal_id)
    key = KeyRecord(s.key_id, s.public_key, valid_from_ms)
    return PrincipalRecord(principal_id, kind, frozenset(roles), {}, (key,))


def registry(*records: PrincipalRecord) -> dict[str, PrincipalRecord]:
    """A registry with an admin, alice, bob, a reviewer, an approver and agent:helper, plus ``records``."""
    base = [principal("service:admin", PrincipalKind.SERVICE, (ADMIN_ROLE,)), principal("user:alice"),
            principal("user:bob"), principal("user:rita", PrincipalKind.REVIEWER, ("reviewer",)),
            principal("user:ada", PrincipalKind.USER, ("approver",)), principal("agent:helper", PrincipalKind.AGENT)]
    return {p.principal_id: p for p in (*base, *records)}


def sign(command: Any, by: Signer | None = None) -> tuple[Any, bytes]:
    """``command`` with σ(μ) by its principal's factory signer (or ``by``), and the signed bytes."""
    from memwarden.commands.model import Signature, to_avro

    codec = default_codec()
    unsigned = codec.encode(command.kind, to_avro(command))
    s = by or signer(command.envelope.principal)
    env = command.envelope.model_copy(update={"signature": Signature(key_id=s.key_id, value=s.sign(unsigned))})
    signed = command.model_copy(update={"envelope": env})
    return signed, codec.unsigned_bytes(codec.encode(signed.kind, to_avro(signed)))
