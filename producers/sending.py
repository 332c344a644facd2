"""Delivering records to Kafka with confluent-kafka's idempotent producer (``acks=all``): a batch is
produced, flushed, and answered with the position of each record, or ``StackUnavailable``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaError, Producer

from memwarden.errors import StackUnavailable
from memwarden.ops.kafka_log import KAFKA_LOG
from memwarden.producers.building import Receipt

#: The partitioner of every producer of ours: murmur2 of the key, as the Java client and the worker's
#: aiokafka producer compute it. One key lands in one partition whoever writes it: a data key and the
#: tombstone that shreds it (compaction is per partition: in two partitions the key would never be
#: removed from disk, and a reader could see the tombstone before the key), a subject's commands and
#: the decisions and events about it.
PARTITIONER = "murmur2_random"


def producer(bootstrap_servers: str) -> Producer:
    """The idempotent, ``acks=all``, lz4 producer every client uses (:data:`PARTITIONER`)."""
    return Producer({
        "bootstrap.servers": bootstrap_servers,
        "partitioner": PARTITIONER,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "compression.type": "lz4",
        "message.max.bytes": 1_048_576,
        "logger": KAFKA_LOG,
    })


def send(p: Producer, records: Sequence[tuple[str, bytes | None, bytes | None]], ids: Sequence[str],
         timeout_s: float = 60.0) -> list[Receipt]:
    """Produce ``records`` (topic, key, value) and wait for every acknowledgement; returns one
    receipt per record (``ids[i]`` as its command id, positions from the broker). Raises
    ``StackUnavailable`` when Kafka does not acknowledge within ``timeout_s`` seconds or refuses one."""
    results: list[Receipt | KafkaError | None] = [None] * len(records)

    def on_delivery(i: int) -> Any:
        def report(err: KafkaError | None, msg: Any) -> None:
            results[i] = err if err is not None else Receipt(ids[i], "", msg.topic(), msg.partition(), msg.offset())
        return report

    for i, (topic, key, value) in enumerate(records):
        while True:
            try:
                p.produce(topic, key=key, value=value, on_delivery=on_delivery(i))
                break
            except BufferError:
                p.poll(0.1)
    left = p.flush(timeout_s)
    if left:
        raise StackUnavailable(f"{left} records not acknowledged by Kafka within {timeout_s}s")
    errors = [r for r in results if isinstance(r, KafkaError) or r is None]
    if errors:
        raise StackUnavailable(f"Kafka refused {len(errors)} records: {errors[0]}")
    return [r for r in results if isinstance(r, Receipt)]
