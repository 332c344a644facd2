"""Which ledger a namespace's projections are built from (``namespace_meta``), so that a replay
never mixes two ledgers in one namespace, and whether a namespace exists at all."""

from __future__ import annotations

import psycopg
from psycopg import sql

from memwarden.errors import ValidationError
from memwarden.settings import Settings
from memwarden.stores.pg import connect


def exists(settings: Settings) -> bool:
    """Whether the namespace's Postgres schema exists (with its migrations applied)."""
    with psycopg.connect(settings.postgres_dsn) as conn:
        row = conn.execute("SELECT 1 FROM information_schema.tables WHERE table_schema = %s"
                           " AND table_name = 'schema_migrations'", (settings.pg_schema,)).fetchone()
    return row is not None


def ledger_of(settings: Settings) -> str | None:
    """The ledger (namespace prefix) the projections of ``settings`` were built from, if recorded."""
    with connect(settings) as conn:
        row = conn.execute("SELECT value FROM namespace_meta WHERE key = 'ledger'").fetchone()
    return row[0] if row else None


def claim(target: Settings, source: Settings) -> None:
    """Record that ``target`` holds projections of ``source``'s ledger; raises ``ValidationError``
    (field ``into``) when it already holds another ledger's, or when ``source`` does not exist."""
    if not exists(source):
        raise ValidationError("namespace", f"namespace {source.topic_prefix!r} does not exist")
    ledger = source.ledger_prefix or source.topic_prefix
    with connect(target) as conn:
        conn.execute("INSERT INTO namespace_meta (key, value) VALUES ('ledger', %s) ON CONFLICT DO NOTHING",
                     (ledger,))
        conn.execute("INSERT INTO namespace_meta (key, value) VALUES ('prefix', %s) ON CONFLICT DO NOTHING",
                     (target.topic_prefix,))
        (held,) = conn.execute("SELECT value FROM namespace_meta WHERE key = 'ledger'").fetchone() or (ledger,)
        (named,) = conn.execute("SELECT value FROM namespace_meta WHERE key = 'prefix'").fetchone() or (
            target.topic_prefix,)
        conn.commit()
    if named != target.topic_prefix:  # "UPPER" and "upper" name one schema: one namespace, one spelling
        raise ValidationError("into", f"{target.topic_prefix!r} names the database schema of namespace {named!r} "
                              "(names differing only in case or punctuation are one namespace); use that name")
    if held != ledger:
        raise ValidationError("into", f"{target.topic_prefix!r} holds projections of {held!r}, not {ledger!r}")


def swap_schemas(live: Settings, rebuilt: Settings, retired: Settings) -> None:
    """In one transaction: ``live``'s schema becomes ``retired``'s, ``rebuilt``'s becomes ``live``'s.
    Every open connection whose search path names the live schema sees the rebuilt tables from its
    next statement. Raises ``ValidationError`` (field ``rebuilt``) when ``rebuilt`` holds another
    ledger's projections, ``psycopg.OperationalError`` when the database fails (nothing changes)."""
    ledger = live.ledger_prefix or live.topic_prefix
    with psycopg.connect(live.postgres_dsn) as conn:
        held = conn.execute(sql.SQL("SELECT value FROM {}.namespace_meta WHERE key = 'ledger'").format(
            sql.Identifier(rebuilt.pg_schema))).fetchone()
        if held is None or held[0] != ledger:
            raise ValidationError("rebuilt", f"{rebuilt.topic_prefix!r} is not a rebuild of {ledger!r}")
        conn.execute(sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(sql.Identifier(live.pg_schema),
                                                                   sql.Identifier(retired.pg_schema)))
        conn.execute(sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(sql.Identifier(rebuilt.pg_schema),
                                                                   sql.Identifier(live.pg_schema)))
        conn.commit()
