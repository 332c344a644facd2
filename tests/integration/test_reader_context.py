"""The read side's one-statement reader context (``stores.registry.reader_context``) on the real
database: the registry record, roles and exactly the grants held by the principal or one of its roles
(revoked ones included: the filter drops them by time), and a plan that reaches the grants through
their ``grantee`` index (an earlier form scanned every grant: 6.8 ms per recall at 19,843 grants)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from memwarden.commands.gate.effects import GrantUpsert, PrincipalUpsert
from memwarden.commands.model import Right
from memwarden.commands.readmodel.permission import Grant
from memwarden.settings import Settings
from memwarden.stores.gate_state import store_effects
from memwarden.stores.pg import connect, connect_async
from memwarden.stores.registry import _READER, ReaderContext, ServedRequest, reader_context
from tests import factories as f
from tests.integration.conftest import drop, make_namespace


@pytest.fixture(scope="module")
def ns(stack: Settings) -> Iterator[Settings]:
    s = make_namespace(stack)
    yield s
    drop(s)


def _grant(gid: str, grantee: str, revoked: int | None = None) -> Grant:
    return Grant(gid, grantee, frozenset({Right.READ}), ("team:a",), revoked_at_ms=revoked)


async def _write_and_read(ns: Settings, principal: str) -> ReaderContext:
    conn = await connect_async(ns)
    try:
        async with conn.transaction(), conn.cursor() as cur:
            await store_effects(cur, [
                (PrincipalUpsert(f.principal("user:carol", roles=("nurse", "night"))), {}),
                (PrincipalUpsert(f.principal("user:dave", roles=("nurse",))), {}),
                (GrantUpsert(_grant("g3", "user:carol")), {}),
                (GrantUpsert(_grant("g1", "role:nurse")), {}),
                (GrantUpsert(_grant("g2", "role:night", revoked=5)), {}),
                (GrantUpsert(_grant("g4", "user:dave")), {}),
                (GrantUpsert(_grant("g5", "role:porter")), {}),
                (GrantUpsert(_grant("g6", "user:nobody")), {}),
            ])
        auto = await connect_async(ns, autocommit=True)
        try:
            return await reader_context(auto, principal)
        finally:
            await auto.close()
    finally:
        await conn.close()


def test_the_record_roles_and_exactly_the_held_grants(ns: Settings) -> None:
    found = asyncio.run(_write_and_read(ns, "user:carol"))
    assert found.principal == "user:carol" and found.record.principal_id == "user:carol"
    assert found.roles == {"nurse", "night"}
    assert [g.grant_id for g in found.grants] == ["g1", "g2", "g3"]
    assert found.grants[1].revoked_at_ms == 5


def test_an_unregistered_principal_has_no_record_and_only_its_own_grants(ns: Settings) -> None:
    found = asyncio.run(_write_and_read(ns, "user:nobody"))
    assert found.record is None and found.roles == frozenset()
    assert [g.grant_id for g in found.grants] == ["g6"]


def test_the_grants_are_reached_through_their_grantee_index(ns: Settings) -> None:
    with connect(ns) as conn:
        conn.execute("SET enable_seqscan = off")  # what the planner does once the table is large
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + _READER,
                                                    {"principal": "user:carol", "role_prefix": "role:"}))
        conn.rollback()
    assert "grants_grantee" in plan and "Seq Scan on grants" not in plan, plan


def test_a_signed_request_is_claimed_once_by_every_process_sharing_the_namespace(ns: Settings) -> None:
    """The replay window lives in Postgres: a request claimed through one connection (one read-API
    process) is a replay through another (a replica, or the same process after a restart) until its
    window ends; then it may be claimed again, and a pruning read deletes the windows that ended."""
    digest, other = b"\x01" * 32, b"\x02" * 32

    async def claims() -> list[bool | None]:
        a = await connect_async(ns, autocommit=True)
        b = await connect_async(ns, autocommit=True)
        try:
            out = [(await reader_context(a, "user:carol", ServedRequest(digest, 2_000, 1_000))).first_use,
                   (await reader_context(b, "user:carol", ServedRequest(digest, 2_000, 1_500))).first_use,
                   (await reader_context(a, "user:carol", ServedRequest(digest, 2_000, 1_999))).first_use,
                   (await reader_context(b, "user:carol", ServedRequest(other, 9_000, 1_000))).first_use,
                   (await reader_context(b, "user:carol")).first_use]
            # the window ended: the skew check refuses such a request anyway, and the digest may be claimed again
            out.append((await reader_context(b, "user:carol", ServedRequest(digest, 5_000, 2_000))).first_use)
            await reader_context(a, "user:carol", ServedRequest(b"\x03" * 32, 9_500, 5_000, prune=True))
            return out
        finally:
            await a.close()
            await b.close()

    found = asyncio.run(claims())
    assert found == [True, False, False, True, None, True]
    with connect(ns) as conn:  # the pruning read deleted the window that ended at 5,000, and kept the others
        left = {bytes(r[0]) for r in conn.execute("SELECT digest FROM served_requests")}
    assert left == {other, b"\x03" * 32}
