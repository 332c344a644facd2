"""The two stages of a replay over a ledger already read (:class:`LedgerIndex`), and the report
they count into (:class:`ReplayReport`):

- :func:`fold_gate`: the recorded decisions of the commands folded into the gate state, in the
  order the gate decided them (:func:`decision_order`);
- :func:`project_events`: the events in the cut applied to the profile rows and/or the vector index.

Each stage starts at the offsets stored with its rows (a resumed replay, or the catch-up of an
in-place rebuild). Used by :mod:`memwarden.processors.replay`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from memwarden.bootstrap import Container
from memwarden.epoch import to_ms
from memwarden.processors.gate_io import Inbound
from memwarden.processors.gate_processor import GateProcessor
from memwarden.processors.replay_ledger import DECISION_EVENTS, LedgerIndex
from memwarden.projections.events_in import EventIn, open_events
from memwarden.projections.index_projector import EmbeddingProjector
from memwarden.projections.profile_projector import ProfileProjector
from memwarden.settings import Settings
from memwarden.stores.offsets import load_offsets
from memwarden.stores.pg import connect_async

BATCH = 2048
T = TypeVar("T")
#: Called with (stage, records done, records in the stage).
Progress = Callable[[str, int, int], None]


@dataclass
class ReplayReport:
    """What a replay did: source and target namespaces, the cut (exclusive ends per commands
    partition) and whether it is point-in-time, commands folded (and undecided ones left out),
    events applied, texts embedded vs vectors reused, seconds."""

    source: str
    target: str
    cut: dict[int, int]
    point_in_time: bool
    commands: int = 0
    undecided: int = 0
    events: int = 0
    embedded: int = 0
    reused: int = 0
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def records_per_s(self) -> float:
        """Ledger records (commands and events) replayed per second."""
        return (self.commands + self.events) / self.seconds if self.seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        """Plain dict for ``--json``."""
        return {"source": self.source, "target": self.target, "cut": {str(k): v for k, v in self.cut.items()},
                "point_in_time": self.point_in_time, "commands": self.commands, "undecided": self.undecided,
                "events": self.events, "embedded": self.embedded, "reused": self.reused,
                "seconds": round(self.seconds, 3), "records_per_s": round(self.records_per_s, 1), **self.extra}


def batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of at most ``size``."""
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


async def _stored_offsets(container: Container, consumer: str, logical: str) -> dict[int, int]:
    conn = await container.pg()
    try:
        async with conn.cursor() as cur:
            return await load_offsets(cur, consumer, container.settings.topic(logical), lock=False)
    finally:
        await conn.close()


def decision_order(index: LedgerIndex) -> list[Any]:
    """The commands in the order the gate decided them: each partition in offset order, the
    partitions merged by the recorded ``decided_at`` (ties by partition, then offset; commands not
    decided yet last). A forget by selector or a hold lift changes memories of other partitions, so
    its recorded outcome folds onto the state as it stood when it was decided, not after a whole
    partition."""
    last = datetime.max.replace(tzinfo=UTC)
    by_partition: dict[int, list[Any]] = {}
    for r in index.commands:
        by_partition.setdefault(r.position.partition, []).append(r)

    def when(r: Any) -> tuple[datetime, int, int]:
        rec = index.recorded.get(r.position)
        return (rec.decision.decided_at if rec is not None else last, r.position.partition, r.position.offset)

    return list(heapq.merge(*(by_partition[p] for p in sorted(by_partition)), key=when))


async def fold_gate(container: Container, index: LedgerIndex, cut: Mapping[int, int], report: ReplayReport,
                    progress: Progress) -> None:
    """Fold the recorded decisions of the commands not folded yet (a resumed replay, or the catch-up
    of an in-place rebuild, starts at the stored offsets); counts them in ``report.commands``."""
    s = container.settings
    folded = await _stored_offsets(container, "gate", "commands")
    conn = await container.pg()
    processor = GateProcessor(container.codec, index.keys, conn,  # type: ignore[arg-type]
                              container.limits, container.trust_anchor, container.digest_key)
    total = len(index.commands)
    done = 0
    stopped: set[int] = set()
    try:
        for chunk in batches(decision_order(index), BATCH):
            items = []
            for r in chunk:
                if r.position.offset < folded.get(r.position.partition, 0):
                    continue
                if r.position.partition in stopped or r.position not in index.recorded:
                    stopped.add(r.position.partition)  # the gate had not decided it yet: the partition ends here
                    report.undecided += 1
                    continue
                items.append(Inbound(r.key, r.value, r.position))
            if items:
                await processor.handle(items, recorded=index.recorded, offsets=("gate", s.topic("commands")))
            report.commands += len(items)
            done += len(chunk)
            progress("gate state", done, total)
    finally:
        await conn.close()


def _events_in_cut(events: Iterable[tuple[Any, str, dict[str, Any]]], container: Container,
                   cut: Mapping[int, int] | None, until_ms: int | None,
                   point_in_time: bool = False) -> Iterator[tuple[Any, str, dict[str, Any]]]:
    """Events of the decisions before the cut (every event when ``cut`` is ``None``); uses
    (``MemoryUsed``) up to ``until_ms``; and, as the live projectors get them, the records that tie
    to no decision (``ReconciliationRun``, ``ErasureReceipted``): the projectors' offsets pass them, as
    live (an in-place switch would otherwise wait for them forever). A ``point_in_time`` replay keeps no
    receipt of a forget past its cut (it kept the receipts of forgets decided after it).
    Undecodable records are left out, as live."""
    commands = container.settings.topic("commands")

    def before_cut(pos: Mapping[str, Any] | None) -> bool:
        return (pos is not None and cut is not None and pos.get("topic") == commands
                and pos.get("offset", 0) < cut.get(pos["partition"], 0))

    for r, name, rec in events:
        if r.value is None or not name:
            continue
        if cut is None:
            yield r, name, rec
            continue
        if name == "MemoryUsed":
            if until_ms is None or all(to_ms(u["used_at"]) <= until_ms for u in rec["uses"]):
                yield r, name, rec
            continue
        if name == "ErasureReceipted" and point_in_time:
            if before_cut(rec.get("forget_position")):
                yield r, name, rec
            continue
        pos = rec.get("position")
        tied = pos is not None or name in DECISION_EVENTS
        if not tied or before_cut(pos):
            yield r, name, rec


def _latest_uses(events: Iterable[tuple[Any, str, dict[str, Any]]]) -> dict[str, int]:
    """The latest use (epoch ms) of each memory over the ``MemoryUsed`` events of ``events``."""
    latest: dict[str, int] = {}
    for _, name, rec in events:
        if name == "MemoryUsed":
            for use in rec["uses"]:
                latest[use["memory_id"]] = max(latest.get(use["memory_id"], 0), to_ms(use["used_at"]))
    return latest


async def project_events(container: Container, source: Settings, index: LedgerIndex,
                         cut: Mapping[int, int] | None, point_in_time: bool, report: ReplayReport,
                         progress: Progress, *, profile: bool = True, vectors: bool = True) -> None:
    """Apply the events in the cut to the profile rows (``profile``) and/or the vector index
    (``vectors``); counts the events applied when ``profile`` and the texts embedded or reused when
    ``vectors``."""
    s = container.settings
    events_topic = s.topic("events")
    conns = []
    appliers = []
    try:
        if profile:
            conns.append(await container.pg())
            appliers.append(ProfileProjector(conns[-1], events_topic).apply)
        projector = None
        # a point-in-time state knows the uses up to its last decision, and none when it holds no decision
        until_ms = (to_ms(index.last_decided) if index.last_decided else 0) if point_in_time else None
        applied = await _stored_offsets(container, "profile", "events") if profile else {}
        if vectors:
            conns += [await container.pg(), await connect_async(source)]
            # apart from the profile projection, the index cannot read the uses from its rows
            floor = None if profile else _latest_uses(_events_in_cut(index.events, container, cut, until_ms,
                                                                         point_in_time))
            projector = EmbeddingProjector(container.lazy_embedder(), container.index(), conns[-2], events_topic,
                                           f"index:{container.index_label}", cache_from=conns[-1], uses_floor=floor)
            appliers.append(projector.apply)
        total = len(index.events)
        done = 0
        for chunk in batches(index.events, BATCH):
            done += len(chunk)
            kept = list(_events_in_cut(chunk, container, cut, until_ms, point_in_time))
            if kept:
                decoded = await open_events(index.keys,  # type: ignore[arg-type]
                                            [EventIn(name, rec, r.position) for r, name, rec in kept])
                for apply in appliers:
                    await apply(decoded)
                report.events += sum(r.position.offset >= applied.get(r.position.partition, 0)
                                     for r, _, _ in kept) if profile else 0
            progress("projections" if profile else "vector index", done, total)
        # no HNSW build here: the live projector never builds one either (Edge has no background
        # optimizer), and an approximate index next to an exact one would rank differently
        if projector is not None:
            report.embedded, report.reused = projector.embedded, projector.reused
    finally:
        for conn in conns:
            await conn.close()


__all__ = ["BATCH", "Progress", "ReplayReport", "batches", "decision_order", "fold_gate", "project_events"]
