"""Isolation before candidate generation, as a property (issue 4 part 2; SSGM Principle 3, Eq. 5;
field cases R1, R2): hypothesis generates principals with roles, grants (READ/WRITE, scopes,
subjects, purposes, store kinds, ceilings, validity, revocations) and memory versions (owner,
subject, scope, store kind, sensitivity, purposes, validity, expiry, status, uses, untrusted
content), writes them straight into a real Qdrant Edge shard and a real Postgres namespace (the
payloads and rows of the real projectors; grants and roles as the gate stores them), and recalls
for random callers, purposes, queries and times on every retrieval path (dense, lexical, hybrid).

For every recall and every path:

* soundness: each returned memory is permitted by the oracle ``may_read`` and admissible at the
  read's times (status active or superseded, valid at ``as_of``, decided by ``known_at``, not closed
  as known then, unexpired now, fresh per Eq. 3 unless ``known_at``/``freshness=False``, trusted
  unless ``include_untrusted``);
* nothing is filtered after ranking: the path returns ``min(k, |pool|)`` memories, where the pool is
  every admissible memory (dense, hybrid) or every admissible memory sharing a term with the query
  (lexical); when ``k`` exceeds the pool, the result is the whole pool (completeness); the dense
  path's scores are the top-``k`` cosines of the pool.

A second property runs the same worlds on a Qdrant server (``MEMWARDEN_QDRANT_URL``, skipped when
unset) and asserts that both adapters return identical ids on every path.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from memwarden.commands.model import Right, Sensitivity, StoreKind
from memwarden.commands.readmodel.freshness import is_fresh
from memwarden.commands.readmodel.payload import RecordAttrs
from memwarden.commands.readmodel.permission import Grant, ReadContext, may_read
from memwarden.commands.readmodel.query import RECALL_MODES, RecalledMemory, RecallMode
from memwarden.epoch import to_ms
from memwarden.projections.edge_index import EdgeVectorIndex
from memwarden.projections.recall import Recaller
from memwarden.projections.sparse import Bm25Encoder
from memwarden.projections.vector_index import VectorIndex
from memwarden.settings import Settings
from memwarden.stores.pg import connect, connect_async
from tests.factories import TestKeys
from tests.integration.conftest import drop, make_namespace
from tests.integration.reads_fixtures import DIM, HashEmbedder, Loop, Version, qdrant_server_url, store, utc_now

pytestmark = pytest.mark.integration

PRINCIPALS = ("user:ana", "user:ben", "agent:cal")
CALLERS = (*PRINCIPALS, "user:zed")  # zed is not registered: no roles
#: Owners, subjects and callers, ana more often than the others (so that own records are common).
BUSY = ("user:ana",) * 3 + CALLERS
ROLES = ("clinician", "planner")
SCOPES = ("account:default", "team:a", "team:b")
PURPOSES = ("support", "marketing")
WORDS = ("sam", "likes", "chess", "apples", "orion", "project", "tea", "coffee")
#: Offsets from the example's base time, in hours: far past (stale for EVENT and EXPERIENCE), recent
#: past, near future. Whole hours keep every comparison far from a boundary.
PAST = (-24 * 400, -24 * 200, -24 * 100, -24 * 10, -5, -2)
ANY_TIME = (*PAST, 1, 3)
#: Validity starts, most of them recent (so that most versions are current and the pools are large).
RECENT_BIAS = (-24 * 400, -24 * 100, -24 * 10, -24 * 10, -5, -5, -5, -2, -2, 1)
#: ``as_of`` and ``known_at`` choices (hours), most of them recent.
RECENT_PAST = (-24 * 200, -24 * 10, -5, -5, -2, -2)
KS = (1, 2, 3, 5, 30)
EMBEDDER = HashEmbedder()
LEXICAL = Bm25Encoder()

# -- generated worlds -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Read:
    caller: str
    purpose: str
    query: str
    k: int
    as_of: int | None  # hours from the base time
    known_at: int | None
    freshness: bool
    include_untrusted: bool


@dataclass(frozen=True)
class World:
    principals: tuple[tuple[str, frozenset[str]], ...]
    grants: tuple[Grant, ...]
    versions: tuple[Version, ...]
    reads: tuple[Read, ...]
    base: datetime


def _at(base: datetime, hours: int | None) -> datetime | None:
    return None if hours is None else base + timedelta(hours=hours)


@st.composite
def _version(draw: st.DrawFn, base: datetime) -> Version:
    valid_from = draw(st.sampled_from(RECENT_BIAS))
    decided = draw(st.sampled_from([t for t in PAST if t >= valid_from] or [PAST[-1]]))
    later = [t for t in ANY_TIME if t > valid_from]
    status = draw(st.sampled_from(("active",) * 6 + ("superseded",) * 2 + ("forgotten", "quarantined")))
    superseded_at = closed_at = None
    if status == "superseded":
        superseded_at = draw(st.sampled_from(later))
        closed_at = draw(st.sampled_from([t for t in PAST if t >= decided]))
    effective_to = draw(st.one_of(st.none(), st.none(), st.sampled_from(later)))
    used = [t for t in PAST if t >= valid_from]
    last_used = draw(st.one_of(st.none(), st.sampled_from(used))) if used else None
    return Version(
        owner=draw(st.sampled_from(BUSY)), subject=draw(st.sampled_from(BUSY)),
        scope=draw(st.sampled_from(SCOPES)), store_kind=draw(st.sampled_from(list(StoreKind))),
        sensitivity=draw(st.sampled_from(list(Sensitivity))),
        purposes=tuple(draw(st.one_of(st.just([]), st.lists(st.sampled_from(PURPOSES), max_size=2, unique=True)))),
        text=" ".join(draw(st.lists(st.sampled_from(WORDS), min_size=2, max_size=4))),
        valid_from=base + timedelta(hours=valid_from), decided=base + timedelta(hours=decided), status=status,
        effective_to=_at(base, effective_to), superseded_at=_at(base, superseded_at), closed_at=_at(base, closed_at),
        expires=_at(base, draw(st.one_of(st.none(), st.none(), st.sampled_from((-24 * 10, -5, 1, 3))))),
        last_used=_at(base, last_used), untrusted=draw(st.sampled_from((False,) * 4 + (True,))),
    )


@st.composite
def _grant(draw: st.DrawFn, base: datetime, i: int) -> Grant:
    start = draw(st.sampled_from(PAST))
    end = draw(st.one_of(st.none(), st.sampled_from([t for t in ANY_TIME if t > start])))
    revoked = draw(st.one_of(st.none(), st.sampled_from(ANY_TIME)))
    return Grant(
        grant_id=f"g{i}",
        grantee=draw(st.sampled_from((*CALLERS, *(f"role:{r}" for r in ROLES)))),
        rights=draw(st.frozensets(st.sampled_from(list(Right)), min_size=1)),
        scopes=tuple(draw(st.lists(st.sampled_from((*SCOPES, "*")), min_size=1, max_size=2, unique=True))),
        subjects=tuple(draw(st.lists(st.sampled_from(CALLERS), max_size=2, unique=True))),
        purposes=tuple(draw(st.lists(st.sampled_from(PURPOSES), max_size=1))),
        store_kinds=tuple(draw(st.lists(st.sampled_from(list(StoreKind)), max_size=2, unique=True))),
        sensitivity_ceiling=draw(st.sampled_from(list(Sensitivity))),
        valid_from_ms=to_ms(_at(base, start)), valid_to_ms=None if end is None else to_ms(_at(base, end)),
        revoked_at_ms=None if revoked is None else to_ms(_at(base, revoked)),
    )


_reads = st.builds(
    Read, caller=st.sampled_from(BUSY), purpose=st.sampled_from(PURPOSES),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" ".join), k=st.sampled_from(KS),
    as_of=st.one_of(st.none(), st.none(), st.sampled_from(RECENT_PAST)),
    known_at=st.one_of(st.none(), st.none(), st.sampled_from(RECENT_PAST)),
    freshness=st.booleans(), include_untrusted=st.booleans(),
)


@st.composite
def worlds(draw: st.DrawFn) -> World:
    base = utc_now().replace(microsecond=0)
    principals = tuple((p, frozenset(draw(st.lists(st.sampled_from(ROLES), max_size=2)))) for p in PRINCIPALS)
    n_grants = draw(st.integers(0, 5))
    grants = tuple(draw(_grant(base, i)) for i in range(n_grants))
    versions = tuple(draw(st.lists(_version(base), min_size=1, max_size=20)))
    reads = tuple(draw(st.lists(_reads, min_size=1, max_size=5)))
    return World(principals, grants, versions, reads, base)


# -- the oracle ------------------------------------------------------------------------------------------------


def admissible(world: World, read: Read, v: Version, now: datetime) -> bool:
    """Eq. 5 for one version, from the definitions (not from the filter): ABAC by ``may_read`` (a read
    of the past uses grants valid then and now), status, validity at ``as_of`` as known at
    ``known_at``, decided by ``known_at``, unexpired now, fresh at ``as_of`` (Eq. 3) unless
    ``known_at`` or ``freshness=False``, trusted unless ``include_untrusted``."""
    at = _at(world.base, read.as_of) or now
    known = _at(world.base, read.known_at) or now
    roles = dict(world.principals).get(read.caller, frozenset())
    grants = world.grants if read.as_of is None else tuple(g for g in world.grants if g.valid_at(to_ms(at)))
    ctx = ReadContext(read.caller, roles, read.purpose, to_ms(now), grants)
    if not may_read(ctx, RecordAttrs(v.owner, v.subject, v.scope, v.store_kind, v.sensitivity, v.purposes)):
        return False
    if v.status not in ("active", "superseded"):
        return False
    closed_later = v.closed_at is not None and v.closed_at > known
    if not (v.valid_from <= at and (v.valid_to is None or at < v.valid_to or closed_later)):
        return False
    if v.decided > known or (v.expires is not None and v.expires <= now):
        return False
    if v.untrusted and not read.include_untrusted:
        return False
    if read.freshness and read.known_at is None:
        last = None if v.last_used is None else to_ms(v.last_used)
        return is_fresh(v.store_kind, last, to_ms(v.valid_from), to_ms(at))
    return True


def lexical_match(query: str, text: str) -> bool:
    """The query and the text share a lexical term (a BM25 score above zero)."""
    return bool(set(LEXICAL.query(query).indices) & set(LEXICAL.document(text).indices))


def cosine(query: str, text: str) -> float:
    q, d = EMBEDDER.embed([query, text])
    return float(np.dot(q, d))


# -- fixtures ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ns(stack: Settings) -> Iterator[Settings]:
    s = make_namespace(stack)
    yield s
    drop(s)


@pytest.fixture(scope="module")
def loop() -> Iterator[Loop]:
    lp = Loop()
    yield lp
    lp.close()


@pytest.fixture(scope="module")
def pg(ns: Settings) -> Iterator[psycopg.Connection]:
    conn = connect(ns)
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def aconn(ns: Settings, loop: Loop) -> Iterator[psycopg.AsyncConnection]:
    conn = loop.run(connect_async(ns))
    yield conn
    loop.run(conn.close())


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EdgeVectorIndex]:
    idx = EdgeVectorIndex(Path(tmp_path_factory.mktemp("edge")), "reads")
    idx.ensure(DIM)
    yield idx
    idx.close()


@pytest.fixture(scope="module")
def recaller(edge: EdgeVectorIndex, aconn: psycopg.AsyncConnection) -> Recaller:
    return Recaller(EMBEDDER, edge, aconn, LEXICAL, keys=TestKeys())


def recall(loop: Loop, recaller: Recaller, world: World, read: Read, mode: RecallMode) -> list[RecalledMemory]:
    return loop.run(recaller.recall(read.caller, read.query, read.k, _at(world.base, read.as_of),
                                    _at(world.base, read.known_at), read.purpose, freshness=read.freshness,
                                    include_untrusted=read.include_untrusted, mode=mode))


# -- the properties --------------------------------------------------------------------------------------------

HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=300, deadline=None, suppress_health_check=HEALTH)
@given(worlds())
def test_property_no_recall_path_returns_anything_outside_permission_and_nothing_admissible_is_missing(
        pg: psycopg.Connection, edge: EdgeVectorIndex, recaller: Recaller, loop: Loop, world: World) -> None:
    store(pg, [edge], world.versions, world.principals, world.grants, EMBEDDER, LEXICAL)
    by_id = {v.memory_id: v for v in world.versions}
    for read in world.reads:
        for mode in RECALL_MODES:
            now = utc_now()
            found = recall(loop, recaller, world, read, mode)
            ids = [m.memory_id for m in found]
            assert len(ids) == len(set(ids)), f"{mode}: a memory came back twice"
            for m in found:
                v = by_id[m.memory_id]
                assert admissible(world, read, v, now), f"{mode}: {read} returned {v}"
                assert m.text == v.text and m.principal == v.owner and m.scope == v.scope
            pool = [v for v in world.versions if admissible(world, read, v, now)]
            if mode == "lexical":
                pool = [v for v in pool if lexical_match(read.query, v.text)]
            event(f"{mode}: pool {'0' if not pool else '1-2' if len(pool) < 3 else '3+'}, returned "
                  f"{'0' if not found else 'k' if len(found) == read.k else '<k'}")
            assert len(found) == min(read.k, len(pool)), (
                f"{mode}: {len(found)} returned, {len(pool)} admissible, k={read.k}: something was filtered "
                f"after ranking or is missing ({read})")
            if read.k >= len(pool):
                assert set(ids) == {v.memory_id for v in pool}, f"{mode}: incomplete for {read}"
            if mode == "dense":
                best = sorted((cosine(read.query, v.text) for v in pool), reverse=True)[: read.k]
                assert [m.score for m in found] == pytest.approx(best, abs=1e-5)


# -- both adapters -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(edge: EdgeVectorIndex) -> Iterator[VectorIndex]:
    url = qdrant_server_url()
    if url is None:
        pytest.skip("no Qdrant server reachable at MEMWARDEN_QDRANT_URL; set it to compare the server adapter")
    import os

    from qdrant_client import QdrantClient

    from memwarden.projections.server_index import ServerVectorIndex

    api_key = os.environ.get("MEMWARDEN_QDRANT_API_KEY")
    collection = f"memwarden_reads_{uuid.uuid4().hex[:12]}"
    idx = ServerVectorIndex(url, collection, api_key)
    idx.ensure(DIM)
    yield idx
    idx.close()
    admin = QdrantClient(url=url, api_key=api_key)
    admin.delete_collection(collection)
    admin.close()


@pytest.mark.qdrant_server
@settings(max_examples=40, deadline=None, suppress_health_check=HEALTH)
@given(worlds())
def test_property_edge_and_server_adapters_return_identical_ids_on_every_path(
        pg: psycopg.Connection, edge: EdgeVectorIndex, server: VectorIndex, aconn: psycopg.AsyncConnection,
        recaller: Recaller, loop: Loop, world: World) -> None:
    store(pg, [edge, server], world.versions, world.principals, world.grants, EMBEDDER, LEXICAL)
    on_server = Recaller(EMBEDDER, server, aconn, LEXICAL, keys=TestKeys())
    for read in world.reads:
        for mode in RECALL_MODES:
            a = recall(loop, recaller, world, read, mode)
            b = recall(loop, on_server, world, read, mode)
            assert {m.memory_id for m in a} == {m.memory_id for m in b}, f"{mode}: adapters differ on {read}"
            assert sorted(m.score for m in a) == pytest.approx(sorted(m.score for m in b), abs=1e-4)
