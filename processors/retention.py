"""Retention, wired (issue 14 part 3): a memory that reaches ``expires_at`` is forgotten
automatically, with a receipt, like any forget.

Reads already never return an expired memory (the read filter's retention bound); this makes the
expiry an erasure. Every ``retention_interval_s`` the gate worker counts the live memories past
``expires_at`` in its own state and, when there are any, appends one ``ForgetMatching`` with
``expired_before = now`` signed by the root admin to the commands topic: the expiry is decided on
the ledger like every other forget (legal holds keep it waiting the same way), so a replay
reproduces it, and the projectors' erasure receipts follow."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime

import psycopg

from memwarden.bootstrap import Container
from memwarden.commands.forget_commands import ForgetMatching, ForgetSelector
from memwarden.commands.ledger import Outbound
from memwarden.commands.model import Envelope, Source, SourceKind
from memwarden.epoch import to_ms, truncate_ms
from memwarden.keystore import local_admin_signer, signed_command
from memwarden.processors.resilience import close_quietly
from memwarden.stores import gate_state

log = logging.getLogger("memwarden.retention")
#: Reason every retention forget carries.
RETENTION_REASON = "retention: expires_at reached"


def retention_command(principal: str, now: datetime) -> ForgetMatching:
    """The ``ForgetMatching`` that forgets every memory expired by ``now`` (UTC, aware), by ``principal``."""
    at = truncate_ms(now)
    env = Envelope(command_id=str(uuid.uuid4()), principal=principal, subject=principal, scope="governance",
                   source=Source(kind=SourceKind.APPROVED_RULE, reference="retention"), observed_at=at,
                   issued_at=at)
    return ForgetMatching(envelope=env, selector=ForgetSelector(expired_before=at), reason=RETENTION_REASON)


class Retention:
    """The gate worker's retention sweep (see the module doc)."""

    def __init__(self, container: Container) -> None:
        self._c = container
        self._conn: psycopg.AsyncConnection | None = None
        self._warned = False

    async def sweep(self) -> Outbound | None:
        """The retention command to append now, or ``None`` (nothing expired, or no admin key here)."""
        now = datetime.now(UTC)
        if self._conn is None:
            self._conn = await self._c.pg()
        try:
            async with self._conn.cursor() as cur:
                expired = await gate_state.expired_memories(cur, to_ms(now))
            await self._conn.commit()
        except Exception:
            conn, self._conn = self._conn, None  # a lost connection: the next sweep opens a new one
            await close_quietly(conn)
            raise
        if not expired:
            return None
        signer = local_admin_signer(self._c.settings)
        if signer is None:
            if not self._warned:
                log.warning("retention: %d memories expired but the root admin's key is not here;"
                            " run `memwarden forget --expired` where it is", expired)
                self._warned = True
            return None
        command = retention_command(signer.principal_id, now)
        log.info("retention: forgetting %d expired memories (command %s)", expired, command.envelope.command_id)
        return Outbound("commands", command.envelope.subject.encode(), signed_command(self._c.codec, command, signer))


__all__ = ["RETENTION_REASON", "Retention", "retention_command"]
