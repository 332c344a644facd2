"""The topics of a namespace, created with explicit configs (partitions, retention, compaction).

| topic | cleanup | why |
|---|---|---|
| commands | delete, retention -1 | the immutable episodic ledger K_ledger (SSGM §6.2); kept forever |
| decisions | delete, retention -1 | every gate decision, kept for audit |
| events | delete, retention -1 | admitted events; projections rebuild from it |
| keys | compact, rolled | per-record data keys; a tombstone shreds a key (crypto-shredding); segments roll and
  compact within ``keys_compaction_lag_s`` (a roll marker keeps a quiet topic rolling), old files go 1 s later |
| deadletter | delete, 30 days | undecodable or invalid input with the reason, never dropped silently |
| principals | compact | the principal registry: latest ``PrincipalState`` per principal id (issue 3) |
| audit | delete, retention -1 | one ``ReadAudited`` record per recall: ids only, never content (issue 4) |
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from memwarden.errors import StackUnavailable
from memwarden.settings import Settings

_FOREVER = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}


@dataclass(frozen=True)
class TopicSpec:
    """Logical name, config map and whether it is keyed by subject (co-partitioned)."""

    name: str
    config: dict[str, str]


def keys_config(settings: Settings) -> dict[str, str]:
    """The keys topic's config: compacted, and a shredded key's record on disk for a bounded time.

    The active segment is never compacted and rolls only when a record is appended past
    ``segment.ms`` (for a compacted topic the smaller of it and ``max.compaction.lag.ms``), so both
    are ``keys_compaction_lag_s`` and the gate worker appends a roll marker that often
    (:data:`ROLL_MARKER`); the cleaner then runs within a second (dirty ratio 0.01, broker
    ``log.cleaner.backoff.ms`` 1000) and the cleaned segment's old files are deleted after
    ``file.delete.delay.ms`` (1 s). A tombstone itself (a key id, no key) stays
    ``delete.retention.ms`` so that key rings see it."""
    lag_ms = str(int(settings.keys_compaction_lag_s * 1000))
    return {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "segment.ms": lag_ms,
            "max.compaction.lag.ms": lag_ms, "min.compaction.lag.ms": "0", "delete.retention.ms": "60000",
            "file.delete.delay.ms": "1000"}


#: Key of the tombstones the gate worker appends to every keys partition so that segments roll.
ROLL_MARKER = b"__roll__"


def topic_specs(settings: Settings | None = None) -> tuple[TopicSpec, ...]:
    """Every topic of a namespace with its config."""
    return (
        TopicSpec("commands", dict(_FOREVER, **{"max.message.bytes": "1048576"})),
        TopicSpec("decisions", dict(_FOREVER)),
        TopicSpec("events", dict(_FOREVER)),
        TopicSpec("keys", keys_config(settings or Settings())),
        TopicSpec("deadletter", {"cleanup.policy": "delete", "retention.ms": str(30 * 24 * 3600 * 1000)}),
        TopicSpec("principals", {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
                                 "segment.ms": "60000", "delete.retention.ms": "86400000"}),
        TopicSpec("audit", dict(_FOREVER)),
    )


def admin_client(settings: Settings) -> AdminClient:
    """An admin client of ``settings.bootstrap_servers`` that logs warnings and errors only: librdkafka's
    informational lines ("Purging 1 unserved events from background queue" as it closes) would land on a
    CLI's stderr, whose refusals are one line, or in a worker's log."""
    return AdminClient({"bootstrap.servers": settings.bootstrap_servers, "log_level": 4})


def ensure_topics(settings: Settings, timeout_s: float = 30.0) -> list[str]:
    """Create the namespace's topics that do not exist yet; returns the names created.

    Raises ``StackUnavailable`` if the broker does not answer within ``timeout_s`` seconds.
    """
    admin = admin_client(settings)
    try:
        existing = set(admin.list_topics(timeout=timeout_s).topics)
    except Exception as exc:
        raise StackUnavailable(f"Kafka at {settings.bootstrap_servers} does not answer: {exc}") from exc
    wanted = [
        NewTopic(settings.topic(s.name), num_partitions=settings.partitions,
                 replication_factor=settings.replication_factor, config=s.config)
        for s in topic_specs(settings)
        if settings.topic(s.name) not in existing
    ]
    _align_keys(admin, settings, existing, timeout_s)
    if not wanted:
        return []
    created = []
    for name, future in admin.create_topics(wanted, request_timeout=timeout_s).items():
        try:
            future.result()
            created.append(name)
        except Exception as exc:  # a concurrent creator is fine
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise StackUnavailable(f"cannot create topic {name}: {exc}") from exc
    return created


def _align_keys(admin: AdminClient, settings: Settings, existing: set[str], timeout_s: float) -> None:
    """Bring an existing keys topic's config to :func:`keys_config` (created by an older version)."""
    name = settings.topic("keys")
    if name not in existing:
        return
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in keys_config(settings).items()]
    for future in admin.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, name,
                                                                  incremental_configs=entries)]).values():
        try:
            future.result(timeout_s)
        except Exception as exc:
            raise StackUnavailable(f"cannot set the config of {name}: {exc}") from exc


def delete_topics(settings: Settings, timeout_s: float = 30.0) -> None:
    """Delete every topic of the namespace (evaluation and test clean-up). A namespace that reads
    another's ledger (a replay) owns no topics: nothing is deleted."""
    if not settings.owns_ledger:
        return
    admin = admin_client(settings)
    own = {settings.topic(spec.name) for spec in topic_specs(settings)}
    names = [t for t in admin.list_topics(timeout=timeout_s).topics if t in own]
    if names:
        for future in admin.delete_topics(names, operation_timeout=timeout_s).values():
            with contextlib.suppress(Exception):  # already gone
                future.result()
