"""An operator's read in the CLI's own process: recall over a namespace's projections without a
worker (a replayed, point-in-time namespace has none), audited on its ledger's audit topic like any
read. The embedded index must not be held by a running worker (Edge allows one process per shard)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

from memwarden.bootstrap import Container
from memwarden.commands.ledger import Outbound
from memwarden.commands.readmodel.query import RecalledMemory, check_query
from memwarden.ops.kafka_log import KAFKA_LOG
from memwarden.projections.recall import Recaller
from memwarden.read_api.audit import read_audited
from memwarden.settings import Settings


def publish_now(settings: Settings, records: Sequence[Outbound]) -> None:
    """Send ``records`` to the namespace's ledger topics and wait for the acknowledgements."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": settings.bootstrap_servers, "enable.idempotence": True, "acks": "all",
                         "partitioner": "murmur2_random", "logger": KAFKA_LOG})
    for r in records:
        producer.produce(settings.topic(r.topic), key=r.key, value=r.value, headers=list(r.headers) or None)
    producer.flush(30)


def local_recall(settings: Settings, principal: str, query: str, k: int = 10, as_of: datetime | None = None,
                 known_at: datetime | None = None, purpose: str = "general",
                 mode: str = "hybrid") -> list[RecalledMemory]:
    """Recall as ``principal`` (filtered exactly as through the read API, freshness on) and append
    the ``ReadAudited`` record. Raises ``ValidationError`` for bad arguments."""
    check_query(principal, query, k, as_of, known_at, purpose, mode)
    container = Container(settings)

    async def run() -> list[RecalledMemory]:
        recaller = Recaller(container.embedder(), container.index(), await container.pg(), keys=container.keyring())
        return await recaller.recall(principal, query, k, as_of, known_at, purpose, mode=mode)  # type: ignore[arg-type]

    try:
        found = asyncio.run(run())
        record = read_audited(container.digest_key, principal, purpose, query, found, as_of, known_at,
                              datetime.now(UTC))
        publish_now(settings, [Outbound("audit", principal.encode(), container.codec.encode("ReadAudited", record))])
    finally:
        container.close()
    return found
