"""Which ledger a namespace's projections are built from (``namespace_meta``), so that a replay
never mixes two ledgers in one namespace, and whether a namespace exists at all."""

from __future__ import annotations

import psycopg

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
        (held,) = conn.execute("SELECT value FROM namespace_meta WHERE key = 'ledger'").fetchone() or (ledger,)
        conn.commit()
    if held != ledger:
        raise ValidationError("into", f"{target.topic_prefix!r} holds projections of {held!r}, not {ledger!r}")
