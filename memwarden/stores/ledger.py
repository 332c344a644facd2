"""Reading the ledger topics directly, outside any consumer group: replay, audit and lag.

A topic is read partition by partition from an offset (0 by default) up to an end offset per
partition (exclusive: the high watermark, or a cut for point-in-time). Nothing is committed; the
reader never writes to the ledger. ``offsets_for_time`` turns a wall time into per-partition offsets
through the broker's time index (the earliest offset whose timestamp is at or after it).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import cast

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from memwarden.commands.ledger import Position
from memwarden.errors import StackUnavailable
from memwarden.settings import Settings


@dataclass(frozen=True)
class LedgerRecord:
    """One record as the broker holds it: position, key, value (``None`` = tombstone), timestamp (ms)."""

    position: Position
    key: bytes | None
    value: bytes | None
    timestamp_ms: int


def _consumer(settings: Settings, **extra: object) -> Consumer:
    # reconnect.backoff.ms: the client reaches the advertised listener through a second connection
    # after the bootstrap one; the default 100 ms backoff costs ~50 ms on every short-lived reader
    return Consumer({"bootstrap.servers": settings.bootstrap_servers, "group.id": f"mw-ledger-{uuid.uuid4()}",
                     "enable.auto.commit": False, "enable.partition.eof": True, "auto.offset.reset": "earliest",
                     "reconnect.backoff.ms": 5, **extra})


# what librdkafka answers while leaders move: the watermark query does not flag these as retriable
_TRANSIENT = frozenset({KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                        KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.REQUEST_TIMED_OUT, KafkaError._TIMED_OUT,
                        KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN})


def high_watermark(consumer: Consumer, topic: str, partition: int, timeout_s: float = 10.0) -> int:
    """The high watermark (next offset to be written) of one partition, asked through ``consumer``.

    A retriable broker answer (``NOT_LEADER_FOR_PARTITION`` while a fresh topic elects its leaders or
    after a broker restart, ``LEADER_NOT_AVAILABLE``, a timed-out request) is asked again with a short
    backoff until ``timeout_s`` seconds have passed; then, or on a fatal answer, ``KafkaException``
    is raised as the client gave it.
    """
    deadline = time.monotonic() + timeout_s
    delay = 0.05
    while True:
        try:
            return int(consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                      timeout=max(0.1, deadline - time.monotonic()))[1])
        except KafkaException as exc:
            err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            transient = err is not None and (err.retriable() or err.code() in _TRANSIENT)
            if not transient or time.monotonic() + delay >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


def partitions(settings: Settings, logical: str, timeout_s: float = 10.0) -> list[int]:
    """The partition numbers of the namespace topic ``logical``; raises ``StackUnavailable`` when the
    broker does not answer or the topic does not exist."""
    consumer = _consumer(settings)
    try:
        topic = settings.topic(logical)
        meta = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            raise StackUnavailable(f"topic {topic} does not exist")
        return sorted(meta.partitions)
    except KafkaException as exc:
        raise StackUnavailable(f"Kafka at {settings.bootstrap_servers} does not answer: {exc}") from exc
    finally:
        consumer.close()


def end_offsets(settings: Settings, logical: str, timeout_s: float = 10.0) -> dict[int, int]:
    """High watermark per partition of the namespace topic ``logical`` (the next offset to be written)."""
    consumer = _consumer(settings)
    topic = settings.topic(logical)
    try:
        return {p: high_watermark(consumer, topic, p, timeout_s) for p in partitions(settings, logical, timeout_s)}
    except KafkaException as exc:
        raise StackUnavailable(f"Kafka at {settings.bootstrap_servers} does not answer: {exc}") from exc
    finally:
        consumer.close()


def ends_of(settings: Settings, logicals: list[str], timeout_s: float = 10.0) -> dict[str, dict[int, int]]:
    """:func:`end_offsets` of several logical topics through one consumer."""
    consumer = _consumer(settings)
    try:
        out: dict[str, dict[int, int]] = {}
        meta = consumer.list_topics(timeout=timeout_s).topics
        for logical in logicals:
            topic = settings.topic(logical)
            info = meta.get(topic)
            if info is None or info.error is not None or not info.partitions:
                raise StackUnavailable(f"topic {topic} does not exist")
            out[logical] = {p: high_watermark(consumer, topic, p, timeout_s) for p in sorted(info.partitions)}
        return out
    except KafkaException as exc:
        raise StackUnavailable(f"Kafka at {settings.bootstrap_servers} does not answer: {exc}") from exc
    finally:
        consumer.close()


def offsets_for_time(settings: Settings, logical: str, ts_ms: int, timeout_s: float = 10.0) -> dict[int, int]:
    """Per partition, the earliest offset whose timestamp is ``>= ts_ms`` (the high watermark when no
    record is that late): the exclusive end of "the topic as it stood at ``ts_ms``"."""
    consumer = _consumer(settings)
    topic = settings.topic(logical)
    try:
        highs = end_offsets(settings, logical, timeout_s)
        found = consumer.offsets_for_times([TopicPartition(topic, p, ts_ms) for p in highs], timeout=timeout_s)
        return {tp.partition: (tp.offset if tp.offset >= 0 else highs[tp.partition]) for tp in found}
    except KafkaException as exc:
        raise StackUnavailable(f"Kafka at {settings.bootstrap_servers} does not answer: {exc}") from exc
    finally:
        consumer.close()


def read(settings: Settings, logical: str, ends: Mapping[int, int], starts: Mapping[int, int] | None = None,
         timeout_s: float = 60.0) -> Iterator[LedgerRecord]:
    """Every record of ``logical`` from ``starts`` (default 0) up to ``ends`` (exclusive), in offset
    order within each partition (partitions interleave). Compacted-away offsets are simply absent.
    Raises ``StackUnavailable`` when the broker stops answering for ``timeout_s`` seconds."""
    yield from read_many(settings, {logical: ends}, {logical: starts or {}}, timeout_s)


def read_many(settings: Settings, ends: Mapping[str, Mapping[int, int]],
              starts: Mapping[str, Mapping[int, int]] | None = None,
              timeout_s: float = 60.0) -> Iterator[LedgerRecord]:
    """:func:`read` over several logical topics at once, through one consumer (one connection set-up
    instead of one per topic); records of different partitions and topics interleave."""
    pending = {(settings.topic(logical), p): ((starts or {}).get(logical, {}).get(p, 0), end)
               for logical, per in ends.items() for p, end in per.items()}
    pending = {k: v for k, v in pending.items() if v[0] < v[1]}
    if not pending:
        return
    consumer = _consumer(settings, **{"fetch.wait.max.ms": 5, "queued.min.messages": 20000})
    try:
        consumer.assign([TopicPartition(topic, p, start) for (topic, p), (start, _) in pending.items()])
        deadline = time.monotonic() + timeout_s
        while pending:
            # a short wait: consume() waits the whole timeout unless it fills the batch, and the
            # partition ends (EOF events) only arrive after the last records
            batch = consumer.consume(1000, 0.01)
            if not batch and time.monotonic() > deadline:
                raise StackUnavailable(f"the ledger stopped answering before {sorted(pending)}")
            for msg in batch:
                key = (msg.topic(), msg.partition())
                if key not in pending:
                    continue
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:  # a compacted tail, or nothing more
                        pending.pop(key, None)
                        continue
                    raise StackUnavailable(f"{key}: {error}")
                deadline = time.monotonic() + timeout_s
                end = pending[key][1]
                # set on every record a consumer returns; the stubs type it Optional (unset before a produce)
                offset = cast(int, msg.offset())
                if offset >= end:
                    pending.pop(key, None)
                    continue
                yield LedgerRecord(Position(key[0], key[1], offset), msg.key(), msg.value(), msg.timestamp()[1])
                if offset + 1 >= end:
                    pending.pop(key, None)
    finally:
        consumer.close()
