"""PostgreSQL plumbing: connections into the namespace schema and the project's migrations."""

from __future__ import annotations

from importlib import resources

import psycopg
from psycopg import sql

from memwarden.settings import Settings

#: Errors of a lost or refused database connection (a caller reconnects, retries, or answers 503).
#: Typed as the fixed pair it is: mypy accepts ``except (*DB_ERRORS, OtherError)`` only from a fixed-length tuple.
DB_ERRORS: tuple[type[psycopg.OperationalError], type[psycopg.InterfaceError]] = (
    psycopg.OperationalError, psycopg.InterfaceError)


def _migrations() -> list[tuple[int, str]]:
    folder = resources.files("memwarden.stores") / "migrations"
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            found.append((int(entry.name.split("_", 1)[0]), entry.read_text()))
    return sorted(found)


def migrate(settings: Settings) -> int:
    """Create the namespace schema and apply pending migrations; returns how many were applied.

    Idempotent and safe to run concurrently (an advisory lock serialises runners).
    Raises ``psycopg.OperationalError`` when the database does not answer.
    """
    applied = 0
    with psycopg.connect(settings.postgres_dsn, autocommit=False) as conn:
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (settings.pg_schema,))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(settings.pg_schema)))
        conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(settings.pg_schema)))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        for version, text in _migrations():
            if version in done:
                continue
            conn.execute(text)  # type: ignore[arg-type]
            conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
            applied += 1
        conn.commit()
    return applied


def drop_namespace(settings: Settings) -> None:
    """Drop the namespace schema and everything in it (tests and evaluations clean up with it)."""
    with psycopg.connect(settings.postgres_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(settings.pg_schema)))


def connect(settings: Settings) -> psycopg.Connection:
    """A synchronous connection whose search_path is the namespace schema."""
    conn = psycopg.connect(settings.postgres_dsn)
    conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(settings.pg_schema)))
    conn.commit()
    return conn


async def connect_async(settings: Settings, *, autocommit: bool = False) -> psycopg.AsyncConnection:
    """An asyncio connection whose search_path is the namespace schema. ``autocommit``: every
    statement is its own transaction, with no ``BEGIN``/``COMMIT`` round trips (the read path's
    single-statement reads)."""
    conn = await psycopg.AsyncConnection.connect(settings.postgres_dsn, autocommit=autocommit)
    await conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(settings.pg_schema)))
    await end_read(conn)
    return conn


async def end_read(conn: psycopg.AsyncConnection) -> None:
    """End the transaction a read opened, if any; none is open on an autocommit connection, and then
    this costs no round trip."""
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        await conn.commit()
