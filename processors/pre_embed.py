"""The pre-embedder (issue 11 part 1): embeds the texts of memory writes as they reach the commands
topic, while the gate decides them, so that the embedding projector finds their vectors ready
(:mod:`memwarden.projections.warm_vectors`) instead of starting to embed only after the decision.

A thread of the projector worker with its own consumer of the commands topic: every partition,
starting at its end when the worker starts (no consumer group, nothing committed: it is an
optimisation, never the source of a projection), batches of up to 256 commands. It decrypts only what
the projector would decrypt a moment later (the same data keys from the same key ring) and keeps the
vectors in memory; a command the gate refuses costs one embedding and nothing else. A failure is
logged and the batch skipped: the projector embeds what it does not find.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import cast

from confluent_kafka import OFFSET_END, Consumer, KafkaException, TopicPartition

from memwarden.commands.ledger import Position
from memwarden.commands.model import RecordMemory, SupersedeMemory
from memwarden.crypto import open_content
from memwarden.processors.gate_io import Inbound, parse
from memwarden.projections.embedder import Embedder
from memwarden.projections.index_projector import point_id
from memwarden.projections.warm_vectors import WarmVectors
from memwarden.schemas.codec import AvroCodec
from memwarden.settings import Settings
from memwarden.stores.keyring import KeyRing

log = logging.getLogger("memwarden.pre_embed")
#: Commands per batch, and how long a batch waits to fill (seconds).
BATCH = 256
WITHIN_S = 0.05


class PreEmbedder:
    """The thread (see the module doc). ``start`` assigns the partitions and starts it; ``stop``
    ends it. ``embedded`` counts the texts it embedded."""

    def __init__(self, settings: Settings, codec: AvroCodec, keyring: KeyRing, embedder: Embedder,
                 warm: WarmVectors) -> None:
        self._settings = settings
        self._codec = codec
        self._keyring = keyring
        self._embedder = embedder
        self._warm = warm
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._consumer: Consumer | None = None
        self.embedded = 0

    def start(self, timeout_s: float = 30.0) -> None:
        """Assign every partition of the commands topic at its end and start the thread. Raises
        ``KafkaException`` when the broker does not answer."""
        topic = self._settings.topic("commands")
        consumer = Consumer({"bootstrap.servers": self._settings.bootstrap_servers,
                             "group.id": f"{self._settings.topic_prefix}-pre-embed-{uuid.uuid4().hex[:8]}",
                             "enable.auto.commit": False, "enable.partition.eof": False,
                             "fetch.wait.max.ms": 10})
        parts = consumer.list_topics(topic, timeout=timeout_s).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_END) for p in parts])
        self._consumer = consumer
        self._thread = threading.Thread(target=self._run, name="pre-embed", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and close its consumer."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._consumer is not None:
            self._consumer.close()

    def _run(self) -> None:
        assert self._consumer is not None
        while not self._stop.is_set():
            try:
                msgs = self._consumer.consume(BATCH, WITHIN_S)
            except KafkaException as exc:  # a broker outage: try again
                log.warning("pre-embed: %s", exc)
                self._stop.wait(1.0)
                continue
            # topic, partition and offset are set on every record a consumer returns; the stubs type them
            # Optional (unset before a produce)
            items = [Inbound(m.key(), m.value(),
                             Position(cast(str, m.topic()), cast(int, m.partition()), cast(int, m.offset())))
                     for m in msgs if m.error() is None and m.value() is not None]
            if items:
                try:
                    self.warm_up(items)
                except Exception:  # noqa: BLE001 - an optimisation: the projector embeds what is missing
                    log.exception("pre-embed: batch skipped")

    def warm_up(self, items: Sequence[Inbound]) -> int:
        """Embed the memory writes among ``items`` nobody embedded yet and leave their vectors in the
        warm ring; returns how many texts it embedded."""
        parsed, _ = parse(self._codec, items, datetime.now(UTC), signed=False)
        writes = [p.command for p in parsed if isinstance(p.command, RecordMemory | SupersedeMemory)]
        if not writes:
            return 0
        keys = self._keyring.lookup([c.content.key_id for c in writes], timeout_s=5.0)
        texts: dict[str, str] = {}
        for c in writes:
            text = open_content({"key_id": c.content.key_id, "nonce": c.content.nonce,
                                 "ciphertext": c.content.ciphertext}, keys)
            if text is not None:
                texts[point_id(c.memory_id, c.envelope.command_id)] = text
        mine = self._warm.claim(list(texts))
        if not mine:
            return 0
        try:
            vectors = self._embedder.embed([texts[pid] for pid in mine])
        except BaseException:
            self._warm.abandon(mine)
            raise
        self._warm.put([(pid, texts[pid], vectors[i]) for i, pid in enumerate(mine)])
        self.embedded += len(mine)
        return len(mine)
