"""Avro single-object encoding of every message, decodable from the ``.avsc`` files alone.

Wire format (Avro specification, "Single object encoding"): the two marker bytes ``C3 01``, the
8-byte little-endian CRC-64-AVRO fingerprint of the writer schema's Parsing Canonical Form, then the
Avro binary body. Any Avro implementation that loads ``schemas/avro/*.avsc`` can decode a record.

Older writer schemas (kept under ``avro/history/``) are resolved against the current reader schema,
so a v2 reader replays v1 records and gets the defaults of added fields (field case S4).
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import fastavro
from fastavro.schema import fingerprint, load_schema, to_parsing_canonical_form

from memwarden.errors import DecodeError, ValidationError

MAGIC = b"\xc3\x01"
NAMESPACE = "memwarden.v1"
SCHEMA_DIR = Path(__file__).parent / "avro"

#: Top-level messages that travel on topics (the other .avsc files are named parts of them).
MESSAGE_TYPES: tuple[str, ...] = (
    "RecordMemory",
    "SupersedeMemory",
    "ForgetMemory",
    "ForgetMatching",
    "ForgetSubject",
    "GateDecided",
    "MemoryRecorded",
    "MemoryForgotten",
    "DataKey",
    "RegisterPrincipal",
    "RotateKey",
    "RevokeKey",
    "PublishPolicy",
    "ProtectFact",
    "ApproveQuarantined",
    "RejectQuarantined",
    "GrantAccess",
    "RevokeAccess",
    "PlaceHold",
    "LiftHold",
    "IssueToken",
    "RevokeToken",
    "GovernanceChanged",
    "PrincipalState",
    "MemoryUsed",
    "ReadAudited",
    "ReconciliationRun",
    "ErasureReceipted",
    "AuthRefused",
)
#: Memory commands (they carry content) and governance commands (principals, keys, policy, core
#: facts, review, grants, holds, gateway tokens). Every one is signed and decided by the gate.
MEMORY_COMMANDS: tuple[str, ...] = ("RecordMemory", "SupersedeMemory", "ForgetMemory", "ForgetMatching",
                                     "ForgetSubject")
GOVERNANCE_COMMANDS: tuple[str, ...] = (
    "RegisterPrincipal", "RotateKey", "RevokeKey", "PublishPolicy", "ProtectFact", "ApproveQuarantined",
    "RejectQuarantined", "GrantAccess", "RevokeAccess", "PlaceHold", "LiftHold", "IssueToken", "RevokeToken",
)
COMMAND_TYPES: tuple[str, ...] = MEMORY_COMMANDS + GOVERNANCE_COMMANDS


def schema_fingerprint(schema: Any) -> bytes:
    """CRC-64-AVRO fingerprint (8 bytes, little-endian) of a parsed schema's canonical form."""
    return bytes.fromhex(fingerprint(to_parsing_canonical_form(schema), "CRC-64-AVRO"))


class AvroCodec:
    """Encodes and decodes memwarden messages by name.

    Args:
        schema_dir: folder holding ``memwarden.v1.<Name>.avsc`` files (default: the packaged ones).

    ``encode(name, record)`` returns single-object bytes; ``decode(data)`` returns ``(name, record)``.
    """

    def __init__(self, schema_dir: Path = SCHEMA_DIR) -> None:
        self._schemas: dict[str, Any] = {}
        self._fingerprints: dict[str, bytes] = {}
        # Readers and writers are held as fastavro marks its own parse (``_write_hint``): its reader, writer
        # and validator take those as they are, and parse any other dict again on every call (3-4x slower).
        # ``schema()`` and the fingerprints keep the unmarked form.
        self._readers: dict[str, Any] = {}
        self._writers: dict[bytes, tuple[str, Any]] = {}
        for name in MESSAGE_TYPES:
            schema = load_schema(str(schema_dir / f"{NAMESPACE}.{name}.avsc"), _write_hint=False)
            self._schemas[name] = schema
            self._readers[name] = fastavro.parse_schema(schema)
            fp = schema_fingerprint(schema)
            self._fingerprints[name] = fp
            self._writers[fp] = (name, self._readers[name])
        history = schema_dir / "history"
        if history.is_dir():
            for path in sorted(history.glob("*.avsc")):
                self.register_writer(json.loads(path.read_text()))

    def register_writer(self, writer_schema: Mapping[str, Any]) -> bytes:
        """Accept records written with an older (or newer) version of a known message schema.

        Returns the writer fingerprint. Raises ``ValidationError`` if the name is unknown.
        """
        parsed = fastavro.parse_schema(dict(writer_schema), _write_hint=False)
        name = str(writer_schema.get("name", "")).rsplit(".", 1)[-1]
        if name not in self._schemas:
            raise ValidationError("name", f"unknown message type {name!r}")
        fp = schema_fingerprint(parsed)
        if fp not in self._writers:
            self._writers[fp] = (name, fastavro.parse_schema(parsed))
        return fp

    def schema(self, name: str) -> Any:
        """The parsed current schema of message ``name``."""
        try:
            return self._schemas[name]
        except KeyError:
            raise ValidationError("name", f"unknown message type {name!r}") from None

    def fingerprint(self, name: str) -> bytes:
        """8-byte fingerprint of the current schema of ``name``."""
        self.schema(name)
        return self._fingerprints[name]

    def encode(self, name: str, record: Mapping[str, Any]) -> bytes:
        """Single-object-encode ``record`` with the current schema of ``name``.

        Raises ``ValidationError`` naming the offending field when the record does not fit.
        """
        self.schema(name)
        schema = self._readers[name]
        # A boolean check first: with ``raise_errors=True`` fastavro builds (and JSON-formats) an
        # exception for every union branch it tries, also on valid records ("null" before "string").
        # Only an invalid record pays for the field-naming report.
        if not fastavro.validation.validate(record, schema, raise_errors=False):
            try:
                fastavro.validation.validate(record, schema, raise_errors=True)
            except fastavro.validation.ValidationError as exc:
                field = _field_of(exc)
                raise ValidationError(field, f"does not match schema {NAMESPACE}.{name}: {exc}") from None
            raise ValidationError("record", f"does not match schema {NAMESPACE}.{name}")
        buf = io.BytesIO()
        buf.write(MAGIC)
        buf.write(self._fingerprints[name])
        try:
            fastavro.schemaless_writer(buf, schema, dict(record))
        except (UnicodeEncodeError, ValueError, TypeError, OverflowError) as exc:
            raise ValidationError(name, f"cannot encode: {exc}") from None
        return buf.getvalue()

    def unsigned_bytes(self, data: bytes | None) -> bytes:
        """The canonical signed bytes σ(μ) covers (SSGM Principle 2): the command re-encoded with its
        own *writer* schema after setting ``envelope.signature`` to null.

        Avro binary encoding is deterministic for a given schema, so a client that encodes the
        unsigned command and the gate that re-derives it from the signed bytes get the same bytes,
        whatever reader schema the gate runs. Raises ``DecodeError`` as :meth:`decode` does.
        """
        if data is None or len(data) < 10 or data[:2] != MAGIC:
            raise DecodeError("NOT_SINGLE_OBJECT", "missing the Avro single-object marker C3 01")
        fp = bytes(data[2:10])
        known = self._writers.get(fp)
        if known is None:
            raise DecodeError("UNKNOWN_SCHEMA", f"unknown writer schema fingerprint {fp.hex()}")
        _, writer = known
        try:
            record: Any = fastavro.schemaless_reader(io.BytesIO(data[10:]), writer, None)
            record["envelope"]["signature"] = None
            buf = io.BytesIO()
            buf.write(data[:10])
            fastavro.schemaless_writer(buf, writer, record)
        except Exception as exc:  # garbage input: never anything but DecodeError
            raise DecodeError("MALFORMED_BODY", f"cannot derive the signed bytes: {type(exc).__name__}") from None
        return buf.getvalue()

    def decode(self, data: bytes | None) -> tuple[str, dict[str, Any]]:
        """Decode single-object bytes into ``(message name, record dict)``.

        Raises ``DecodeError`` with code ``NULL_VALUE``, ``NOT_SINGLE_OBJECT``, ``UNKNOWN_SCHEMA`` or
        ``MALFORMED_BODY``; it never raises anything else for any input bytes.
        """
        if data is None:
            raise DecodeError("NULL_VALUE", "a null value (tombstone) is not a message")
        if len(data) < 10 or data[:2] != MAGIC:
            raise DecodeError("NOT_SINGLE_OBJECT", "missing the Avro single-object marker C3 01")
        fp = bytes(data[2:10])
        known = self._writers.get(fp)
        if known is None:
            raise DecodeError("UNKNOWN_SCHEMA", f"unknown writer schema fingerprint {fp.hex()}")
        name, writer = known
        reader = self._readers[name]
        buf = io.BytesIO(data[10:])
        try:
            record = fastavro.schemaless_reader(buf, writer, None if writer is reader else reader)
        except Exception as exc:  # fastavro raises many types on garbage input
            raise DecodeError("MALFORMED_BODY", f"body does not decode as {name}: {type(exc).__name__}") from None
        if buf.tell() != len(data) - 10:
            raise DecodeError("MALFORMED_BODY", f"{len(data) - 10 - buf.tell()} trailing bytes after {name}")
        if not isinstance(record, dict):
            raise DecodeError("MALFORMED_BODY", f"{name} did not decode to a record")
        return name, record


def _field_of(exc: Exception) -> str:
    text = str(exc)
    # fastavro reports "<namespace>.<Record>.<field> is <value> of type ..." per error line
    for token in text.replace("[", " ").replace("'", " ").split():
        if token.startswith(f"{NAMESPACE}.") and token.count(".") >= 3:
            return token.split(".", 3)[-1]
    return "record"


@lru_cache(maxsize=1)
def default_codec() -> AvroCodec:
    """The process-wide codec over the packaged schemas (loaded on first use, not at import)."""
    return AvroCodec()
