"""Postgres rows of the gateways' bearer tokens (``gate_tokens``, issue 10): written by the gate from
its decisions (:func:`store_token`, in the decision's transaction), loaded for the commands of a batch
(:func:`load_tokens`), and read by the REST API to authenticate a request (:func:`token_by_hash`: the
public read of the gate's token state, by the token's SHA-256; the API compares it with
:func:`memwarden.commands.tokens.token_problem`). Only hashes are stored, never a token."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from memwarden.commands.tokens import TokenState

_COLUMNS = "token_id, principal, token_sha256, issued_by, issued_at_ms, expires_ms, revoked_at_ms"


def _token(r: Sequence[Any]) -> TokenState:
    return TokenState(r[0], r[1], bytes(r[2]), r[3], int(r[4]), r[5], r[6])


async def load_tokens(cur: psycopg.AsyncCursor, token_ids: Sequence[str],
                      hashes: Sequence[bytes]) -> dict[str, TokenState]:
    """The tokens named by id in ``token_ids`` or by SHA-256 in ``hashes``, by token id."""
    if not token_ids and not hashes:
        return {}
    await cur.execute(f"SELECT {_COLUMNS} FROM gate_tokens WHERE token_id = ANY(%s) OR token_sha256 = ANY(%s)",  # noqa: S608
                      (list(token_ids), list(hashes)))
    return {r[0]: _token(r) for r in await cur.fetchall()}


async def store_token(cur: psycopg.AsyncCursor, token: TokenState) -> None:
    """Insert a token, or record its revocation (the other columns never change)."""
    await cur.execute(f"INSERT INTO gate_tokens ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT"  # noqa: S608
                      " (token_id) DO UPDATE SET revoked_at_ms = EXCLUDED.revoked_at_ms",
                      (token.token_id, token.principal, token.token_sha256, token.issued_by, token.issued_at_ms,
                       token.expires_ms, token.revoked_at_ms))


def token_by_hash(conn: psycopg.Connection, token_sha256: bytes) -> TokenState | None:
    """The token whose SHA-256 is ``token_sha256``, or ``None``; one short transaction (a revocation
    holds from the next request on)."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM gate_tokens WHERE token_sha256 = %s",  # noqa: S608
                       (token_sha256,)).fetchone()
    conn.commit()
    return _token(row) if row else None


def token_by_id(conn: psycopg.Connection, token_id: str) -> TokenState | None:
    """The token ``token_id``, or ``None``."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM gate_tokens WHERE token_id = %s", (token_id,)).fetchone()  # noqa: S608
    conn.commit()
    return _token(row) if row else None


def tokens_of(conn: psycopg.Connection, principal: str | None = None) -> list[TokenState]:
    """Every token (of ``principal`` when given), by token id: ids, principals, times; never a token."""
    if principal is None:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM gate_tokens ORDER BY token_id").fetchall()  # noqa: S608
    else:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM gate_tokens WHERE principal = %s ORDER BY token_id",  # noqa: S608
                            (principal,)).fetchall()
    conn.commit()
    return [_token(r) for r in rows]
