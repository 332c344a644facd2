"""Gate workers scaling by partition (issue 11 part 3): what the scaling test and benchmark share.

* :func:`spread_subjects` — subject ids spread evenly over the commands topic's partitions (commands
  are keyed by subject; the client's partitioner is Kafka's murmur2, computed here the same way);
* :class:`SpreadLoad` — a steady write load from those subjects (records, supersessions, forgets,
  none waiting for the gate), every acknowledged write kept with its ledger position;
* :func:`gate_assignment` — which commands partitions each member of the gate's consumer group holds
  now (the group's description on the broker);
* :func:`ledger_decisions` and :func:`verdict` — every ``GateDecided`` on the decisions topic (read
  from offset 0, outside any group) and the verdict: acknowledged commands with no decision (lost),
  with more than one decision id, or whose copies differ in a single byte (decided twice: a redelivery
  re-sends the stored bytes, so every copy of one decision is identical).
"""

from __future__ import annotations

import functools
import random
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka.partitioner import DefaultPartitioner

from memwarden.errors import MemwardenError
from memwarden.evals.chaos_load import WRITE_MIX, Ack, Outcome
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings


def spread_subjects(partitions: int, per_partition: int = 2, tag: str | None = None) -> list[str]:
    """``partitions * per_partition`` user ids, ``per_partition`` landing on each commands partition
    (murmur2 of the subject, as the client's ``murmur2_random`` partitioner computes it)."""
    tag = tag or uuid.uuid4().hex[:6]
    place = DefaultPartitioner()
    every = list(range(partitions))
    out: dict[int, list[str]] = {p: [] for p in every}
    i = 0
    while any(len(v) < per_partition for v in out.values()):
        who = f"user:sc{tag}{i}"
        bucket = out[place(who.encode(), every, every)]
        if len(bucket) < per_partition:
            bucket.append(who)
        i += 1
    return [w for p in every for w in out[p]]


@dataclass(eq=False)  # a thread must stay hashable
class SpreadLoad(threading.Thread):
    """Writes at ``rate_hz`` in turn as each of ``subjects`` about itself: a record of a new memory, a
    supersession or a forget of one of its live memories (:data:`~memwarden.evals.chaos_load.WRITE_MIX`),
    none waiting for the gate. ``acks`` keeps every write the broker acknowledged, ``owners`` the
    subject of every memory it recorded."""

    client: MemwardenClient
    subjects: Sequence[str]
    rate_hz: float = 20.0
    seed: int = 11
    acks: list[Ack] = field(default_factory=list)
    errors: list[Outcome] = field(default_factory=list)
    owners: dict[str, str] = field(default_factory=dict)
    stopping: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        threading.Thread.__init__(self, name="scaling-writes", daemon=True)
        self._rng = random.Random(self.seed)
        self._live: dict[str, list[str]] = {s: [] for s in self.subjects}
        self._n = 0

    def run(self) -> None:
        period = 1.0 / self.rate_hz
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                self._one(self.subjects[self._n % len(self.subjects)])
            except MemwardenError as exc:  # the caller was told: an error, never an acknowledgement
                now = time.time()
                self.errors.append(Outcome(now, False, str(exc).splitlines()[0][:200], now))
            self.stopping.wait(max(0.0, period - (time.monotonic() - started)))

    def _one(self, who: str) -> None:
        live = self._live[who]
        kind = self._rng.choices([k for k, _ in WRITE_MIX], [w for _, w in WRITE_MIX])[0]
        if kind != "record" and len(live) < 3:
            kind = "record"
        self._n += 1
        marker = f"sx{self._n:05d}q"
        text = f"scaling note {marker}: an ordinary fact number {self._n}"
        if kind == "record":
            r = self.client.record(principal=who, subject=who, text=text)
            live.append(r.memory_id)
            self.owners[r.memory_id] = who
        elif kind == "supersede":
            r = self.client.supersede(self._rng.choice(live), principal=who, subject=who, text=text, wait=False)
        else:
            r = self.client.forget(live.pop(self._rng.randrange(len(live))), principal=who, subject=who,
                                   reason="scaling", wait=False)
            marker = ""
        self.acks.append(Ack(kind, r.command_id, r.memory_id, marker, r.partition, r.offset, time.time()))


def gate_group_id(settings: Settings) -> str:
    """Consumer group of the gate-only workers of ``settings`` (the Faust app id)."""
    from memwarden.processors.worker import app_id

    return app_id(settings, ("gate",))


@functools.cache
def _admin(bootstrap_servers: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap_servers, "log_level": 4})


def gate_assignment(settings: Settings, timeout_s: float = 10.0) -> dict[str, list[int]]:
    """Member id -> the commands partitions it holds now, for the gate's consumer group (empty while
    the group rebalances or has no member)."""
    admin = _admin(settings.bootstrap_servers)
    group = gate_group_id(settings)
    described = admin.describe_consumer_groups([group], request_timeout=timeout_s)[group].result(timeout_s)
    topic = settings.topic("commands")
    return {m.member_id: sorted(tp.partition for tp in (m.assignment.topic_partitions if m.assignment else [])
                                if tp.topic == topic)
            for m in described.members}


def stable_assignment(settings: Settings, members: int, timeout_s: float = 60.0) -> dict[str, list[int]]:
    """Wait until ``members`` members hold every commands partition between them, each at least one;
    returns that assignment. Raises ``AssertionError`` after ``timeout_s`` seconds with the last one."""
    deadline = time.monotonic() + timeout_s
    last: dict[str, list[int]] = {}
    while time.monotonic() < deadline:
        last = gate_assignment(settings)
        held = sorted(p for ps in last.values() for p in ps)
        if len(last) == members and all(last.values()) and held == list(range(settings.partitions)):
            return last
        time.sleep(0.25)
    raise AssertionError(f"gate group did not settle on {members} members within {timeout_s:.0f}s: {last}")


@dataclass(frozen=True)
class Copy:
    """One ``GateDecided`` record on the decisions topic: decision id, outcome, ledger partition of the
    command, broker timestamp (seconds) and the record's bytes."""

    decision_id: str
    outcome: str
    partition: int
    at: float
    value: bytes


def ledger_decisions(settings: Settings) -> dict[str, list[Copy]]:
    """Every ``GateDecided`` of the namespace by command id, read from offset 0 outside any group."""
    from memwarden.schemas.codec import default_codec
    from memwarden.stores.ledger import end_offsets, read

    codec = default_codec()
    out: dict[str, list[Copy]] = {}
    for r in read(settings, "decisions", end_offsets(settings, "decisions")):
        if r.value is None:
            continue
        name, rec = codec.decode(r.value)
        if name.endswith("GateDecided") and rec["command_id"]:
            out.setdefault(rec["command_id"], []).append(Copy(
                rec["decision_id"], str(rec["outcome"]), int(rec["position"]["partition"]), r.timestamp_ms / 1000.0,
                bytes(r.value)))
    return out


def verdict(acks: Sequence[Ack], decided: Mapping[str, Sequence[Copy]]) -> dict[str, Any]:
    """``lost``: acknowledged commands without a decision; ``duplicated``: with more than one decision
    id; ``diverged``: whose decision copies are not byte-identical (decided more than once);
    ``resent``: decided once and published more than once (a redelivery, harmless)."""
    lost = [a.command_id for a in acks if not decided.get(a.command_id)]
    duplicated = [a.command_id for a in acks if len({c.decision_id for c in decided.get(a.command_id, ())}) > 1]
    diverged = [a.command_id for a in acks if len({c.value for c in decided.get(a.command_id, ())}) > 1]
    resent = sum(1 for a in acks if len(decided.get(a.command_id, ())) > 1)
    return {"acknowledged": len(acks), "lost": lost, "duplicated": duplicated, "diverged": diverged,
            "resent": resent}


def live_memories(acks: Sequence[Ack], decided: Mapping[str, Sequence[Copy]]) -> dict[str, Ack]:
    """Memory id -> the acknowledged write holding its current text, replaying the accepted writes in
    acknowledgement order (one subject is one partition, decided in ledger order)."""
    live: dict[str, Ack] = {}
    for ack in sorted(acks, key=lambda a: (a.partition, a.offset)):
        if "ACCEPTED" not in {c.outcome for c in decided.get(ack.command_id, ())}:
            continue
        if ack.kind == "forget":
            live.pop(ack.memory_id, None)
        else:
            live[ack.memory_id] = ack
    return live


def takeover_s(decided: Mapping[str, Sequence[Copy]], partitions: Sequence[int], killed_at: float) -> float | None:
    """Seconds from ``killed_at`` to the first decision published on one of ``partitions`` (those the
    killed worker held) after it, or ``None`` when none was."""
    after = [c.at for cs in decided.values() for c in cs if c.partition in partitions and c.at >= killed_at]
    return round(min(after) - killed_at, 2) if after else None
