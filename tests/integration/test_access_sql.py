"""``read_permission_sql`` against the real PostgreSQL: on hypothesis-generated principals, grants and
records, the rows the SQL predicate selects from ``memory_versions`` are exactly those the oracle
``may_read`` permits (SSGM Principle 3: the same permission in every Postgres query).

Each module gets a fresh namespace schema (migrated ``memory_versions``, no Kafka topics needed);
every example inserts its rows in a transaction that is rolled back.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memwarden.commands.model import Right, Sensitivity, StoreKind
from memwarden.commands.readmodel.payload import RecordAttrs
from memwarden.commands.readmodel.permission import Grant, ReadContext, may_read
from memwarden.commands.readmodel.sql import read_permission_sql
from memwarden.settings import Settings
from memwarden.stores.pg import connect, drop_namespace, migrate
from tests.unit.test_access import contexts_st, records_st

pytestmark = pytest.mark.integration

T = datetime(2025, 7, 25, tzinfo=UTC)
INSERT = """
INSERT INTO memory_versions (memory_id, version, command_id, event_id, principal, subject, scope, store_kind,
    source_kind, epistemic_status, sensitivity, purposes, content_key_id, observed_at, valid_from, status,
    ledger_topic, ledger_partition, ledger_offset, decided_at)
VALUES (%s, 1, %s, %s, %s, %s, %s, %s, 'USER_STATEMENT', 'QUOTED', %s, %s, %s, %s, %s, 'active', 'mw.ledger', 0, %s, %s)
"""


@pytest.fixture(scope="module")
def conn(stack: Settings) -> Iterator[psycopg.Connection]:
    ns = stack.model_copy(update={"topic_prefix": f"test.acl.{uuid.uuid4().hex[:10]}"})
    migrate(ns)
    c = connect(ns)
    try:
        yield c
    finally:
        c.close()
        drop_namespace(ns)


def selected(conn: psycopg.Connection, ctx: ReadContext, records: list[RecordAttrs],
             alias: str | None = None) -> set[int]:
    """Insert ``records`` (memory id = index + 1), run the predicate, roll back; the selected indexes."""
    rows = [(uuid.UUID(int=i + 1), uuid.uuid4(), uuid.uuid4(), r.owner, r.subject, r.scope, r.store_kind.value,
             r.sensitivity.value, list(r.purposes), uuid.uuid4(), T, T, i, T) for i, r in enumerate(records)]
    where, params = read_permission_sql(ctx, alias=alias)
    table = f"memory_versions {alias}" if alias else "memory_versions"
    col = f"{alias}.memory_id" if alias else "memory_id"
    try:
        with conn.cursor() as cur:
            cur.executemany(INSERT, rows)
            cur.execute(f"SELECT {col} FROM {table} WHERE {col} IS NOT NULL AND {where}", params)  # type: ignore[arg-type]
            return {row[0].int - 1 for row in cur.fetchall()}
    finally:
        conn.rollback()


def oracle(ctx: ReadContext, records: list[RecordAttrs]) -> set[int]:
    return {i for i, r in enumerate(records) if may_read(ctx, r)}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(contexts_st, st.lists(records_st, min_size=1, max_size=12), st.sampled_from([None, "mv"]))
def test_property_sql_predicate_selects_exactly_what_the_oracle_permits(
    conn: psycopg.Connection, ctx: ReadContext, records: list[RecordAttrs], alias: str | None
) -> None:
    assert selected(conn, ctx, records, alias) == oracle(ctx, records)


def test_sql_predicate_on_the_rules_and_hostile_names(conn: psycopg.Connection) -> None:
    weird = "user:o'brien%s)--"
    g = Grant("g1", "role:ops", frozenset({Right.READ}), ("sc'1", "team-a"), subjects=(weird,),
              purposes=("support",), store_kinds=(StoreKind.EVENT,), sensitivity_ceiling=Sensitivity.CONFIDENTIAL)
    records = [
        RecordAttrs(weird, weird, "x", StoreKind.PROFILE, Sensitivity.RESTRICTED),            # 0 own
        RecordAttrs("user:z", weird, "sc'1", StoreKind.EVENT, Sensitivity.CONFIDENTIAL),       # 1 about self
        RecordAttrs("user:z", "user:z", "sc'1", StoreKind.EVENT, Sensitivity.PUBLIC),          # 2 not covered subject
        RecordAttrs(weird, weird, "x", StoreKind.PROFILE, Sensitivity.PUBLIC, ("billing",)),   # 3 purpose-limited
        RecordAttrs(weird, weird, "x", StoreKind.PROFILE, Sensitivity.PUBLIC, ("support",)),   # 4 purpose ok
        RecordAttrs(weird, weird, "x", StoreKind.PROFILE, Sensitivity.PUBLIC, ("*",)),         # 5 any purpose
    ]
    ctx = ReadContext(weird, frozenset({"ops"}), "support", 10, (g,))
    assert selected(conn, ctx, records) == oracle(ctx, records) == {0, 1, 4, 5}
    other = ReadContext("user:q", frozenset({"ops"}), "support", 10, (g,))
    assert selected(conn, other, records) == oracle(other, records) == {1}
    revoked = ReadContext("user:q", frozenset({"ops"}), "support", 10, (Grant(**{**g.__dict__, "revoked_at_ms": 10}),))
    assert selected(conn, revoked, records) == oracle(revoked, records) == set()
