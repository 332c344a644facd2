"""Where a replay stops: per-partition end offsets of the commands topic (the cut).

``--until commands:0:1234,commands:1:980`` names, for every partition, the last offset to include
(``commands:P:-1``: nothing from P, the only cut of an empty partition);
``--until-time T`` resolves a wall time through the broker's time index to the first offset of each
partition appended after ``T``; neither means "up to the end". Bad input is a ``ValidationError``
naming the field: a topic other than ``commands``, a partition that does not exist, one left out, an
offset past the log end, a time before the first record.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from memwarden.epoch import to_ms
from memwarden.errors import ValidationError
from memwarden.settings import Settings
from memwarden.stores.ledger import end_offsets, offsets_for_time, read

_ITEM = re.compile(r"^\s*([a-z]+):(\d+):(-1|\d+)\s*$")


def until_hint(partition: int, end: int) -> str:
    """What ``--until`` takes for ``partition`` of log end ``end``."""
    if end == 0:
        return f"commands:{partition}:-1 (empty)"
    return f"commands:{partition}:<0..{end - 1}, the last offset to include; -1 for nothing from it>"


def parse_until(text: str, highs: dict[int, int]) -> dict[int, int]:
    """Exclusive ends from ``commands:<partition>:<offset>`` items (each offset included; ``-1``: nothing
    from that partition); ``highs`` are the log-end offsets per partition. Raises ``ValidationError``
    (field ``until``), saying what to write for a partition left out or an empty one."""
    ends: dict[int, int] = {}
    for item in text.split(","):
        m = _ITEM.match(item)
        if m is None:
            raise ValidationError("until", f"{item.strip()!r} is not commands:<partition>:<offset>")
        topic, partition, offset = m.group(1), int(m.group(2)), int(m.group(3))
        if topic != "commands":
            raise ValidationError("until", f"positions are on the commands topic (the ledger), not {topic!r}")
        if partition not in highs:
            raise ValidationError("until", f"commands has no partition {partition} (it has {sorted(highs)})")
        if partition in ends:  # the last one won, silently
            raise ValidationError("until", f"commands:{partition} is named twice; name each partition once")
        if offset >= 0 and highs[partition] == 0:
            raise ValidationError("until", f"commands:{partition}:{offset}: partition {partition} is empty (log end"
                                  f" 0); write commands:{partition}:-1 (nothing from it)")
        if offset >= highs[partition]:
            raise ValidationError("until", f"commands:{partition}:{offset} is past the log end ({highs[partition]})")
        ends[partition] = offset + 1
    missing = sorted(set(highs) - set(ends))
    if missing:
        add = ", ".join(until_hint(p, highs[p]) for p in missing)
        raise ValidationError("until", f"name every partition of commands: add {add}; or use --until-time")
    return ends


def cut_at_time(settings: Settings, when: datetime) -> dict[int, int]:
    """Exclusive ends of the commands topic as it stood at ``when`` (records appended at or before it).
    Raises ``ValidationError`` (field ``until_time``) for a naive time, one in the future (it would mark the
    whole ledger as a point-in-time state, one a later replay of the whole ledger is refused into; newcomer trial,
    twenty-fifth session), or one before the first record."""
    if when.tzinfo is None:
        raise ValidationError("until_time", "must carry a UTC offset")
    if when > datetime.now(UTC):
        raise ValidationError("until_time", f"{when.isoformat()} is in the future: replay without --until-time for "
                                            "the whole ledger as it stands")
    ends = offsets_for_time(settings, "commands", to_ms(when) + 1)
    if not any(ends.values()):
        first = _first_timestamp(settings)
        detail = f" (the first is at {first})" if first else " (the ledger is empty)"
        raise ValidationError("until_time", f"{when.isoformat()} is before the first record of the ledger{detail}")
    return ends


def _first_timestamp(settings: Settings) -> str | None:
    highs = end_offsets(settings, "commands")
    stamps = [next(read(settings, "commands", {p: min(1, h)}), None) for p, h in highs.items() if h]
    found = [r.timestamp_ms for r in stamps if r is not None]
    return datetime.fromtimestamp(min(found) / 1000).astimezone().isoformat() if found else None


def resolve_cut(settings: Settings, until: str | None, until_time: datetime | None) -> tuple[dict[int, int], bool]:
    """The cut and whether it is point-in-time (``False``: the whole ledger up to its current end).
    Raises ``ValidationError`` when both are given or one is malformed."""
    if until is not None and until_time is not None:
        raise ValidationError("until", "give --until or --until-time, not both")
    highs = end_offsets(settings, "commands")
    if until is not None:  # an empty --until is a mistake, never the whole ledger
        return parse_until(until, highs), True
    if until_time is not None:
        return cut_at_time(settings, until_time), True
    return highs, False
