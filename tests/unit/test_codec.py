"""The Avro contract: every message round-trips, schemas evolve compatibly, bad bytes decode to a
clear ``DecodeError`` (never another exception)."""

from __future__ import annotations

import contextlib
import copy
import io
import json
from datetime import UTC, datetime

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memwarden.commands import events
from memwarden.commands.gate import Decision, Forgotten, MemoryState, Outcome, Position, Reason
from memwarden.commands.model import from_avro, to_avro
from memwarden.errors import DecodeError, ValidationError
from memwarden.schemas.codec import MAGIC, SCHEMA_DIR, AvroCodec, default_codec, schema_fingerprint
from tests import factories as f

NOW = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
POS = Position("mw.commands", 2, 41)


@pytest.fixture(scope="module")
def codec() -> AvroCodec:
    return AvroCodec()


@pytest.mark.parametrize("command", [f.record(), f.supersede("7b0c7c1e-9f32-4c57-9d1e-2f2f6c1d9a10"),
                                     f.forget("7b0c7c1e-9f32-4c57-9d1e-2f2f6c1d9a10")])
def test_commands_round_trip_exactly(codec: AvroCodec, command) -> None:
    name, decoded = codec.decode(codec.encode(command.kind, to_avro(command)))
    assert name == command.kind
    assert from_avro(name, decoded) == command


def test_events_round_trip(codec: AvroCodec) -> None:
    cmd = f.record()
    decision = Decision(Outcome.ACCEPTED, (Reason("OK", "accepted"),), MemoryState(cmd.memory_id, "s", "p", 1), 1)
    gone = Forgotten(MemoryState(cmd.memory_id, "s", "p", 1, forgotten=True), cmd.envelope.command_id, "p", "why")
    for name, rec in (("GateDecided", events.gate_decided(cmd, decision, POS, NOW, cmd.memory_id)),
                      ("MemoryRecorded", events.memory_recorded(cmd, decision, POS, NOW)),
                      ("MemoryForgotten", events.memory_forgotten(gone, POS, NOW))):
        got_name, got = codec.decode(codec.encode(name, rec))
        assert got_name == name and got == rec


def test_wire_format_is_single_object_encoding_readable_from_the_avsc_alone(codec: AvroCodec) -> None:
    cmd = f.record()
    data = codec.encode("RecordMemory", to_avro(cmd))
    assert data[:2] == MAGIC
    # an independent reader: only fastavro and the .avsc files, no project code
    schema = fastavro.schema.load_schema(str(SCHEMA_DIR / "memwarden.v1.RecordMemory.avsc"))
    assert data[2:10] == schema_fingerprint(schema)
    body = fastavro.schemaless_reader(io.BytesIO(data[10:]), schema, None)
    assert body["memory_id"] == cmd.memory_id


def _v2(schema: dict) -> dict:
    v2 = copy.deepcopy(schema)
    v2["fields"].append({"name": "channel", "type": ["null", "string"], "default": None})
    return v2


def test_v1_reader_reads_v2_records_and_v2_reader_replays_v1(tmp_path, codec: AvroCodec) -> None:
    v1 = json.loads(json.dumps(codec.schema("ForgetMemory")))
    v2 = _v2(v1)
    cmd = f.forget("7b0c7c1e-9f32-4c57-9d1e-2f2f6c1d9a10")
    record = to_avro(cmd)
    # a v2 writer: the current codec learns the writer schema and decodes with its v1 reader schema
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(v2), {**record, "channel": "sms"})
    codec.register_writer(v2)
    fp = schema_fingerprint(fastavro.parse_schema(v2))
    name, got = codec.decode(MAGIC + fp + buf.getvalue())
    assert name == "ForgetMemory" and "channel" not in got and got["memory_id"] == cmd.memory_id
    # a v2 reader over v1 bytes gets the default
    v1_bytes = codec.encode("ForgetMemory", record)[10:]
    got2 = fastavro.schemaless_reader(io.BytesIO(v1_bytes), fastavro.parse_schema(v1), fastavro.parse_schema(v2))
    assert got2["channel"] is None and got2["memory_id"] == cmd.memory_id


@pytest.mark.parametrize("data, code", [
    (None, "NULL_VALUE"),
    (b"", "NOT_SINGLE_OBJECT"),
    (b"not avro at all, just text", "NOT_SINGLE_OBJECT"),
    (MAGIC + b"\x00" * 8 + b"\x02", "UNKNOWN_SCHEMA"),
])
def test_bad_bytes_give_a_decode_error_with_a_code(codec: AvroCodec, data, code) -> None:
    with pytest.raises(DecodeError) as err:
        codec.decode(data)
    assert err.value.code == code


def test_truncated_and_padded_bodies_are_malformed(codec: AvroCodec) -> None:
    data = codec.encode("RecordMemory", to_avro(f.record()))
    for bad in (data[:-7], data + b"\x00\x01"):
        with pytest.raises(DecodeError) as err:
            codec.decode(bad)
        assert err.value.code == "MALFORMED_BODY"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_no_byte_string_crashes_the_decoder(data: bytes) -> None:
    codec = default_codec()
    fp = codec.fingerprint("RecordMemory")
    for candidate in (data, MAGIC + fp + data):
        with contextlib.suppress(DecodeError):
            codec.decode(candidate)


def test_encode_names_the_field_that_does_not_fit(codec: AvroCodec) -> None:
    record = to_avro(f.record())
    record["memory_id"] = 42
    with pytest.raises(ValidationError) as err:
        codec.encode("RecordMemory", record)
    assert "memory_id" in str(err.value)


def test_a_record_naming_what_it_follows_round_trips_and_reaches_its_event(codec: AvroCodec) -> None:
    prev = "7b0c7c1e-9f32-4c57-9d1e-2f2f6c1d9a10"
    cmd = f.record().model_copy(update={"follows": prev})
    name, decoded = codec.decode(codec.encode("RecordMemory", to_avro(cmd)))
    assert decoded["follows"] == prev and from_avro(name, decoded).follows == prev
    decision = Decision(Outcome.ACCEPTED, (Reason("OK", "accepted"),), MemoryState(cmd.memory_id, "s", "p", 1), 1)
    assert codec.decode(codec.encode("MemoryRecorded", events.memory_recorded(cmd, decision, POS, NOW)))[1][
        "follows"] == prev


def test_records_of_the_writer_before_follows_replay_with_none(codec: AvroCodec) -> None:
    # the previous RecordMemory / MemoryRecorded writers (history v2 / v4) still decode: follows defaults to null
    for name, version in (("RecordMemory", 2), ("MemoryRecorded", 4)):
        old = json.loads((SCHEMA_DIR / "history" / f"memwarden.v1.{name}.v{version}.avsc").read_text())
        assert all(fld["name"] != "follows" for fld in old["fields"])
        parsed = fastavro.parse_schema(old)
        cmd = f.record()
        record = to_avro(cmd) if name == "RecordMemory" else events.memory_recorded(
            cmd, Decision(Outcome.ACCEPTED, (), MemoryState(cmd.memory_id, "s", "p", 1), 1), POS, NOW)
        record.pop("follows")
        buf = io.BytesIO()
        buf.write(MAGIC + schema_fingerprint(parsed))
        fastavro.schemaless_writer(buf, parsed, record)
        got_name, got = codec.decode(buf.getvalue())
        assert got_name == name and got["follows"] is None


def test_a_memory_cannot_follow_itself() -> None:
    cmd = f.record()
    with pytest.raises(ValueError, match="follows"):
        type(cmd).model_validate({**cmd.model_dump(), "follows": cmd.memory_id})
