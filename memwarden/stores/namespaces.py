"""Which ledger a namespace's projections are built from (``namespace_meta``), so that a replay
never mixes two ledgers in one namespace, and whether a namespace exists at all."""

from __future__ import annotations

import json
from collections.abc import Mapping

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


def _meta(conn: psycopg.Connection, key: str) -> str | None:
    """The value recorded under ``key`` in the namespace's ``namespace_meta``, if any."""
    row = conn.execute("SELECT value FROM namespace_meta WHERE key = %s", (key,)).fetchone()
    return str(row[0]) if row else None


def ledger_of(settings: Settings) -> str | None:
    """The ledger (namespace prefix) the projections of ``settings`` were built from, if recorded."""
    with connect(settings) as conn:
        return _meta(conn, "ledger")


def _cut_text(cut: Mapping[int, int] | None) -> str | None:
    return None if cut is None else json.dumps({str(p): o for p, o in sorted(cut.items())})


def cut_positions(cut: Mapping[int, int] | str) -> str:
    """A cut (exclusive ends per partition, as a mapping or its stored JSON text) as ``memwarden replay --until``
    takes it: ``commands:P:O,...``, ``O`` the last offset included, ``-1`` nothing from ``P`` (newcomer trial,
    twenty-fifth session: refusals printed the JSON)."""
    found = {int(p): int(o) for p, o in (json.loads(cut) if isinstance(cut, str) else cut).items()}
    return ",".join(f"commands:{p}:{o - 1}" for p, o in sorted(found.items()))


def _same_cut(target: Settings, held: str | None, cut: Mapping[int, int] | None) -> None:
    if held != _cut_text(cut):
        raise ValidationError("into", f"{target.topic_prefix!r} holds " + (
            f"the point-in-time state up to {cut_positions(held)}" if held else "a replay of the whole ledger") + (
            f", not up to {cut_positions(cut)}" if cut is not None else ", not the whole ledger") +
            ": replay into a new namespace")


def check_cut(target: Settings, cut: Mapping[int, int] | None) -> None:
    """Refuse (``ValidationError``, field ``into``) a replay into ``target`` up to ``cut`` (``None``: the whole
    ledger) when ``target`` already holds a replay of another kind or cut, before anything is built (what
    :func:`claim` would refuse once the schema is made)."""
    if not exists(target):
        return
    with connect(target) as conn:
        claimed, held = _meta(conn, "ledger"), _meta(conn, "cut")
        conn.commit()
    if claimed is not None:
        _same_cut(target, held, cut)


def claim(target: Settings, source: Settings, cut: Mapping[int, int] | None = None) -> None:
    """Record that ``target`` holds projections of ``source``'s ledger, up to ``cut`` (exclusive ends per
    commands partition) for a point-in-time replay (``None``: the whole ledger, followed); raises
    ``ValidationError`` (field ``into``) when it already holds another ledger's, a point-in-time state of
    another cut, or a whole replay where a cut is asked (or the other way round: a whole replay resumed into
    a point-in-time namespace reported success and left it half built), or when ``source`` does not exist."""
    if not exists(source):
        raise ValidationError("namespace", f"namespace {source.topic_prefix!r} does not exist")
    ledger = source.ledger_prefix or source.topic_prefix
    with connect(target) as conn:
        record = "INSERT INTO namespace_meta (key, value) VALUES (%s, %s) ON CONFLICT DO NOTHING"
        if _meta(conn, "ledger") is None and cut is not None:
            conn.execute(record, ("cut", _cut_text(cut)))
        kept = _meta(conn, "cut")
        conn.execute(record, ("ledger", ledger))
        conn.execute(record, ("prefix", target.topic_prefix))
        held, named = _meta(conn, "ledger") or ledger, _meta(conn, "prefix") or target.topic_prefix
        conn.commit()
    _same_cut(target, kept, cut)
    if named != target.topic_prefix:  # "UPPER" and "upper" name one schema: one namespace, one spelling
        raise ValidationError("into", f"{target.topic_prefix!r} names the database schema of namespace {named!r} "
                              "(names differing only in case or punctuation are one namespace); use that name")
    if held != ledger:
        raise ValidationError("into", f"{target.topic_prefix!r} holds projections of {held!r}, not {ledger!r}")


def cut_of(settings: Settings) -> dict[int, int] | None:
    """The cut a point-in-time namespace was replayed to (exclusive ends per commands partition), or
    ``None`` (a live namespace, a whole replay, or none)."""
    if not exists(settings):
        return None
    with connect(settings) as conn:
        held = _meta(conn, "cut")
        conn.commit()
    return {int(p): int(o) for p, o in json.loads(held).items()} if held else None


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
