"""Consumer positions stored beside the state they produced (STYLE habit 6: exactly-once effect on an
at-least-once stream). ``projection_offsets`` holds, per consumer (``gate``, ``profile``,
``index:<label>``), topic and partition, the next offset to apply; a consumer writes it in the same
transaction as its rows (or right after an idempotent write) and skips records below it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

import psycopg

from memwarden.commands.ledger import Position


class Positioned(Protocol):
    """Anything read from a topic: it knows its ledger position."""

    @property
    def position(self) -> Position: ...


P = TypeVar("P", bound=Positioned)


async def load_offsets(cur: psycopg.AsyncCursor, consumer: str, topic: str, lock: bool) -> dict[int, int]:
    """Next offset per partition stored for ``consumer`` on ``topic`` (``lock``: ``FOR UPDATE``)."""
    q = "SELECT partition, next_offset FROM projection_offsets WHERE projector = %s AND topic = %s"
    await cur.execute(q + (" FOR UPDATE" if lock else ""), (consumer, topic))
    return {p: o for p, o in await cur.fetchall()}


async def save_offsets(cur: psycopg.AsyncCursor, consumer: str, topic: str, offsets: Mapping[int, int]) -> None:
    """Advance the stored next offsets (never backwards)."""
    await cur.executemany(
        "INSERT INTO projection_offsets (projector, topic, partition, next_offset) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (projector, topic, partition) DO UPDATE SET next_offset ="
        " GREATEST(projection_offsets.next_offset, EXCLUDED.next_offset)",
        [(consumer, topic, p, o) for p, o in offsets.items()],
    )


def next_offsets(items: Sequence[Positioned]) -> dict[int, int]:
    """The next offset per partition after ``items``."""
    nxt: dict[int, int] = {}
    for e in items:
        nxt[e.position.partition] = max(nxt.get(e.position.partition, 0), e.position.offset + 1)
    return nxt


def fresh(items: Sequence[P], stored: Mapping[int, int]) -> tuple[list[P], dict[int, int]]:
    """Items not yet applied (offset ≥ stored next offset) and the next offsets after the batch."""
    todo = [e for e in items if e.position.offset >= stored.get(e.position.partition, 0)]
    return todo, next_offsets(items)


def consumer_offsets(conn: psycopg.Connection) -> dict[str, dict[int, int]]:
    """Every stored next offset, by consumer and partition (lag reports)."""
    rows = conn.execute("SELECT projector, partition, next_offset FROM projection_offsets").fetchall()
    conn.commit()
    done: dict[str, dict[int, int]] = {}
    for consumer, partition, nxt in rows:
        done.setdefault(consumer, {})[partition] = nxt
    return done
