"""Seed a worker's consumer group from the projection tracking table before it starts.

The Postgres tracking rows (``projection_offsets``) are the truth of what a projection applied; the
consumer group's committed offsets only say where to resume reading. A group that has never
committed gets, per partition, the tracked next offset (0 when nothing was applied), so a new or
crashed worker resumes exactly where its projection stands instead of relying on offset-reset rules.
"""

from __future__ import annotations

from confluent_kafka import Consumer, TopicPartition

from memwarden.projections.pg import connect
from memwarden.settings import Settings


def seed_group(settings: Settings, group: str, logical_topic: str, projector: str | None) -> dict[int, int]:
    """Commit a start offset for every partition of ``logical_topic`` that ``group`` has not committed.

    Returns the offsets committed (partition → offset). Partitions with a committed offset are left.
    """
    topic = settings.topic(logical_topic)
    tracked: dict[int, int] = {}
    if projector is not None:
        with connect(settings) as conn:
            tracked = dict(conn.execute(
                "SELECT partition, next_offset FROM projection_offsets WHERE projector = %s AND topic = %s",
                (projector, topic)).fetchall())
    consumer = Consumer({"bootstrap.servers": settings.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})
    try:
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        committed = consumer.committed([TopicPartition(topic, p) for p in parts], timeout=10)
        missing = {tp.partition: tracked.get(tp.partition, 0) for tp in committed if tp.offset < 0}
        if missing:
            consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in missing.items()], asynchronous=False)
        return missing
    finally:
        consumer.close()
