"""Where a record sits on the ledger: topic, partition, offset (Kafka's coordinates)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Position:
    """A ledger position: ``topic`` name, ``partition`` number and ``offset`` within it."""

    topic: str
    partition: int
    offset: int

    def as_record(self) -> dict[str, str | int]:
        """The Avro ``LedgerPosition`` record form."""
        return {"topic": self.topic, "partition": self.partition, "offset": self.offset}


@dataclass(frozen=True)
class Outbound:
    """One record to publish: logical topic name (``commands``, ``decisions``, ``events``, ``keys``,
    ``principals``, ``audit``, ``deadletter``), key, value (``None`` = tombstone), headers."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
