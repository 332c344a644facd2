"""The Faust worker: the write gate, the projections and the read endpoint, wired to topics.

Roles (``memwarden worker --role gate --role projector``; both by default):

* ``gate`` — consumer of the commands topic (the ledger); publishes decisions, events, dead letters.
* ``projector`` — consumer of the events topic; Postgres profile rows and vector-index points; owns
  the embedded Qdrant Edge shard and serves ``POST /recall`` and ``GET /health`` on 127.0.0.1.

Agents only wire: every decision is in :mod:`memwarden.commands.gate`, every projection in
:mod:`memwarden.projections`.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import faust
from faust.web import Request, Response, View

from memwarden.bootstrap import Container
from memwarden.commands.freshness import UsageBatcher
from memwarden.commands.gate import Position
from memwarden.commands.read_auth import ReadAuthProblem, check_request
from memwarden.crypto import open_content
from memwarden.errors import DecodeError, ValidationError
from memwarden.processors.gate_processor import GateProcessor, Inbound, Outbound
from memwarden.projections.index_projector import EmbeddingProjector
from memwarden.projections.profile_projector import EventIn, ProfileProjector, save_offsets
from memwarden.projections.recall import DEFAULT_PURPOSE, READ_POLICY_VERSION, Recaller, check_query
from memwarden.projections.vector_index import FieldIn, Filter
from memwarden.settings import Settings

log = logging.getLogger("memwarden.worker")
BATCH = 256
WITHIN_S = 0.05


def _raw_topic(app: faust.App, name: str) -> Any:
    return app.topic(name, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw",
                     internal=False)


def _position(event: Any) -> Position:
    msg = event.message
    return Position(msg.topic, msg.partition, msg.offset)


def app_id(settings: Settings, roles: Sequence[str]) -> str:
    """Faust app id, which is also the consumer group id, of a worker with ``roles``."""
    return f"{settings.topic_prefix}-{'-'.join(sorted(roles))}"


def build_app(container: Container, roles: Sequence[str]) -> faust.App:
    """A Faust app for ``roles`` over the container's clients. Connects nothing until it runs."""
    s = container.settings
    app = faust.App(
        app_id(s, roles),
        broker=f"kafka://{s.bootstrap_servers}",
        store="memory://",
        autodiscover=False,
        topic_disable_leader=True,
        consumer_auto_offset_reset="earliest",
        producer_acks=-1,
        web_enabled="projector" in roles,
        web_host=s.worker_host,
        web_port=s.worker_port,
        web_in_thread=False,
        datadir=str(s.data_dir / "faust" / s.topic_prefix),
        broker_commit_interval=1.0,
        broker_session_timeout=s.session_timeout_s,
        broker_heartbeat_interval=min(1.0, s.session_timeout_s / 5),
        stream_wait_empty=False,
    )
    topics = {name: _raw_topic(app, s.topic(name)) for name in ("commands", "decisions", "events", "deadletter",
                                                                 "keys", "principals", "audit")}

    async def publish(records: Sequence[Outbound]) -> None:
        futures = [await topics[r.topic].send(key=r.key, value=r.value, headers=list(r.headers) or None)
                   for r in records]
        for fut in futures:
            await fut

    if "gate" in roles:
        @app.agent(topics["commands"], name="gate")
        async def gate(stream: Any) -> None:
            processor = GateProcessor(container.codec, container.keyring(), await container.pg(), container.limits,
                                      container.trust_anchor, container.digest_key, s.gate_mode)
            tracking = await container.pg()
            async for batch in stream.take_events(BATCH, within=WITHIN_S):
                items = [Inbound(e.message.key, e.message.value, _position(e)) for e in batch]
                await publish(await processor.handle(items))
                nxt: dict[int, int] = {}
                for i in items:
                    nxt[i.position.partition] = max(nxt.get(i.position.partition, 0), i.position.offset + 1)
                async with tracking.transaction(), tracking.cursor() as cur:
                    await save_offsets(cur, "gate", s.topic("commands"), nxt)

    if "projector" in roles:
        @app.agent(topics["events"], name="projector")
        async def projector(stream: Any) -> None:
            profile = ProfileProjector(await container.pg(), s.topic("events"))
            vectors = EmbeddingProjector(container.embedder(), container.index(), await container.pg(),
                                         s.topic("events"), f"index:{container.index_label}")
            async for batch in stream.take_events(BATCH, within=WITHIN_S):
                decoded = await _decode_events(container, batch)
                shredded = await profile.apply(decoded)
                await vectors.apply(decoded)
                if shredded:
                    await publish([Outbound("keys", k.encode(), None) for k in shredded])

        recaller_box: dict[str, Recaller] = {}

        async def recaller() -> Recaller:
            if "r" not in recaller_box:
                recaller_box["r"] = Recaller(container.embedder(), container.index(), await container.pg())
            return recaller_box["r"]

        usage = UsageBatcher(max_items=256, max_wait_ms=1000)

        async def audit_and_use(principal: str, purpose: str, query: str, found: list[Any],
                                as_of: datetime | None, known_at: datetime | None) -> None:
            """Append the read to the audit topic (ids only) and batch the uses (MemoryUsed, Eq. 3)."""
            now = datetime.now(UTC)
            now_ms = int(now.timestamp() * 1000)
            record = {
                "read_id": str(uuid.uuid4()), "principal": principal, "purpose": purpose,
                "query_hash": hmac.new(container.digest_key, query.encode(), hashlib.sha256).hexdigest(),
                "returned": [m.memory_id for m in found],
                "positions": [{"topic": m.ledger_topic, "partition": m.ledger_partition, "offset": m.ledger_offset}
                              for m in found],
                "policy_version": READ_POLICY_VERSION, "as_of": as_of, "known_at": known_at, "read_at": now,
            }
            out = [Outbound("audit", principal.encode(), container.codec.encode("ReadAudited", record))]
            batches = []
            if known_at is None and as_of is None:  # a use of current memory resets its freshness clock
                batches = usage.add_many([m.memory_id for m in found], now_ms, now_ms)
            await publish(out + used_events([*batches, usage.poll(now_ms)]))

        def used_events(batches: list[Any]) -> list[Outbound]:
            return [Outbound("events", b"usage", container.codec.encode("MemoryUsed", {
                "event_id": str(uuid.uuid4()),
                "uses": [{"memory_id": u.memory_id, "used_at": datetime.fromtimestamp(u.used_at_ms / 1000, UTC)}
                         for u in batch]})) for batch in batches if batch]

        @app.timer(1.0)
        async def flush_usage() -> None:
            """Publish the pending ``MemoryUsed`` batch once it is due, even without further reads."""
            await publish(used_events([usage.poll(int(datetime.now(UTC).timestamp() * 1000))]))

        async def authenticate(body: Any) -> ReadAuthProblem | None:
            """Verify a signed request (always when signed; unsigned ones only pass when optional)."""
            if not isinstance(body, dict):
                raise ValidationError("body", "must be a JSON object")
            if "auth" not in body and s.read_auth == "optional":
                return None
            principal = body.get("principal")
            anchor = container.trust_anchor
            record = anchor if principal == anchor.principal_id else (
                await (await recaller()).registered(principal) if isinstance(principal, str) else None)
            return check_request(body, record, int(datetime.now(UTC).timestamp() * 1000))

        def _time(body: dict[str, Any], key: str) -> datetime | None:
            value = body.get(key)
            if value is None:
                return None
            try:
                return datetime.fromisoformat(value)
            except (TypeError, ValueError):
                raise ValidationError(key, "must be an ISO-8601 time with a UTC offset") from None

        @app.page("/recall")
        class RecallView(View):
            async def post(self, request: Request) -> Response:
                try:
                    body = await request.json()
                    if not isinstance(body, dict):
                        raise ValidationError("body", "must be a JSON object")
                    as_of, known_at = _time(body, "as_of"), _time(body, "known_at")
                    purpose = body.get("purpose") or DEFAULT_PURPOSE
                    check_query(body.get("principal"), body.get("query"), body.get("k", 10), as_of, known_at,
                                purpose, body.get("mode") or "hybrid")  # a malformed request is a 400 first
                    problem = await authenticate(body)
                    if problem is not None:
                        return self.json({"error": f"{problem.code}: {problem.message}", "code": problem.code,
                                          "field": "auth"}, status=401)
                    found = await (await recaller()).recall(
                        body.get("principal"), body.get("query"), body.get("k", 10), as_of, known_at, purpose,
                        freshness=body.get("freshness", True) is not False,
                        include_untrusted=body.get("include_untrusted", False) is True,
                        mode=body.get("mode") or "hybrid")
                except ValidationError as exc:
                    return self.json({"error": str(exc), "field": exc.field}, status=400)
                except (ValueError, TypeError, AttributeError) as exc:  # AttributeError: a body that is no object
                    return self.json({"error": f"bad request: {exc}"}, status=400)
                await audit_and_use(body["principal"], purpose, body["query"], found, as_of, known_at)
                return self.json({"memories": [m.to_json() for m in found]})

        @app.page("/index/count")
        class IndexCountView(View):
            """Points in the derived index, optionally for one ``memory_id`` or ``command_id``."""

            async def get(self, request: Request) -> Response:
                conds = tuple(FieldIn(key, (request.query[key],)) for key in ("memory_id", "command_id")
                              if request.query.get(key))
                where = Filter(must=conds) if conds else None
                return self.json({"count": await asyncio.to_thread(container.index().count, where)})

        @app.page("/health")
        class HealthView(View):
            async def get(self, request: Request) -> Response:
                return self.json({"ok": True, "roles": list(roles), "prefix": s.topic_prefix})

    return app


async def _decode_events(container: Container, batch: Sequence[Any]) -> list[EventIn]:
    out: list[EventIn] = []
    key_ids: list[str] = []
    for e in batch:
        try:
            name, record = container.codec.decode(e.message.value)
        except DecodeError as exc:  # the gate wrote these; a bad one is logged and skipped
            log.error("undecodable event at %s: %s", _position(e), exc)
            continue
        out.append(EventIn(name, record, _position(e)))
        if name == "MemoryRecorded":
            key_ids.append(record["content"]["key_id"])
    if key_ids:
        keys = await asyncio.to_thread(container.keyring().lookup, key_ids)
        out = [_with_text(ev, keys) for ev in out]
    return out


def _with_text(event: EventIn, keys: dict[str, bytes | None]) -> EventIn:
    if event.name != "MemoryRecorded":
        return event
    return EventIn(event.name, event.record, event.position, open_content(event.record["content"], keys))
