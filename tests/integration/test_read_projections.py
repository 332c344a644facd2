"""The two read projections agree (issue 4: "nothing is filtered after ranking" needs the index payload
and the ``memory_versions`` row to say the same thing). The real ``ProfileProjector`` and
``EmbeddingProjector`` apply the same events (records, supersessions, out-of-order ``MemoryUsed``
batches) to a real Postgres namespace and a real Edge shard; then for every version the index payload
equals what its row implies: status, ``valid_to_ms`` (an earlier own end survives a supersession),
``closed_known_ms`` and the freshness reference ``max(valid_from, last use)`` (Eq. 3; it never moves
backwards when an older use arrives late)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memwarden.commands.gate import Position
from memwarden.commands.model import Sensitivity, StoreKind
from memwarden.commands.readmodel.payload import OPEN_END_MS, fresh_until_ms
from memwarden.epoch import to_ms, to_ms_or
from memwarden.projections.edge_index import EdgeVectorIndex
from memwarden.projections.events_in import EventIn
from memwarden.projections.index_projector import EmbeddingProjector, point_id
from memwarden.projections.profile_projector import ProfileProjector
from memwarden.settings import Settings
from memwarden.stores.pg import connect_async
from memwarden.stores.profile_rows import pending_forgets
from tests.factories import sealed
from tests.integration.conftest import drop, make_namespace
from tests.integration.reads_fixtures import DIM, HashEmbedder, Loop, Version

pytestmark = pytest.mark.integration

T = datetime(2025, 7, 1, tzinfo=UTC)
H = timedelta(hours=1)
TOPIC = "events"


@pytest.fixture(scope="module")
def loop() -> Iterator[Loop]:
    lp = Loop()
    yield lp
    lp.close()


@pytest.fixture(scope="module")
def ns(stack: Settings) -> Iterator[Settings]:
    s = make_namespace(stack)
    yield s
    drop(s)


@pytest.fixture
def aconn(ns: Settings, loop: Loop) -> Iterator[psycopg.AsyncConnection]:
    conn = loop.run(connect_async(ns))
    yield conn
    loop.run(conn.close())


@pytest.fixture
def edge(tmp_path: Path) -> Iterator[EdgeVectorIndex]:
    idx = EdgeVectorIndex(tmp_path, "projections")
    idx.ensure(DIM)
    yield idx
    idx.close()


class Ledger:
    """Builds events at increasing offsets of partition 0 of the events topic."""

    def __init__(self) -> None:
        self.events: list[EventIn] = []

    def _add(self, name: str, record: dict[str, Any], text: str | None = None) -> None:
        self.events.append(EventIn(name, record, Position(TOPIC, 0, len(self.events)), text))

    def record(self, text: str, valid_from: datetime, effective_to: datetime | None = None) -> dict[str, Any]:
        v = Version("user:ana", "user:ana", "account:default", StoreKind.PROFILE, Sensitivity.INTERNAL, (), text,
                    valid_from=valid_from, decided=valid_from, effective_to=effective_to)
        r = v.recorded(len(self.events))
        self._add("MemoryRecorded", r, text)
        return r

    def supersede(self, old: dict[str, Any], text: str, valid_from: datetime, decided: datetime) -> dict[str, Any]:
        env = {**old["envelope"], "observed_at": valid_from, "effective_from": valid_from, "effective_to": None,
               "supersedes": old["memory_id"]}
        r = {**old, "command_id": str(uuid.uuid4()), "event_id": str(uuid.uuid4()), "version": old["version"] + 1,
             "envelope": env, "decided_at": decided, "content": sealed(text),
             "position": {**old["position"], "offset": len(self.events)}}
        self._add("MemoryRecorded", r, text)
        return r

    def used(self, *uses: tuple[dict[str, Any], datetime]) -> None:
        self._add("MemoryUsed", {"event_id": str(uuid.uuid4()),
                                 "uses": [{"memory_id": r["memory_id"], "used_at": t} for r, t in uses]})


def test_index_payloads_say_what_the_rows_say(ns: Settings, loop: Loop, aconn: psycopg.AsyncConnection,
                                              edge: EdgeVectorIndex) -> None:
    ledger = Ledger()
    leave = ledger.record("on leave in Lyon", T + 5 * H, effective_to=T + 6 * H)
    ledger.supersede(leave, "back at the office", T + 8 * H, decided=T + 9 * H)  # its own end (6 h) stays
    lyon = ledger.record("lives in Lyon", T)
    ledger.supersede(lyon, "lives in Oslo", T + 3 * H, decided=T + 4 * H)
    chess = ledger.record("likes chess", T + H)
    later = ledger.record("starts the new job in May", T + 100 * H)  # validity starts after its uses
    ledger.used((chess, T + 9 * H), (later, T + 9 * H))
    ledger.used((chess, T + 7 * H))  # an older use arriving late (another worker's batch)
    profile = ProfileProjector(aconn, TOPIC)
    index = EmbeddingProjector(HashEmbedder(), edge, aconn, TOPIC, "index:test")
    for event in ledger.events:  # one event per batch, as a slow stream delivers them
        loop.run(profile.apply([event]))
        loop.run(index.apply([event]))

    async def fetch() -> list[tuple[Any, ...]]:
        async with aconn.cursor() as cur:
            await cur.execute("SELECT memory_id::text, command_id::text, status, valid_from, valid_to, closed_at,"
                              " last_used_at FROM memory_versions ORDER BY memory_id, version")
            return await cur.fetchall()

    rows = loop.run(fetch())
    assert len(rows) == 6
    payloads = {h.point_id: h.payload for h in edge.retrieve([point_id(r[0], r[1]) for r in rows])}
    for memory_id, command_id, status, valid_from, valid_to, closed_at, last_used in rows:
        p = payloads[point_id(memory_id, command_id)]
        expected = {
            "status": status,
            "valid_to_ms": to_ms_or(valid_to, OPEN_END_MS),
            "closed_known_ms": to_ms(closed_at) if closed_at else OPEN_END_MS,
            "fresh_ref_ms": to_ms(max(valid_from, last_used) if last_used else valid_from),
        }
        expected["fresh_until_ms"] = fresh_until_ms(p["store_kind"], expected["fresh_ref_ms"])
        assert {k: p[k] for k in expected} == expected, (memory_id, status)
    by_memory = {(r[0], r[2]): r for r in rows}
    assert by_memory[(leave["memory_id"], "superseded")][4] == T + 6 * H
    assert by_memory[(lyon["memory_id"], "superseded")][4:6] == (T + 3 * H, T + 4 * H)
    assert by_memory[(chess["memory_id"], "active")][6] == T + 9 * H


def test_a_forget_appended_again_after_its_receipt_owes_nothing(ns: Settings, loop: Loop,
                                                                aconn: psycopg.AsyncConnection) -> None:
    """A decision re-sent after a worker was killed between publishing it and recording its offsets
    appends its ``MemoryForgotten`` again, here after the receipt: the receipt stays settled (the
    2026-12-03 CI failure: the row came back and the restarted worker, which had sent a receipt
    already, never sent another)."""
    ledger = Ledger()
    rec = ledger.record("the spare key is under the blue pot", T)
    forgot = {"command_id": str(uuid.uuid4()), "memory_id": rec["memory_id"], "subject": "user:ana",
              "position": {"topic": "commands", "partition": 0, "offset": 7}, "decided_at": T + H}
    ledger._add("MemoryForgotten", forgot)
    ledger._add("ErasureReceipted", {"command_id": forgot["command_id"], "memory_id": rec["memory_id"]})
    ledger._add("MemoryForgotten", forgot)  # the re-sent decision
    other = {**forgot, "command_id": str(uuid.uuid4())}
    ledger._add("MemoryForgotten", other)  # another forget of the same memory still owes its own

    async def owed() -> list[tuple[str, str]]:
        profile = ProfileProjector(aconn, TOPIC + "-owed")
        for i in range(len(ledger.events)):  # one event a batch, as a slow consumer sees them
            await profile.apply(ledger.events[i:i + 1])
        return [(r["command_id"], r["memory_id"]) for r in await pending_forgets(aconn)
                if r["memory_id"] == rec["memory_id"]]

    assert loop.run(owed()) == [(other["command_id"], rec["memory_id"])]

    async def raced() -> list[tuple[str, str]]:
        # two projector workers: the re-sent forget's insert read before the receipt's commit (they sit
        # on different partitions) and put the row back; what is owed still leaves it out
        async with aconn.transaction(), aconn.cursor() as cur:
            await cur.execute("INSERT INTO erasure_pending VALUES (%s, %s, 'user:ana', 'commands', 0, 7, %s)",
                              (forgot["command_id"], rec["memory_id"], T + H))
        return [(r["command_id"], r["memory_id"]) for r in await pending_forgets(aconn)
                if r["memory_id"] == rec["memory_id"]]

    assert loop.run(raced()) == [(other["command_id"], rec["memory_id"])]

    async def left_behind() -> int:
        async with aconn.cursor() as cur:
            await cur.execute("SELECT count(*) FROM erasure_pending WHERE command_id = %s", (forgot["command_id"],))
            row = await cur.fetchone()
        await aconn.commit()
        return int(row[0]) if row else -1

    assert loop.run(left_behind()) == 0  # the settled row is gone, not only left out
