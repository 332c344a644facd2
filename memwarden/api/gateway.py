"""What every route of the REST API uses, built once per server: the namespace's client (signed
commands, reads through the worker), a small Postgres pool for the public reads (tokens, the gate's
view of a memory or grant, the registry), the principals' signers from the server's key store, and the
audit of every refused request.

Authentication (:meth:`Gateway.authenticate`), on every request: the ``Authorization: Bearer mwt_...``
header is parsed, the token's SHA-256 looked up in the gate's token state and checked
(:func:`memwarden.commands.tokens.token_problem`: unknown, revoked, expired → 401); the token's
principal must have a signing key in this server's key store (``<data>/keys/principals/``, never
created here; none → 409 ``NO_SIGNING_KEY``). Every refusal appends an ``AuthRefused`` record to the
audit topic (ids and the reason code, never the token) before it is answered.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NoReturn

import psycopg
from psycopg_pool import ConnectionPool

from memwarden.commands.gateway_checks import issuer_of
from memwarden.commands.gateway_status import auth_status
from memwarden.commands.principals import PrincipalRecord
from memwarden.commands.signing import Signer
from memwarden.commands.tokens import TokenState, bearer_token, token_hash, token_problem
from memwarden.crypto import Kek, load_kek
from memwarden.epoch import now_ms
from memwarden.errors import MemwardenError, StackUnavailable
from memwarden.keystore import key_path, load_or_create_signer, trust_anchor
from memwarden.producers.client import MemwardenClient
from memwarden.producers.sending import producer, send
from memwarden.schemas.codec import default_codec
from memwarden.settings import Settings
from memwarden.stores.gateway_reads import principal_of
from memwarden.stores.tokens import token_by_hash

from .errors import ApiError

log = logging.getLogger("memwarden.api")
#: ``envelope.attributes["gateway"]`` of every command this server signs.
GATEWAY = "rest"


@dataclass(frozen=True)
class Caller:
    """The authenticated principal of one request: its token, its registry record (as the gate sees
    it: roles), and the route it called (``METHOD`` and the route template)."""

    principal: str
    token_id: str
    record: PrincipalRecord
    method: str
    route: str

    @property
    def attributes(self) -> dict[str, str]:
        """Envelope attributes marking a command this gateway signed for the caller."""
        return {"gateway": GATEWAY, "gateway_token": self.token_id}


class Gateway:
    """The server's clients and checks (see the module doc). ``client`` defaults to a new
    :class:`MemwardenClient` of ``settings``; ``name`` is the gateway its ``AuthRefused`` records name
    (``rest``; the MCP server passes ``mcp``). Call :meth:`close` when done."""

    def __init__(self, settings: Settings, client: MemwardenClient | None = None, name: str = GATEWAY) -> None:
        self.settings = settings
        self.name = name  # the gateway its AuthRefused records name ("rest", or "mcp" for the MCP server)
        self.client = client or MemwardenClient(settings)
        self._pool = ConnectionPool(settings.postgres_dsn, min_size=1, max_size=8, open=True,
                                    kwargs={"options": f"-c search_path={settings.pg_schema}"})
        self._audit = producer(settings.bootstrap_servers)
        self._signers: dict[str, tuple[int, Signer]] = {}
        self._lock = threading.Lock()
        self.codec = default_codec()
        self._kek: Kek | None = None

    @property
    def kek(self) -> Kek:
        """The namespace's key-encryption key (loaded on first use; the forensic audit needs it)."""
        if self._kek is None:
            self._kek = load_kek(self.settings.kek, self.settings.data_dir, create=False)
        return self._kek

    def close(self) -> None:
        """Close the pool, the audit producer and the client."""
        self._pool.close()
        self._audit.flush(5)
        self.client.close()

    @contextmanager
    def db(self) -> Iterator[psycopg.Connection]:
        """A pooled connection in the namespace schema; ``StackUnavailable`` when Postgres is down."""
        try:
            with self._pool.connection(timeout=10) as conn:
                yield conn
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise StackUnavailable(f"PostgreSQL does not answer: {exc}") from exc
        except Exception as exc:  # the pool's own timeout
            if type(exc).__name__ == "PoolTimeout":
                raise StackUnavailable("PostgreSQL: no connection free within 10 s") from exc
            raise

    def record_of(self, principal: str) -> PrincipalRecord:
        """A principal as the gate sees it: its registry record (roles), the trust anchor for the root
        admin, a principal without roles when it is not registered."""
        if principal == self.settings.admin_principal:
            return trust_anchor(self.settings)
        with self.db() as conn:
            return issuer_of(principal, principal_of(conn, principal))

    # -- authentication -------------------------------------------------------------------------
    def authenticate(self, header: str | None, method: str, route: str) -> Caller:
        """The caller of a request with ``Authorization`` value ``header`` (see the module doc).
        Raises :class:`ApiError` (401, 409) after auditing the refusal."""
        token = bearer_token(header)
        if not isinstance(token, str):
            self.refuse(token.code, token.message, method, route)
        hashed = token_hash(token)
        with self.db() as conn:
            stored = token_by_hash(conn, hashed)
        problem = token_problem(hashed, stored, now_ms())
        if problem is not None:
            self.refuse(problem.code, problem.message, method, route, stored)
        assert stored is not None
        record = self.record_of(stored.principal)
        caller = Caller(stored.principal, stored.token_id, record, method, route)
        self.client.add_signer(self.signer(caller))
        return caller

    def signer(self, caller: Caller) -> Signer:
        """The caller's signer from the server's key store (re-read when its file changes). Raises
        :class:`ApiError` 409 ``NO_SIGNING_KEY`` (audited) when the file is absent or unreadable."""
        path = key_path(self.settings.data_dir, caller.principal)
        try:
            mtime = path.stat().st_mtime_ns
            with self._lock:
                cached = self._signers.get(caller.principal)
                if cached is None or cached[0] != mtime:
                    cached = (mtime, load_or_create_signer(path, caller.principal))
                    self._signers[caller.principal] = cached
            return cached[1]
        except (OSError, MemwardenError):
            self.refuse("NO_SIGNING_KEY", f"this server holds no signing key for {caller.principal}; register the"
                        " principal here (memwarden principal register) or send commands signed by its own key",
                        caller.method, caller.route, caller=caller)

    def same_principal(self, caller: Caller, claimed: str | None) -> None:
        """Refuse (403 ``PRINCIPAL_MISMATCH``, audited) a body naming another principal than the token's."""
        if claimed is not None and claimed != caller.principal:
            self.refuse("PRINCIPAL_MISMATCH", f"the token acts for {caller.principal}, the body names {claimed}",
                        caller.method, caller.route, caller=caller, claimed=claimed, field="principal")

    def refuse(self, code: str, message: str, method: str, route: str, token: TokenState | None = None, *,
               caller: Caller | None = None, claimed: str | None = None, field: str = "Authorization") -> NoReturn:
        """Audit an authentication or authorisation refusal (``AuthRefused``, ids only) and raise it."""
        token_id = caller.token_id if caller else token.token_id if token else None
        principal = caller.principal if caller else token.principal if token else None
        record = {"refusal_id": str(uuid.uuid4()), "gateway": self.name, "code": code, "method": method,
                  "route": route, "token_id": token_id, "principal": principal, "claimed_principal": claimed,
                  "refused_at": datetime.now(UTC)}
        try:
            send(self._audit, [(self.settings.topic("audit"), (principal or "anonymous").encode(),
                                self.codec.encode("AuthRefused", record))], [""], timeout_s=10.0)
        except StackUnavailable as exc:  # the refusal stands; the lost audit record is logged
            log.error("could not audit refusal %s (%s %s): %s", code, method, route, exc)
        status = auth_status(code)
        headers = {"WWW-Authenticate": f'Bearer error="invalid_token", error_description="{code}"'} \
            if status == 401 else None
        raise ApiError(status, code, message, field, headers=headers)


__all__ = ["GATEWAY", "Caller", "Gateway"]
