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


def record(text: str = "prefers tea", memory_id: str | None = None, **env: Any) -> RecordMemory:
    return RecordMemory(envelope=envelope(**env), memory_id=memory_id or str(uuid.uuid4()), content=content(text)[0])


def supersede(target: str, text: str = "prefers coffee", **env: Any) -> SupersedeMemory:
    return SupersedeMemory(envelope=envelope(supersedes=target, **env), content=content(text)[0])


def forget(target: str, **env: Any) -> ForgetMemory:
    return ForgetMemory(envelope=envelope(**env), memory_id=target, reason="user asked")
