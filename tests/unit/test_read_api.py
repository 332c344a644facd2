"""The read API's wiring below the integration suite: request parsing names the bad field,
authentication answers 401 with its reason code, and every answered recall leaves a ``ReadAudited``
record (ids and positions, never content) and ``MemoryUsed`` batches, with the real Avro codec.
The recaller is a stub here; the real one runs against Postgres and the index in tests/integration."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from memwarden.commands.ledger import Outbound
from memwarden.commands.readmodel.query import MAX_K, RecalledMemory
from memwarden.errors import ValidationError
from memwarden.projections.recall import QueryEmbedding, Recaller
from memwarden.read_api.requests import MAX_LOOKUP_IDS, decision_ids, error_code, history_request, recall_request
from memwarden.read_api.service import ReadService
from memwarden.schemas.codec import default_codec
from memwarden.settings import Settings
from memwarden.stores.registry import ReaderContext
from tests import factories as f

CODEC = default_codec()
FOUND = RecalledMemory("00000000-0000-4000-8000-00000000000a", 1, "prefers tea", 0.9, "user:alice", "user:alice",
                       "account:default", "USER_STATEMENT", "chat:1", "2025-07-25T02:00:00+00:00",
                       "2025-07-25T02:00:00+00:00", None, "active", "mw.commands", 3, 17)


@pytest.mark.parametrize(("body", "field"), [
    ([], "body"),
    ({"query": "tea"}, "principal"),
    ({"principal": "user:alice"}, "query"),
    ({"principal": "user:alice", "query": "tea", "k": 0}, "k"),
    ({"principal": "user:alice", "query": "tea", "k": MAX_K + 1}, "k"),
    ({"principal": "user:alice", "query": "tea", "k": True}, "k"),
    ({"principal": "user:alice", "query": "tea", "as_of": "yesterday"}, "as_of"),
    ({"principal": "user:alice", "query": "tea", "known_at": "2025-07-25T02:00:00"}, "known_at"),
    ({"principal": "user:alice", "query": "tea", "mode": "fuzzy"}, "mode"),
    ({"principal": "user:alice", "query": "tea", "purpose": "*"}, "purpose"),
    ({"principal": "user:alice", "query": "tea", "recency": -1}, "recency"),
    ({"principal": "user:alice", "query": "tea", "recency": "high"}, "recency"),
    ({"principal": "user:alice", "query": "tea", "every_version": "yes"}, "every_version"),
    ({"principal": "user:alice", "query": "tea", "every_version": True, "as_of": "2025-07-25T02:00:00+00:00"},
     "every_version"),
])
def test_bad_recall_requests_name_the_field(body: Any, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        recall_request(body)
    assert err.value.field == field


_ALICE = {"principal": "user:alice"}
_MEMORY_ID = "00000000-0000-4000-8000-00000000000a"


@pytest.mark.parametrize(("parse", "body", "code", "field"), [
    (recall_request, {**_ALICE, "query": "tea", "colour": "red"}, "UNKNOWN_FIELD", "colour"),
    (recall_request, {**_ALICE, "query": "tea", "k": 0}, "INVALID_FIELD", "k"),
    (recall_request, {**_ALICE, "query": "tea", "k": "5"}, "INVALID_FIELD", "k"),
    (recall_request, {**_ALICE, "query": "tea", "include_untrusted": "yes"}, "INVALID_FIELD", "include_untrusted"),
    (recall_request, {**_ALICE, "query": "tea", "freshness": 0}, "INVALID_FIELD", "freshness"),
    (recall_request, _ALICE, "MISSING_FIELD", "query"),
    (recall_request, {"query": "tea"}, "MISSING_FIELD", "principal"),
    (recall_request, [], "INVALID_FIELD", "body"),
    (history_request, {**_ALICE, "memory_id": _MEMORY_ID, "colour": "red"}, "UNKNOWN_FIELD", "colour"),
    (history_request, {**_ALICE, "memory_id": "nope"}, "INVALID_FIELD", "memory_id"),
    (history_request, _ALICE, "MISSING_FIELD", "memory_id"),
    (history_request, {**_ALICE, "memory_id": _MEMORY_ID, "include_untrusted": 1}, "INVALID_FIELD",
     "include_untrusted"),
])
def test_bad_read_bodies_carry_the_rest_apis_code(parse: Any, body: Any, code: str, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse(body)
    assert (error_code(err.value), err.value.field) == (code, field)


def test_a_signed_body_takes_the_signature_keys() -> None:
    signature = {"auth": {"key_id": "k", "signature": "s"}, "signed_at_ms": 1, "nonce": "00"}
    assert recall_request({**_ALICE, "query": "tea", **signature}).query == "tea"
    assert history_request({**_ALICE, "memory_id": _MEMORY_ID, **signature}).memory_id == _MEMORY_ID


def test_a_recall_request_takes_its_defaults() -> None:
    r = recall_request({"principal": "user:alice", "query": "tea"})
    assert (r.k, r.purpose, r.mode, r.freshness, r.include_untrusted, r.as_of) == (10, "general", "hybrid", True,
                                                                                  False, None)
    assert r.recency is None  # decided from the query
    assert recall_request({"principal": "user:alice", "query": "tea", "recency": 0}).recency == 0.0


@pytest.mark.parametrize(("body", "field"), [
    ({}, "command_ids"), ({"command_ids": "x"}, "command_ids"), ({"command_ids": ["nope"]}, "command_ids[0]"),
    ({"command_ids": ["00000000-0000-4000-8000-000000000001"] * (MAX_LOOKUP_IDS + 1)}, "command_ids"),
])
def test_bad_decision_lookups_name_the_field(body: Any, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        decision_ids(body)
    assert err.value.field == field


@dataclass
class _Container:
    settings: Settings
    codec: Any = CODEC
    digest_key: bytes = b"k" * 32
    trust_anchor: Any = None


class _Recaller:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.readers: list[Any] = []
        self.unknown: set[str] = set()
        self.claimed: set[bytes] = set()
        self.started: list[QueryEmbedding] = []
        self.embeddings: list[QueryEmbedding | None] = []

    async def reader(self, principal: str, served: Any = None) -> ReaderContext:
        first_use = None
        if served is not None:  # the shared replay window, as the registry statement claims it
            first_use = served.digest not in self.claimed
            self.claimed.add(served.digest)
        return ReaderContext(principal, None if principal in self.unknown else f.principal(principal),
                             frozenset({"r"}), (), first_use)

    def start_embedding(self, query: str, mode: str = "hybrid", decompose: bool = True) -> QueryEmbedding:
        async def embed() -> list[list[float]]:
            await asyncio.sleep(3600)  # never finishes by itself: a recall takes it, a refusal cancels it
            return [[1.0]]

        self.started.append(QueryEmbedding(query, (), asyncio.create_task(embed())))
        return self.started[-1]

    async def recall(self, *args: Any, **kw: Any) -> list[RecalledMemory]:
        self.calls.append(args)
        self.readers.append(kw.get("reader"))
        self.embeddings.append(kw.get("embedding"))
        return [FOUND]


def _service(read_auth: str) -> tuple[ReadService, list[Outbound], _Recaller]:
    sent: list[Outbound] = []

    async def publish(records: Any) -> None:
        sent.extend(records)

    recaller = _Recaller()
    container = _Container(Settings(read_auth=read_auth), trust_anchor=f.principal("service:admin"))
    return ReadService(container, publish, recaller), sent, recaller  # type: ignore[arg-type]


def test_an_unsigned_read_is_refused_when_authentication_is_required() -> None:
    service, sent, recaller = _service("required")
    reply = asyncio.run(service.recall({"principal": "user:alice", "query": "tea"}))
    assert reply.status == 401 and reply.body["code"] == "READ_UNSIGNED" and reply.body["field"] == "auth"
    assert sent == [] and recaller.calls == []


def test_a_malformed_request_is_a_400_before_authentication() -> None:
    service, sent, _ = _service("required")
    reply = asyncio.run(service.recall({"principal": "user:alice", "query": "tea", "k": 1000}))
    assert reply.status == 400 and reply.body["field"] == "k" and sent == []


def test_a_signed_read_is_answered_audited_by_ids_and_counted_as_a_use() -> None:
    from memwarden.commands.read_auth import sign_request
    from memwarden.epoch import now_ms

    service, sent, recaller = _service("required")
    body = sign_request({"principal": "user:alice", "query": "what does alice drink?"}, f.signer("user:alice"),
                        now_ms())
    reply = asyncio.run(service.recall(body))
    assert reply.status == 200 and reply.body["memories"][0]["memory_id"] == FOUND.memory_id
    assert recaller.calls and [o.topic for o in sent] == ["audit"]
    name, audit = CODEC.decode(sent[0].value)
    assert name == "ReadAudited" and audit["returned"] == [FOUND.memory_id]
    assert audit["positions"] == [{"topic": "mw.commands", "partition": 3, "offset": 17}]
    raw = sent[0].value
    assert b"tea" not in raw and b"drink" not in raw  # ids and a keyed digest of the query, never text
    assert len(service.usage) == 1  # the use waits for its batch to be due
    service.usage.max_wait_ms = 0
    asyncio.run(service.flush_usage())
    name, used = CODEC.decode(sent[-1].value)
    assert sent[-1].topic == "events" and name == "MemoryUsed" and used["uses"][0]["memory_id"] == FOUND.memory_id


def test_the_recall_uses_the_reader_context_authentication_read() -> None:
    from memwarden.commands.read_auth import sign_request
    from memwarden.epoch import now_ms

    service, _, recaller = _service("required")
    body = sign_request({"principal": "user:alice", "query": "tea"}, f.signer("user:alice"), now_ms())
    assert asyncio.run(service.recall(body)).status == 200
    (reader,) = recaller.readers
    assert reader.record.principal_id == "user:alice" and reader.roles == {"r"}  # one read serves both


def test_the_query_embeds_while_the_reader_is_authenticated_and_the_recall_takes_it() -> None:
    from memwarden.commands.read_auth import sign_request
    from memwarden.epoch import now_ms

    service, _, recaller = _service("required")
    body = sign_request({"principal": "user:alice", "query": "tea"}, f.signer("user:alice"), now_ms())
    assert asyncio.run(service.recall(body)).status == 200
    (started,) = recaller.started
    assert started.query == "tea" and recaller.embeddings == [started]


def test_a_refused_read_cancels_the_embedding_it_started() -> None:
    from memwarden.commands.read_auth import sign_request
    from memwarden.epoch import now_ms

    service, sent, recaller = _service("required")
    recaller.unknown.add("user:mallory")
    body = sign_request({"principal": "user:mallory", "query": "tea"}, f.signer("user:mallory"), now_ms())
    unsigned = {"principal": "user:alice", "query": "tea"}

    async def both() -> list[int]:
        return [(await service.recall(b)).status for b in (body, unsigned)]

    assert asyncio.run(both()) == [401, 401]
    assert len(recaller.started) == 2 and all(e.task.cancelled() for e in recaller.started)
    assert recaller.calls == [] and sent == []


class _Embedder:
    def __init__(self) -> None:
        self.texts: list[list[str]] = []

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        self.texts.append(list(texts))
        return np.ones((len(texts), 4), dtype=np.float32) / 2.0


class _EmptyIndex:
    def query(self, *args: Any, **kw: Any) -> list[Any]:
        return []


def test_a_recall_takes_an_embedding_started_ahead_only_for_its_own_texts() -> None:
    embedder = _Embedder()
    recaller = Recaller(embedder, _EmptyIndex(), None, keys=None)  # type: ignore[arg-type]  # no hit: no Postgres
    reader = ReaderContext("user:alice", f.principal("user:alice"), frozenset(), ())

    async def run() -> tuple[QueryEmbedding, QueryEmbedding]:
        same = recaller.start_embedding("tea")
        await recaller.recall("user:alice", "tea", reader=reader, embedding=same)
        other = recaller.start_embedding("coffee")
        await recaller.recall("user:alice", "tea", reader=reader, embedding=other)
        return same, other

    same, other = asyncio.run(run())
    assert same.task.done() and not same.task.cancelled()
    assert other.task.cancelled() or embedder.texts.count(["coffee"]) == 1  # cancelled, or it had already run
    assert embedder.texts.count(["tea"]) == 2  # the first recall took its own; the second embedded "tea" itself


def test_a_principal_the_registry_does_not_know_is_refused() -> None:
    from memwarden.commands.read_auth import sign_request
    from memwarden.epoch import now_ms

    service, sent, recaller = _service("required")
    recaller.unknown.add("user:mallory")
    body = sign_request({"principal": "user:mallory", "query": "tea"}, f.signer("user:mallory"), now_ms())
    reply = asyncio.run(service.recall(body))
    assert reply.status == 401 and reply.body["field"] == "auth"
    assert sent == [] and recaller.calls == []


def test_the_trust_anchor_authenticates_by_its_own_record() -> None:
    from memwarden.commands.read_auth import sign_request
    from memwarden.epoch import now_ms

    service, _, recaller = _service("required")
    recaller.unknown.add("service:admin")  # not in the registry: the anchor's record is the container's
    body = sign_request({"principal": "service:admin", "query": "tea"}, f.signer("service:admin"), now_ms())
    assert asyncio.run(service.recall(body)).status == 200


def test_a_reader_context_of_another_principal_is_refused() -> None:
    recaller = Recaller(None, None, None, keys=None)  # type: ignore[arg-type]  # refused before any use
    other = ReaderContext("user:bob", None, frozenset(), ())
    with pytest.raises(ValidationError) as err:
        asyncio.run(recaller.recall("user:alice", "tea", reader=other))
    assert err.value.field == "reader"


def test_a_read_of_the_past_is_audited_but_is_not_a_use() -> None:
    service, sent, _ = _service("optional")
    as_of = datetime(2025, 7, 26, tzinfo=UTC).isoformat()
    reply = asyncio.run(service.recall({"principal": "user:alice", "query": "tea", "as_of": as_of}))
    assert reply.status == 200 and [o.topic for o in sent] == ["audit"] and len(service.usage) == 0
