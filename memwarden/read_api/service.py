"""The read API's behaviour, free of any web framework: each call takes a parsed JSON body and
answers a :class:`Reply` (status and JSON body). Routes live in :mod:`memwarden.read_api.views`.

- ``recall``: authenticate (signed requests always verified; unsigned ones only when
  ``read_auth`` is ``optional``), run the filtered recall, append the read audit (ids only) and
  batch the uses into ``MemoryUsed`` (SSGM Eq. 3, Eq. 5);
- ``history``: every version of one memory the reader may read (authenticated like a recall,
  audited, :mod:`memwarden.read_api.history`);
- ``held``: a write held for review, opened for a reviewer who may review it (audited,
  :mod:`memwarden.read_api.held`);
- ``decisions``: the gate's decisions of given command ids (outcome, reasons, policy version,
  ledger position): the public read through which a caller learns what became of its command;
- ``index_count`` and ``health``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg

from memwarden.bootstrap import Container
from memwarden.commands.ledger import Outbound
from memwarden.commands.read_auth import check_request, replay_claim, replayed
from memwarden.commands.readmodel.filters import FieldIn, Filter
from memwarden.commands.readmodel.query import Recalled, RecalledMemory
from memwarden.commands.readmodel.usage import UsageBatcher
from memwarden.commands.reasons import Reason
from memwarden.epoch import now_ms
from memwarden.errors import StackUnavailable, ValidationError
from memwarden.ops.progress import backlog
from memwarden.projections.recall import QueryEmbedding, Recaller
from memwarden.read_api.audit import held_audited, history_audited, read_audited, used_records
from memwarden.read_api.held import held_refusal, lookup_held
from memwarden.read_api.history import lookup_history
from memwarden.read_api.requests import (
    RecallRequest,
    decision_ids,
    error_code,
    held_request,
    history_request,
    recall_request,
)
from memwarden.stores.decisions import find
from memwarden.stores.gate_state import held_review
from memwarden.stores.pg import DB_ERRORS
from memwarden.stores.registry import ReaderContext, ServedRequest
from memwarden.timing import server_timing, stage, timed

#: Publishes records on the namespace's topics (logical names), acknowledged when it returns.
Publish = Callable[[Sequence[Outbound]], Awaitable[None]]


@dataclass(frozen=True)
class Reply:
    """An HTTP answer: status code and JSON body."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


#: A command undecided for longer than this (seconds) makes the worker not ready: it cannot do its job.
MAX_UNDECIDED_S = 60.0
#: How often (ms) a read-API process deletes the replay windows that ended, inside a read's statement.
PRUNE_EVERY_MS = 60_000
#: Seconds a caller is told to wait (``Retry-After``) when a dependency is down.
RETRY_AFTER_S = 2
#: Seconds a read waits for the broker to acknowledge its audit record; past it the answer is withheld
#: (503 ``BROKER_UNAVAILABLE``): no read is served unaudited, and none hangs through a broker outage.
AUDIT_TIMEOUT_S = 5.0


def unavailable(what: str, exc: BaseException) -> Reply:
    """503 naming what is down, with ``Retry-After`` (never a 500 with a stack trace)."""
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return Reply(503, {"error": f"{what} unavailable: {first}", "code": f"{what.upper()}_UNAVAILABLE",
                       "retry_after_s": RETRY_AFTER_S}, {"Retry-After": str(RETRY_AFTER_S)})


async def _audited(audit: Awaitable[None], answer: Reply) -> Reply:
    """``answer`` once ``audit`` (appending the read's audit record) is acknowledged; a 503
    ``BROKER_UNAVAILABLE`` (the answer withheld) when it is not within ``AUDIT_TIMEOUT_S``."""
    try:
        await asyncio.wait_for(audit, AUDIT_TIMEOUT_S)
    except TimeoutError:
        return unavailable("broker", TimeoutError(f"the read audit was not acknowledged in {AUDIT_TIMEOUT_S:.0f} s;"
                                                  " the answer is withheld"))
    return answer


def _unauthorised(problem: Reason) -> Reply:
    """401 ``{"error", "code", "field": "auth"}``: the reason authentication refused a signed read."""
    return Reply(401, {"error": f"{problem.code}: {problem.message}", "code": problem.code, "field": "auth"})


def _bad_request(exc: ValidationError) -> Reply:
    """400 ``{"error", "code", "field"}``: the REST API's shape and codes (``MISSING_FIELD``,
    ``UNKNOWN_FIELD``, ``INVALID_FIELD``), since ``/v1/signed/recall`` and ``/v1/signed/history`` pass it on."""
    return Reply(400, {"error": str(exc), "code": error_code(exc), "field": exc.field})


class ReadService:
    """The read side of one namespace over the container's embedder, index and Postgres; ``publish``
    sends audit and usage records; ``recaller`` defaults to one over the container's clients.
    Connections open on first use."""

    def __init__(self, container: Container, publish: Publish, recaller: Recaller | None = None,
                 reconciler: Callable[[], Awaitable[dict[str, Any]]] | None = None) -> None:
        self._c = container
        self._publish = publish
        self._recaller = recaller
        self._reconciler = reconciler
        self._lookup: psycopg.AsyncConnection | None = None
        self._lookup_lock = asyncio.Lock()
        self.usage = UsageBatcher(max_items=256, max_wait_ms=1000)
        self._open = asyncio.Event()
        self._open.set()
        self._reading = 0
        self._idle = asyncio.Condition()
        self._switcher: Callable[[str], Awaitable[dict[str, Any]]] | None = None
        self._pruned_ms = 0  # when this process last deleted the ended replay windows

    @asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        """Hold new reads back and wait for those in flight (an in-place switch of the projections
        happens inside); reads resume on exit."""
        self._open.clear()
        try:
            async with self._idle:
                await self._idle.wait_for(lambda: self._reading == 0)
            yield
        finally:
            self._open.set()

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[None]:
        await self._open.wait()
        self._reading += 1
        try:
            yield
        finally:
            self._reading -= 1
            async with self._idle:
                self._idle.notify_all()

    def on_switch(self, switcher: Callable[[str], Awaitable[dict[str, Any]]]) -> None:
        """Serve ``POST /switch`` with ``switcher`` (called with the rebuilt namespace)."""
        self._switcher = switcher

    async def recaller(self) -> Recaller:
        """The recaller (built on first use)."""
        if self._recaller is None:
            self._recaller = Recaller(self._c.embedder(), self._c.index(), await self._c.pg(autocommit=True),
                                      keys=self._c.keyring())
        return self._recaller

    async def _reader(self, body: Mapping[str, Any], principal: str) -> tuple[ReaderContext, Reason | None]:
        """The reader context of ``principal`` (:meth:`Recaller.reader`: registry record, roles and
        grants in one statement, which also claims a signed request in the replay window every
        read-API process shares) and the reason ``body`` fails authentication against it, or ``None``."""
        now = now_ms()
        claim = replay_claim(body, now)
        served = None
        if claim is not None:
            prune = now - self._pruned_ms >= PRUNE_EVERY_MS
            if prune:
                self._pruned_ms = now
            served = ServedRequest(claim[0], claim[1], now, prune)
        reader = await (await self.recaller()).reader(principal, served)
        if "auth" not in body and self._c.settings.read_auth == "optional":
            return reader, None
        anchor = self._c.trust_anchor
        record = anchor if principal == anchor.principal_id else reader.record
        problem = check_request(body, record, now)
        return reader, problem if problem is not None else replayed(reader.first_use)

    async def recall(self, body: Any) -> Reply:
        """``POST /recall``: 200 ``{"memories": [...], "min_score", "below_floor"}`` (plus ``"reason":
        "BELOW_FLOOR"`` when hits were found but none reached ``min_score``) with a ``Server-Timing``
        header of its stages in ms (``auth``: the registry record, roles and grants in one statement
        and the signature check; ``filter``, ``embed`` (which overlaps ``auth``), ``index``, ``relevance``,
        ``verify``, ``keys``, ``open``, ``answer``, ``audit``: :mod:`memwarden.timing`; ``total``: the handler's
        wall time), 400 naming a bad field,
        401 with the reason code when authentication fails, 503 with ``Retry-After`` when the database
        is down or the broker does not acknowledge the read audit within ``AUDIT_TIMEOUT_S``."""
        started = time.perf_counter()
        with timed() as stages:
            try:
                with stage("auth"):
                    request = recall_request(body)
                async with self._read():  # after a switch pause: the grants as they are now
                    # the query embeds (outside the GIL) while the reader is read and authenticated
                    embedding = (await self.recaller()).start_embedding(request.query, request.mode,
                                                                         request.decompose)
                    try:
                        with stage("auth"):  # the registry record, roles and grants in one statement
                            reader, problem = await self._reader(body, request.principal)
                        if problem is not None:
                            return _unauthorised(problem)
                        found = await self._recall(request, reader, embedding)
                    finally:
                        embedding.task.cancel()  # a no-op once the recall took it
            except ValidationError as exc:
                return _bad_request(exc)
            except DB_ERRORS as exc:
                self._recaller = None  # its connection is gone: the next recall opens a new one
                return unavailable("database", exc)
            except (ValueError, TypeError) as exc:  # a value the checks above let through: still the caller's
                return Reply(400, {"error": f"bad request: {exc}", "code": "BAD_REQUEST", "field": None})
            with stage("answer"):
                answer = found.to_json()
            with stage("audit"):
                reply = await _audited(self._audit(request, found), Reply(200, answer))
        if reply.status == 200:  # where the time went, for the caller and the recall benchmark
            stages["total"] = (time.perf_counter() - started) * 1000.0  # the handler's wall time (stages overlap)
            reply.headers["Server-Timing"] = server_timing(stages)
        return reply

    async def history(self, body: Any) -> Reply:
        """``POST /history``: 200 ``{"memory_id", "current", "versions": [...]}`` (see
        :mod:`memwarden.read_api.history`), 404 ``UNKNOWN_MEMORY`` when the reader may read no
        version of it (or there is none), 400 naming a bad field, 401 as for a recall; audited."""
        try:
            request = history_request(body)
            async with self._read():  # authenticated and filtered like a recall, with one reader context
                reader, problem = await self._reader(body, request.principal)
                if problem is not None:
                    return _unauthorised(problem)
                async with self._lookup_lock:
                    self._lookup = self._lookup or await self._c.pg()
                    found = await lookup_history(self._lookup, self._c.keyring(), request, reader,
                                                 datetime.now(UTC))
        except ValidationError as exc:
            return _bad_request(exc)
        except DB_ERRORS as exc:
            self._lookup = self._recaller = None  # either connection may be the one that is gone
            return unavailable("database", exc)
        if found is None:
            return Reply(404, {"error": f"no memory {request.memory_id} you may read", "code": "UNKNOWN_MEMORY",
                               "field": "memory_id"})
        audited = history_audited(self._c.digest_key, request.principal, request.purpose, request.memory_id,
                                  found["versions"], datetime.now(UTC))
        record = Outbound("audit", request.principal.encode(), self._c.codec.encode("ReadAudited", audited))
        return await _audited(self._publish([record]), Reply(200, found))

    async def held(self, body: Any) -> Reply:
        """``POST /held``: 200 with a write held for review, its text opened (:mod:`memwarden.read_api.held`), to a
        reviewer who did not write it; 403 ``NOT_A_REVIEWER`` / ``SELF_REVIEW``, 404 ``NOT_QUARANTINED``, 409
        ``ALREADY_REVIEWED``, 400 naming a bad field, 401 as for a recall, 503 when the database is down; audited
        (purpose ``review``)."""
        try:
            request = held_request(body)
            async with self._read():
                reader, problem = await self._reader(body, request.principal)
                if problem is not None:
                    return _unauthorised(problem)
                async with self._lookup_lock:
                    self._lookup = self._lookup or await self._c.pg()
                    row = await held_review(self._lookup, request.command_id)
                refusal = held_refusal(request.principal, reader.record, row, request.command_id)
                if refusal is not None or row is None:
                    status, code, message = refusal or (404, "NOT_QUARANTINED", "no held write")
                    field = "principal" if status == 403 else "command_id"
                    return Reply(status, {"error": message, "code": code, "field": field})
                found = await lookup_held(row, self._c.keyring(), self._c.codec,
                                          self._c.settings.topic("commands"))
        except ValidationError as exc:
            return _bad_request(exc)
        except DB_ERRORS as exc:
            self._lookup = self._recaller = None
            return unavailable("database", exc)
        record = held_audited(self._c.digest_key, request.principal, found, datetime.now(UTC))
        audit = Outbound("audit", request.principal.encode(), self._c.codec.encode("ReadAudited", record))
        return await _audited(self._publish([audit]), Reply(200, found))

    async def _recall(self, r: RecallRequest, reader: ReaderContext, embedding: QueryEmbedding | None = None
                      ) -> Recalled:
        found = await (await self.recaller()).recall(r.principal, r.query, r.k, r.as_of, r.known_at, r.purpose,
                                                     freshness=r.freshness, include_untrusted=r.include_untrusted,
                                                     mode=r.mode, min_score=r.min_score, reader=reader,
                                                     recency=r.recency, repeats=r.repeats, decompose=r.decompose,
                                                     embedding=embedding, every_version=r.every_version)
        return found if isinstance(found, Recalled) else Recalled(found, r.min_score)  # a plain list: no floor report

    async def _audit(self, r: RecallRequest, found: list[RecalledMemory]) -> None:
        """Append the read to the audit topic (ids only) and batch the uses (MemoryUsed, Eq. 3)."""
        now = datetime.now(UTC)
        ms = now_ms()
        codec = self._c.codec
        record = read_audited(self._c.digest_key, r.principal, r.purpose, r.query, found, r.as_of, r.known_at, now)
        out = [Outbound("audit", r.principal.encode(), codec.encode("ReadAudited", record))]
        batches = []
        if r.known_at is None and r.as_of is None and not r.every_version:  # a use of current memory resets its clock
            batches = self.usage.add_many([m.memory_id for m in found], ms, ms)
        await self._publish(out + used_records(codec.encode, [*batches, self.usage.poll(ms)]))

    async def flush_usage(self) -> None:
        """Publish the pending ``MemoryUsed`` batch once it is due, even without further reads."""
        await self._publish(used_records(self._c.codec.encode, [self.usage.poll(now_ms())]))

    async def decisions(self, body: Any) -> Reply:
        """``POST /decisions`` with ``{"command_ids": [...]}``: 200 ``{"decisions": {command_id:
        {outcome, reasons, memory_id, memory_ids, command_type, principal, subject, gate_version, policy_version,
        position, decided_at, review}}}`` for the decided ones (undecided ids are absent; ``review`` is the
        review of a quarantined write as it stands now, else ``null``); 400 naming a bad field."""
        try:
            ids = decision_ids(body)
        except ValidationError as exc:
            return _bad_request(exc)
        async with self._lookup_lock:
            try:
                if self._lookup is None:
                    self._lookup = await self._c.pg()
                found = await find(self._lookup, ids)
            except DB_ERRORS as exc:
                self._lookup = None
                return unavailable("database", exc)
        return Reply(200, {"decisions": {cid: self._decision_json(f.decided) | {"review": f.review}
                                          for cid, f in found.items()}})

    def _decision_json(self, raw: bytes) -> dict[str, Any]:
        _, d = self._c.codec.decode(raw)
        return {"outcome": d["outcome"], "reasons": d["reasons"], "memory_id": d["memory_id"],
                "memory_ids": d.get("memory_ids") or [], "deferred_ids": d.get("deferred_ids") or [],
                "command_type": d["command_type"], "principal": d.get("principal"), "subject": d.get("subject"),
                "gate_version": d["gate_version"],
                "policy_version": d["policy_version"], "position": d["position"],
                "decided_at": d["decided_at"].isoformat()}

    async def index_count(self, query: Mapping[str, str]) -> Reply:
        """``GET /index/count``: points in the derived index, optionally of one ``memory_id`` or ``command_id``."""
        conds = tuple(FieldIn(key, (query[key],)) for key in ("memory_id", "command_id") if query.get(key))
        where = Filter(must=conds) if conds else None
        return Reply(200, {"count": await asyncio.to_thread(self._c.index().count, where)})

    async def reconcile(self) -> Reply:
        """``POST /reconcile``: one reconciliation now (SSGM Eq. 7); 200 with the ``ReconciliationRun``
        record, 404 when this worker does not reconcile."""
        if self._reconciler is None:
            return Reply(404, {"error": "this worker holds no projections to reconcile"})
        run = await self._reconciler()
        return Reply(200, {**run, "started_at": run["started_at"].isoformat()})

    async def switch(self, body: Any) -> Reply:
        """``POST /switch`` with ``{"rebuilt": "<namespace>"}``: replace this worker's projections by
        that rebuild of the same ledger in one step (:mod:`memwarden.processors.rebuild`); 200 with
        what was done, 400 naming a bad field, 404 when this worker cannot switch."""
        if self._switcher is None:
            return Reply(404, {"error": "this worker does not run both the gate and the projector: it cannot switch"})
        rebuilt = body.get("rebuilt") if isinstance(body, dict) else None
        if not isinstance(rebuilt, str) or not rebuilt:
            return Reply(400, {"error": "rebuilt: a namespace name is required", "field": "rebuilt"})
        try:
            return Reply(200, await self._switcher(rebuilt))
        except ValidationError as exc:
            return _bad_request(exc)

    def health(self, roles: Sequence[str]) -> Reply:
        """``GET /health`` (liveness): the process answers; its roles and namespace."""
        return Reply(200, {"ok": True, "roles": list(roles), "prefix": self._c.settings.topic_prefix})

    async def ready(self, roles: Sequence[str], agents: Mapping[str, Mapping[str, Any]]) -> Reply:
        """``GET /ready`` (readiness): 200 only when the database answers, the broker answers, every
        agent of the worker's roles is running (``agents``: name -> ``{"state": "running" |
        "retrying", "since", "reason"}``) and no command has waited for the gate longer than
        ``MAX_UNDECIDED_S``; the body also gives the ``lag`` per stage (records) and
        ``oldest_undecided_s``. 503 with what is not, and ``Retry-After``."""
        s = self._c.settings
        checks: dict[str, Any] = {"database": await _database_answers(s), "broker": await _broker_answers(s)}
        states = {name: dict(agents.get(name, {"state": "starting"})) for name in roles}
        ready = checks["database"] is True and checks["broker"] is True and all(
            a["state"] == "running" for a in states.values())
        work: dict[str, Any] = {"lag": None, "oldest_undecided_s": None}
        if ready:
            try:
                work = await asyncio.wait_for(asyncio.to_thread(backlog, s, self._c.index_label), 8.0)
            except (*DB_ERRORS, StackUnavailable, TimeoutError) as exc:
                work["error"] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            oldest = work.get("oldest_undecided_s")
            ready = "error" not in work and (oldest is None or oldest <= MAX_UNDECIDED_S)
        body = {"ready": ready, **checks, "agents": states, **work, "roles": list(roles), "prefix": s.topic_prefix}
        return Reply(200, body) if ready else Reply(503, body, {"Retry-After": str(RETRY_AFTER_S)})


async def _database_answers(settings: Any) -> bool | str:
    """``True``, or why not (a fresh connection and ``SELECT 1`` within 2 s)."""
    try:
        conn = await asyncio.wait_for(psycopg.AsyncConnection.connect(settings.postgres_dsn, connect_timeout=2), 3)
        try:
            await conn.execute("SELECT 1")
        finally:
            await conn.close()
        return True
    except (*DB_ERRORS, TimeoutError, OSError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


async def _broker_answers(settings: Any) -> bool | str:
    """``True``, or why not (the cluster's metadata within 2 s, through
    :func:`memwarden.ops.topics.admin_client`)."""
    from confluent_kafka import KafkaException

    from memwarden.ops.topics import admin_client

    def probe() -> bool | str:
        try:
            admin_client(settings).list_topics(timeout=2)
            return True
        except KafkaException as exc:
            return str(exc)

    return await asyncio.to_thread(probe)

