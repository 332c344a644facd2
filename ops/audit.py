"""Reading the read-audit topic (issue 4 part 6): who read a memory, when and for what purpose.

The audit topic holds one ``ReadAudited`` record per recall (ids, query hash, purpose, policy
version and ledger positions; never content). :func:`reads_of` scans it from the beginning.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any, cast

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from memwarden.errors import StackUnavailable
from memwarden.schemas.codec import default_codec
from memwarden.settings import Settings
from memwarden.stores.ledger import high_watermark


def audit_records(settings: Settings, timeout_s: float = 30.0) -> Iterator[dict[str, Any]]:
    """Every ``ReadAudited`` record of the namespace, oldest first per partition.

    Raises ``StackUnavailable`` if Kafka does not answer within ``timeout_s`` seconds.
    """
    consumer = Consumer({"bootstrap.servers": settings.bootstrap_servers, "group.id": f"audit-{uuid.uuid4()}",
                         "enable.auto.commit": False})
    topic = settings.topic("audit")
    try:
        meta = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
    except Exception as exc:
        raise StackUnavailable(f"Kafka at {settings.bootstrap_servers} does not answer: {exc}") from exc
    if meta is None or meta.error is not None:
        consumer.close()
        return
    try:
        highs = {p: high_watermark(consumer, topic, p, timeout_s) for p in meta.partitions}
    except KafkaException as exc:
        consumer.close()
        raise StackUnavailable(f"Kafka at {settings.bootstrap_servers} does not answer: {exc}") from exc
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in meta.partitions])
    pending = {p for p, h in highs.items() if h > 0}
    codec = default_codec()
    deadline = time.monotonic() + timeout_s
    try:
        while pending and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            # set on every record a consumer returns; the stubs type them Optional (unset before a produce)
            partition, offset = cast(int, msg.partition()), cast(int, msg.offset())
            if offset + 1 >= highs[partition]:
                pending.discard(partition)
            name, record = codec.decode(msg.value())
            if name == "ReadAudited":
                yield record
    finally:
        consumer.close()


def reads_of(settings: Settings, memory_id: str) -> list[dict[str, Any]]:
    """The audited reads that returned ``memory_id``, oldest first (principal, purpose, read_at,
    query hash, policy version, rank)."""
    out = []
    for r in audit_records(settings):
        if memory_id in r["returned"]:
            out.append({"read_at": r["read_at"].isoformat(), "principal": r["principal"], "purpose": r["purpose"],
                        "rank": r["returned"].index(memory_id) + 1, "query_hash": r["query_hash"],
                        "policy_version": r["policy_version"], "read_id": r["read_id"]})
    return sorted(out, key=lambda x: x["read_at"])
