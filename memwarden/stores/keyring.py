"""The key ring: the compacted keys topic held in memory, for decrypting memory content.

A background thread consumes every partition of the keys topic from the beginning (no consumer
group, nothing committed). A null value (tombstone) removes the key: that is crypto-shredding.
``lookup`` answers deterministically: the client publishes a data key *before* the command that uses
it, so once the ring has consumed up to the log-end offsets read *after* the command arrived, a key
that is still absent was never published or has been shredded.

Threads: the ring's consumer is only ever touched by the ring's own thread (confluent-kafka hangs a
``get_watermark_offsets`` issued from another thread while this one polls, with its timeout
ignored). :meth:`KeyRing.sync` asks a second, never-polled probe consumer for the log-end offsets.
"""

from __future__ import annotations

import threading
import time
from typing import cast

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from memwarden.crypto import ContentUnreadable, Kek
from memwarden.errors import DecodeError, StackUnavailable
from memwarden.schemas.codec import AvroCodec
from memwarden.settings import Settings
from memwarden.stores.ledger import high_watermark


def unwrap_data_key(kek: Kek, codec: AvroCodec, key_id: str, value: bytes) -> bytes | None:
    """The data key of a ``DataKey`` record of the keys topic, unwrapped with the KEK; ``None`` when
    the record does not decode or does not unwrap (it is counted as skipped by the callers)."""
    try:
        _, record = codec.decode(value)
        return kek.unwrap(record["wrap_nonce"], record["wrapped_key"], key_id)
    except (DecodeError, ContentUnreadable, KeyError):
        return None


class KeyRing:
    """In-memory view of the keys topic: ``key_id -> unwrapped 32-byte data key``.

    Args:
        settings: bootstrap servers and topic names.
        kek: key-encryption key that unwraps data keys.
        codec: Avro codec for ``DataKey`` values.
    """

    def __init__(self, settings: Settings, kek: Kek, codec: AvroCodec) -> None:
        self._topic = settings.topic("keys")
        self._kek = kek
        self._codec = codec
        self._keys: dict[str, bytes] = {}
        self._tombstones: dict[str, tuple[int, int]] = {}
        self._positions: dict[int, int] = {}
        self._lock = threading.Condition()
        self._stop = threading.Event()
        config = {
            "bootstrap.servers": settings.bootstrap_servers,
            "group.id": f"{settings.topic_prefix}-keyring-unused",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
        self._consumer = Consumer(config)  # used by the ring's thread only
        self._probe = Consumer(config)  # log-end offsets for sync(); never polled
        self._probe_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.skipped = 0

    def start(self, timeout_s: float = 30.0) -> None:
        """Assign every partition from the beginning and start consuming in a daemon thread."""
        meta = self._consumer.list_topics(self._topic, timeout=timeout_s)
        parts = meta.topics[self._topic].partitions
        if not parts:
            raise StackUnavailable(f"topic {self._topic} does not exist")
        self._consumer.assign([TopicPartition(self._topic, p, OFFSET_BEGINNING) for p in parts])
        self._positions = {p: 0 for p in parts}
        self._thread = threading.Thread(target=self._run, name="keyring", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            msg = self._consumer.poll(0.2)
            if msg is None:
                self._note_positions()
                continue
            if msg.error():
                continue
            key_id = (msg.key() or b"").decode("utf-8", "replace")
            value = msg.value()
            # set on every record a consumer returns; the stubs type them Optional (unset before a produce)
            partition, offset = cast(int, msg.partition()), cast(int, msg.offset())
            with self._lock:
                if value is None:
                    self._keys.pop(key_id, None)
                    self._tombstones[key_id] = (partition, offset)
                else:
                    key = unwrap_data_key(self._kek, self._codec, key_id, value)
                    if key is None:
                        self.skipped += 1
                    else:
                        self._keys[key_id] = key
                self._positions[partition] = offset + 1
                self._lock.notify_all()

    def _note_positions(self) -> None:
        """Record the consumer's own fetch positions (compaction may leave the last offsets empty,
        so no message ever reaches them). Runs on the ring's thread."""
        try:
            tps = self._consumer.position([TopicPartition(self._topic, p) for p in self._positions])
        except KafkaException:
            return
        with self._lock:
            for tp in tps:
                if tp.offset >= 0 and tp.offset > self._positions.get(tp.partition, 0):
                    self._positions[tp.partition] = tp.offset
                    self._lock.notify_all()

    def _caught_up(self, targets: dict[int, int]) -> bool:
        return all(self._positions.get(p, 0) >= high for p, high in targets.items())

    def sync(self, timeout_s: float = 30.0) -> None:
        """Block until every key published before this call has been consumed.

        Raises ``StackUnavailable`` after ``timeout_s`` seconds.
        """
        deadline = time.monotonic() + timeout_s
        targets = {}
        with self._probe_lock:
            try:
                for p in list(self._positions):
                    targets[p] = high_watermark(self._probe, self._topic, p, timeout_s)
            except KafkaException as exc:
                raise StackUnavailable(f"log-end offsets of {self._topic} unavailable: {exc}") from exc
        with self._lock:
            while not self._caught_up(targets):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StackUnavailable(f"key ring did not catch up with {self._topic} in {timeout_s}s")
                self._lock.wait(min(left, 0.5))

    def get(self, key_id: str) -> bytes | None:
        """The data key, or ``None`` if absent right now (call :meth:`sync` first to be sure)."""
        with self._lock:
            return self._keys.get(key_id)

    def tombstone(self, key_id: str) -> tuple[int, int] | None:
        """(partition, offset) of the tombstone that shredded ``key_id``, if the ring has read one."""
        with self._lock:
            return self._tombstones.get(key_id)

    def lookup(self, key_ids: list[str], timeout_s: float = 30.0) -> dict[str, bytes | None]:
        """Data keys for ``key_ids``; syncs with the topic once if any is missing."""
        found = {k: self.get(k) for k in key_ids}
        if any(v is None for v in found.values()):
            self.sync(timeout_s)
            found = {k: self.get(k) for k in key_ids}
        return found

    def close(self) -> None:
        """Stop the thread and close the consumer."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._consumer.close()
        self._probe.close()


class KeySnapshot:
    """The keys topic as read once up to its end (a replay reads the whole ledger in one pass): the
    same ``lookup`` as :class:`KeyRing`, without a consumer thread. A tombstone read after a key
    removes it, as compaction will."""

    def __init__(self, kek: Kek, codec: AvroCodec) -> None:
        self._kek = kek
        self._codec = codec
        self._wrapped: dict[str, bytes] = {}
        self._keys: dict[str, bytes | None] = {}
        self.skipped = 0

    @classmethod
    def of_wrapped(cls, kek: Kek, codec: AvroCodec, wrapped: dict[str, bytes]) -> KeySnapshot:
        """A snapshot holding ``wrapped`` (what :meth:`wrapped` gave: the live keys still wrapped
        under the KEK, which another process of the same host may receive)."""
        out = cls(kek, codec)
        out._wrapped = dict(wrapped)
        return out

    def wrapped(self) -> dict[str, bytes]:
        """The live data keys, still wrapped under the KEK, by key id."""
        return dict(self._wrapped)

    def add(self, key: bytes | None, value: bytes | None) -> None:
        """Apply one record of the keys topic, in its partition's order."""
        key_id = (key or b"").decode("utf-8", "replace")
        self._keys.pop(key_id, None)
        if value is None:
            self._wrapped.pop(key_id, None)
        else:
            self._wrapped[key_id] = value

    def get(self, key_id: str) -> bytes | None:
        """The unwrapped data key, or ``None`` when it was never published or is shredded."""
        if key_id not in self._keys:
            raw = self._wrapped.get(key_id)
            found = unwrap_data_key(self._kek, self._codec, key_id, raw) if raw is not None else None
            if raw is not None and found is None:
                self.skipped += 1
            self._keys[key_id] = found
        return self._keys[key_id]

    def lookup(self, key_ids: list[str], timeout_s: float = 30.0) -> dict[str, bytes | None]:
        """Data keys for ``key_ids`` (``None`` for missing or shredded ones)."""
        return {k: self.get(k) for k in key_ids}

    def sync(self, timeout_s: float = 30.0) -> None:
        """Nothing to catch up with: the snapshot is complete when built."""

    def close(self) -> None:
        """Nothing to release."""
