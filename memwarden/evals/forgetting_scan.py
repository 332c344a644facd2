"""The byte scans of ``memwarden eval forgetting`` (:mod:`memwarden.evals.forgetting_eval`): every file
under the stack's data folders, every Kafka record decompressed, every row of the namespace's schema,
for the random markers the evaluation wrote; and what the ledger holds (wrapped keys, receipts, the
quoted spans of commands). Read-only."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memwarden.settings import Settings

_MARKER = re.compile(rb"qx[a-z0-9]{20}zq")

# -- disk scan ----------------------------------------------------------------------------------------
def _files(root: Path) -> Iterator[Path]:
    if not root.exists():
        return
    if root.is_file():
        yield root
        return
    for folder, _, names in os.walk(root):  # folders that vanish under the walk are passed over
        for name in names:
            yield Path(folder) / name


def _chunks(path: Path, size: int = 16 << 20) -> Iterator[bytes]:
    """The bytes of a regular file, in chunks overlapping by a marker's length. Holes of a sparse
    file (Kafka's preallocated indexes, the index shard's) are skipped: they read as zeros."""
    overlap = 64  # longer than a marker (24 bytes) and a wrapped data key (48 bytes)
    with open(path, "rb") as handle:
        fd, end, pos = handle.fileno(), os.fstat(handle.fileno()).st_size, 0
        while pos < end:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
                stop = os.lseek(fd, start, os.SEEK_HOLE)
            except OSError:  # no more data (ENXIO), or no hole support: read the rest plainly
                start, stop = (end, end) if pos else (0, end)
            while start < stop:
                handle.seek(start)
                block = handle.read(min(size, stop - start))
                if not block:
                    break
                yield block
                start += len(block) - overlap if start + len(block) < stop else len(block)
            pos = max(stop, pos + 1)


def scan(roots: Sequence[Path]) -> tuple[dict[str, set[str]], int, int]:
    """Every marker-shaped token in the regular files under ``roots``, byte for byte: ``token ->
    files`` (relative to their root), and the number of files and bytes read. Files removed while
    scanning are passed over."""
    found: dict[str, set[str]] = {}
    files = size = 0
    for root in roots:
        for path in _files(root):
            try:
                if not stat.S_ISREG(path.lstat().st_mode):
                    continue
                tokens: set[bytes] = set()
                for block in _chunks(path):
                    size += len(block)
                    tokens.update(_MARKER.findall(block))
            except OSError:
                continue
            files += 1
            where = str(path.relative_to(root)) if path != root else path.name
            for token in tokens:
                found.setdefault(token.decode(), set()).add(where)
    return found, files, size


def _payloads(path: Path) -> Iterator[bytes] | None:
    """Keys, values and header values of every record of a Kafka segment file, decompressed (a
    batch's lz4 can split a marker that sits in clear inside it); ``None`` when the file does not
    parse as record batches."""
    from aiokafka.record.memory_records import MemoryRecords

    try:
        records = MemoryRecords(path.read_bytes())
        out: list[bytes] = []
        while records.has_next():
            batch = records.next_batch()
            if batch is None:  # a batch still being appended
                break
            for r in batch:
                out += [r.key or b"", r.value or b"", *(v or b"" for _, v in r.headers)]
    except Exception:  # any parse failure is counted; the raw scan still covers the file
        return None
    return iter(out)


def scan_records(root: Path) -> tuple[dict[str, set[str]], int, int]:
    """Marker-shaped tokens in the decompressed records of every segment (``*.log``) under the
    broker's data folder ``root``: ``token -> files``, segments decoded, segments that did not parse."""
    found: dict[str, set[str]] = {}
    decoded = failed = 0
    for path in _files(root):
        if path.suffix != ".log":
            continue
        payloads = _payloads(path)
        if payloads is None:
            failed += 1
            continue
        decoded += 1
        for payload in payloads:
            for token in set(_MARKER.findall(payload)):
                found.setdefault(token.decode(), set()).add(str(path.relative_to(root)))
    return found, decoded, failed


def scan_rows(settings: Settings) -> tuple[dict[str, set[str]], int, int]:
    """Marker-shaped tokens in every column of every row of the namespace's Postgres schema, read
    through SQL (values TOAST compressed are seen decompressed): ``token -> tables``, tables, rows."""
    from psycopg import sql

    from memwarden.stores.pg import connect

    found: dict[str, set[str]] = {}
    rows = 0
    with connect(settings) as conn:
        tables = [r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s"
                                             " AND table_type = 'BASE TABLE'", (settings.pg_schema,)).fetchall()]
        for table in tables:
            for row in conn.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(table))):
                rows += 1
                for value in row:
                    raw = bytes(value) if isinstance(value, bytes | bytearray | memoryview) else str(value).encode()
                    for token in set(_MARKER.findall(raw)):
                        found.setdefault(token.decode(), set()).add(table)
        conn.commit()
    return found, len(tables), rows


def scan_areas(settings: Settings, worker_log: Path) -> dict[str, list[Path]]:
    """Every folder of the stack that could hold a copy of a memory, by area."""
    from memwarden.ops.kafka_files import kafka_paths
    from memwarden.ops.postgres_server import pg_paths

    kafka, pg = kafka_paths(settings), pg_paths(settings)
    return {"kafka_segments": [kafka.data], "kafka_logs": [kafka.logs], "postgres_data": [pg.data],
            "postgres_log": [pg.log], "index": [settings.data_dir / "qdrant" / settings.index_name],
            "worker_log": [worker_log], "worker_state": [settings.data_dir / "faust" / settings.topic_prefix]}


def namespace_topic_dirs(settings: Settings) -> list[str]:
    """The namespace's partition folders in the broker's data folder (dead letters included)."""
    from memwarden.ops.kafka_files import kafka_paths

    root = kafka_paths(settings).data
    prefix = settings.topic_prefix + "."
    return sorted(d.name for d in root.iterdir() if d.name.startswith(prefix) and d.is_dir())


def keys_on_disk(settings: Settings, wrapped: dict[str, bytes], attempts: int = 5) -> set[str]:
    """Key ids whose wrapped data key is in a file of the namespace's keys topic folders.

    The broker's log cleaner replaces segment files while they are read (a cleaned copy is renamed
    over the old one): a scan during which a file vanished or the set of files changed may miss a key
    that never left the disk. Such a scan is repeated, up to ``attempts`` times; the answer is the
    first scan over an unchanged set of files, or else every key any scan found (never a key missed
    because the cleaner moved it)."""
    seen: set[str] = set()
    for _ in range(attempts):
        before = _key_files(settings)
        hits, complete = _scan_keys(before, wrapped)
        if complete and _key_files(settings) == before:
            return hits
        seen |= hits
    return seen


def _key_files(settings: Settings) -> frozenset[Path]:
    """The regular files of the namespace's keys topic partition folders now."""
    from memwarden.ops.kafka_files import kafka_paths

    prefix = settings.topic("keys") + "-"
    out: set[Path] = set()
    for folder in kafka_paths(settings).data.iterdir():
        if folder.name.startswith(prefix) and folder.name[len(prefix):].isdigit():
            out.update(_files(folder))
    return frozenset(out)


def _scan_keys(paths: frozenset[Path], wrapped: dict[str, bytes]) -> tuple[set[str], bool]:
    """Key ids found in ``paths``, and whether every file could be read to its end."""
    hits: set[str] = set()
    complete = True
    for path in paths:
        try:
            if stat.S_ISREG(path.lstat().st_mode):
                for block in _chunks(path):
                    hits.update(k for k, w in wrapped.items() if w in block)
        except OSError:
            complete = False
    return hits, complete


# -- the ledger ---------------------------------------------------------------------------------------
def _records(settings: Settings, logical: str) -> Iterator[tuple[str, dict[str, Any]]]:
    from memwarden.errors import DecodeError
    from memwarden.schemas.codec import default_codec
    from memwarden.stores.ledger import end_offsets, read

    codec = default_codec()
    for rec in read(settings, logical, end_offsets(settings, logical)):
        if rec.value is None:
            continue
        try:
            yield codec.decode(rec.value)
        except (DecodeError, ValueError):
            continue


def wrapped_keys(settings: Settings) -> dict[str, bytes]:
    """``key_id -> wrapped data key`` of every data key on the keys topic now."""
    from memwarden.schemas.codec import default_codec
    from memwarden.stores.ledger import end_offsets, read

    codec, out = default_codec(), {}
    for rec in read(settings, "keys", end_offsets(settings, "keys")):
        if rec.key and rec.value is not None:
            out[rec.key.decode()] = bytes(codec.decode(rec.value)[1]["wrapped_key"])
    return out


def erasure_receipts(settings: Settings) -> list[dict[str, Any]]:
    """Every ``ErasureReceipted`` event of the namespace, decoded."""
    return [rec for name, rec in _records(settings, "events") if name == "ErasureReceipted"]


def quoted_in_commands(settings: Settings, markers: set[str]) -> dict[str, str]:
    """``marker -> command id`` for markers that a command carries in clear in its envelope's
    ``source.quoted_span`` (a diagnosis of what the scan found)."""
    out: dict[str, str] = {}
    for _, rec in _records(settings, "commands"):
        env = rec.get("envelope") if isinstance(rec, dict) else None
        span = ((env or {}).get("source") or {}).get("quoted_span") or ""
        for marker in markers:
            if marker in span:
                out[marker] = env["command_id"] if env else ""
    return out
