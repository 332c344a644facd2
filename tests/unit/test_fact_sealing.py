"""No typed-fact value in clear at rest (issue 14): the client seals ``fact.value`` under the write's
data key (the content's), the ledger carries only the sealed bytes, the gate processor opens them and
hands the pure gate the fact as compared (its keyed digest), the fact slots keep the digest, and the
checks decide as they did on clear values. Older records (clear value, older writer schema) still
decode and compare. No broker, no database."""

from __future__ import annotations

import asyncio
import io
import json
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import fastavro
import pytest

from memwarden.commands import gate
from memwarden.commands.events import memory_recorded
from memwarden.commands.facts import FactState, check_fact, fact_key, keyed_fact, value_digest
from memwarden.commands.gate import GateLimits, GateState, MemoryFacts, Outcome, Position
from memwarden.commands.gate.recorded import RecordedDecision, from_record
from memwarden.commands.model import Fact, RecordMemory, SupersedeMemory, from_avro, to_avro
from memwarden.crypto import (
    ContentUnreadable,
    Kek,
    decrypt_text,
    encrypt_text,
    new_data_key,
    open_content,
    open_fact,
    open_fact_value,
    seal_fact_value,
)
from memwarden.epoch import to_ms
from memwarden.errors import ValidationError
from memwarden.processors.gate_processor import GateProcessor
from memwarden.producers.building import Receipt, build_fact, seal_fact
from memwarden.producers.client import MemwardenClient
from memwarden.schemas.codec import MAGIC, SCHEMA_DIR, default_codec, schema_fingerprint
from memwarden.settings import Settings
from tests import factories as f

KEK = Kek(b"f" * 32)
DIGEST_KEY = b"d" * 32
NOW = f.T0 + timedelta(days=1)
POS = Position("mw.commands", 0, 10)
MARKER = "marker-" + uuid.uuid4().hex


# -- crypto: the sealing round trip ------------------------------------------------------------------------
def test_a_fact_value_round_trips_under_the_content_key_with_its_own_nonce() -> None:
    key, key_id = new_data_key(), str(uuid.uuid4())
    nonce, sealed = seal_fact_value("Végétarien 🥦", key, key_id)
    assert len(nonce) == 12 and len(sealed) == len("Végétarien 🥦".encode()) + 16
    assert open_fact_value(nonce, sealed, key, key_id) == "Végétarien 🥦"
    again, _ = seal_fact_value("Végétarien 🥦", key, key_id)
    assert again != nonce  # a fresh nonce per seal


def test_a_fact_value_does_not_open_with_another_key_key_id_or_as_content() -> None:
    key, key_id = new_data_key(), str(uuid.uuid4())
    nonce, sealed = seal_fact_value(MARKER, key, key_id)
    with pytest.raises(ContentUnreadable):
        open_fact_value(nonce, sealed, new_data_key(), key_id)
    with pytest.raises(ContentUnreadable):
        open_fact_value(nonce, sealed, key, str(uuid.uuid4()))
    with pytest.raises(ContentUnreadable):
        open_fact_value(nonce, sealed[:-1] + bytes([sealed[-1] ^ 1]), key, key_id)
    # the associated data marks a fact value: it never opens as content, nor content as a fact value
    with pytest.raises(ContentUnreadable):
        decrypt_text(nonce, sealed, key, key_id)
    c_nonce, c_sealed = encrypt_text(MARKER, key, key_id)
    with pytest.raises(ContentUnreadable):
        open_fact_value(c_nonce, c_sealed, key, key_id)


def test_open_fact_gives_the_value_the_clear_value_of_an_old_record_or_none_without_the_key() -> None:
    key, key_id = new_data_key(), str(uuid.uuid4())
    nonce, sealed = seal_fact_value("tea", key, key_id)
    record = {"value": "", "value_nonce": nonce, "value_sealed": sealed}
    assert open_fact(record, key_id, {key_id: key}) == "tea"
    assert open_fact(record, key_id, {key_id: None}) is None  # shredded
    assert open_fact(record, key_id, {}) is None
    assert open_fact(record, key_id, {key_id: new_data_key()}) is None
    assert open_fact({"value": "coffee", "value_nonce": None, "value_sealed": None}, key_id, {}) == "coffee"


# -- the client seals; the ledger bytes carry no value ----------------------------------------------------
@pytest.fixture
def client(tmp_path: Path) -> Iterator[MemwardenClient]:
    settings = Settings(bootstrap_servers="127.0.0.1:1", data_dir=tmp_path, topic_prefix="unit")
    with MemwardenClient(settings, kek=KEK) as c:
        yield c


def _data_key(blob: bytes) -> bytes:
    _, record = default_codec().decode(blob)
    return KEK.unwrap(record["wrap_nonce"], record["wrapped_key"], record["key_id"])


def test_the_client_seals_the_fact_value_under_the_content_data_key(client: MemwardenClient) -> None:
    fact = {"entity": "persona", "attribute": "employer", "value": MARKER}
    command, (key_id, blob) = client.build_record(principal="user:alice", subject="user:alice",
                                                  text="works at a secret lab", fact=fact)
    assert command.fact is not None and command.fact.sealed
    assert command.fact.value == "" and (command.fact.entity, command.fact.attribute) == ("persona", "employer")
    assert key_id == command.content.key_id
    key = _data_key(blob)
    assert open_fact(command.fact.model_dump(), key_id, {key_id: key}) == MARKER
    assert open_content({"key_id": key_id, "nonce": command.content.nonce,
                         "ciphertext": command.content.ciphertext}, {key_id: key}) == "works at a secret lab"
    assert command.fact.value_nonce != command.content.nonce
    data = client.encode_signed(command, sign=False)
    assert MARKER.encode() not in data
    name, decoded = default_codec().decode(data)
    again = from_avro(name, decoded)
    assert again == command  # the sealed fact round-trips through Avro


def test_supersede_seals_too(client: MemwardenClient, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[Any] = []
    monkeypatch.setattr(client, "_publish",
                        lambda commands, sign=True: sent.extend(commands) or [Receipt("c", "m", "t", 0, 0)])
    client.supersede(str(uuid.uuid4()), principal="user:alice", subject="user:alice", text="now at a bakery",
                     fact={"entity": "persona", "attribute": "employer", "value": MARKER}, sign=False, wait=False)
    (command, _, (key_id, blob)), = sent
    assert isinstance(command, SupersedeMemory) and command.fact is not None and command.fact.sealed
    assert MARKER.encode() not in client.encode_signed(command, sign=False)
    assert open_fact(command.fact.model_dump(), key_id, {key_id: _data_key(blob)}) == MARKER


def test_sealed_fields_are_not_arguments_and_a_half_sealed_fact_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        build_fact({"entity": "persona", "attribute": "name", "value": "x", "value_sealed": b"0" * 16})
    assert caught.value.field == "fact.value_sealed"
    with pytest.raises(ValueError, match="value_nonce"):
        Fact(entity="persona", attribute="name", value="", value_sealed=b"0" * 16)
    with pytest.raises(ValueError, match="must be empty"):
        Fact(entity="persona", attribute="name", value="x", value_nonce=b"0" * 12, value_sealed=b"0" * 16)
    assert seal_fact(None, new_data_key(), str(uuid.uuid4())) is None


# -- schema evolution: records of the older writer still decode -------------------------------------------
def _millis(value: Any) -> Any:
    if isinstance(value, datetime):
        return to_ms(value)
    if isinstance(value, dict):
        return {k: _millis(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_millis(v) for v in value]
    return value


@pytest.mark.parametrize(("name", "version"), [("RecordMemory", 1), ("SupersedeMemory", 1), ("MemoryRecorded", 3)])
def test_a_record_with_a_clear_fact_of_the_older_writer_schema_still_decodes(name: str, version: int) -> None:
    codec = default_codec()
    old = json.loads((SCHEMA_DIR / "history" / f"memwarden.v1.{name}.v{version}.avsc").read_text())
    parsed = fastavro.parse_schema(old, _write_hint=False)
    fields = [fld["name"] for fld in old["fields"]]
    assert "fact" in fields
    command = f.record("prefers tea").model_copy(
        update={"fact": Fact(entity="user:alice", attribute="drink", value="tea")})
    if name == "SupersedeMemory":
        command = SupersedeMemory(envelope=f.envelope(supersedes=str(uuid.uuid4())), content=command.content,
                                  fact=command.fact)
    body = to_avro(command)
    if name == "MemoryRecorded":
        body = {**body, "event_id": str(uuid.uuid4()), "command_id": command.envelope.command_id,
                "command_type": "RecordMemory", "version": 1, "outcome": "ACCEPTED", "position": POS.as_record(),
                "decided_at": NOW, "closes": [], "approved_by": None}
    body["fact"] = {k: v for k, v in body["fact"].items() if k in ("entity", "attribute", "value", "cardinality")}
    buf = io.BytesIO()  # the history form is canonical: no logical types, times are epoch milliseconds
    fastavro.schemaless_writer(buf, parsed, _millis({k: v for k, v in body.items() if k in fields}))
    fp = schema_fingerprint(parsed)
    assert fp != codec.fingerprint(name)  # the current schema has the sealed fields
    decoded_name, record = codec.decode(MAGIC + fp + buf.getvalue())
    assert decoded_name == name
    assert record["fact"] == {"entity": "user:alice", "attribute": "drink", "value": "tea", "cardinality": "SINGLE",
                              "value_nonce": None, "value_sealed": None}
    if name != "MemoryRecorded":
        assert from_avro(name, record).fact == command.fact


# -- the keyed digest and the compare --------------------------------------------------------------------
SLOT = fact_key("user:alice", "persona", "diet")


def test_the_digest_folds_case_and_spacing_and_is_keyed_and_bound_to_the_slot() -> None:
    d = value_digest(DIGEST_KEY, SLOT, "Vegetarian")
    assert d == value_digest(DIGEST_KEY, SLOT, "  vegetarian ") == value_digest(DIGEST_KEY, SLOT, "VEGETARIAN")
    assert d != value_digest(DIGEST_KEY, SLOT, "vegan")
    assert d != value_digest(b"e" * 32, SLOT, "Vegetarian")  # another namespace's key
    assert d != value_digest(DIGEST_KEY, fact_key("user:bob", "persona", "diet"), "Vegetarian")
    assert d != value_digest(DIGEST_KEY, fact_key("user:alice", "persona", "food"), "Vegetarian")
    assert "vegetarian" not in d.lower() and len(d) == 64


def _keyed(value: str, cardinality: str = "SINGLE") -> Fact:
    return keyed_fact(Fact(entity="persona", attribute="diet", value=value, cardinality=cardinality),
                      "user:alice", value, DIGEST_KEY)


def test_digests_compare_as_the_clear_values_did() -> None:
    held = FactState(SLOT, value_digest(DIGEST_KEY, SLOT, "omnivore"), "m-old")
    assert _keyed("vegetarian").value == value_digest(DIGEST_KEY, SLOT, "vegetarian")
    assert not _keyed("x").sealed
    assert check_fact(_keyed("Omnivore "), held, False, None, False, False).closes is None  # same value
    assert check_fact(_keyed("vegetarian"), held, False, None, False, False).closes == "m-old"
    assert check_fact(_keyed("vegetarian"), held, True, None, False, False).code == "CORE_FACT_CONFLICT"
    assert check_fact(_keyed("vegetarian", "MULTI"), held, True, None, False, False).code is None
    assert check_fact(_keyed("vegetarian"), held, True, "m-old", True, False).code == "CORE_FACT_NEEDS_EVIDENCE"
    assert check_fact(_keyed("vegetarian"), held, True, "m-old", True, True).code is None
    # a slot stored before digests (migration 009: value unknown) compares as a different value
    unknown = FactState(SLOT, None, "m-old")
    assert check_fact(_keyed("omnivore"), unknown, True, None, False, False).code == "CORE_FACT_CONFLICT"
    assert check_fact(_keyed("omnivore"), unknown, False, None, False, False).closes == "m-old"


# -- the gate: slots hold digests; a value that did not open is refused; replay gives no value ------------
def _run(cmd: Any, text: str, state: GateState) -> gate.Decision:
    state = replace(state, principals={**f.registry(), **state.principals})
    cmd, data = f.sign(cmd)
    return gate.decide(cmd, text, POS, state, NOW, GateLimits(), signed_bytes=data)


def _sealed_record(text: str, value: str) -> tuple[RecordMemory, bytes]:
    content, key = f.content(text)
    fact = seal_fact(Fact(entity="persona", attribute="diet", value=value), key, content.key_id)
    return RecordMemory(envelope=f.envelope(), memory_id=str(uuid.uuid4()), content=content, fact=fact), key


def test_the_gate_keeps_the_digest_in_the_slot_and_closes_on_a_different_one() -> None:
    first, _ = _sealed_record("I eat everything", "omnivore")
    gated = first.model_copy(update={"fact": keyed_fact(first.fact, "user:alice", "omnivore",  # type: ignore[arg-type]
                                                        DIGEST_KEY)})
    d = _run(gated, "I eat everything", GateState())
    assert d.admitted
    (slot,) = [e.fact for e in d.effects if isinstance(e, MemoryFacts)]
    assert slot == FactState(SLOT, value_digest(DIGEST_KEY, SLOT, "omnivore"), first.memory_id)
    state = gate.evolve(GateState(), d)
    second, _ = _sealed_record("I am vegetarian now", "vegetarian")
    gated2 = second.model_copy(update={"fact": keyed_fact(second.fact, "user:alice", "vegetarian",  # type: ignore[arg-type]
                                                          DIGEST_KEY)})
    assert _run(gated2, "I am vegetarian now", state).closes == (first.memory_id,)
    protected = replace(state, protected=frozenset({SLOT}))
    assert [r.code for r in _run(gated2, "I am vegetarian now", protected).reasons] == ["CORE_FACT_CONFLICT"]


def test_a_fact_that_reaches_the_gate_still_sealed_is_refused_live_and_holds_no_value_in_replay() -> None:
    command, _ = _sealed_record("I eat everything", "omnivore")
    d = _run(command, "I eat everything", GateState())
    assert d.outcome is Outcome.REJECTED and [(r.code, r.field) for r in d.reasons] == [
        ("FACT_UNREADABLE", "fact.value_sealed")]
    rec = RecordedDecision(Outcome.ACCEPTED, (), NOW, "default/1", "g")
    replayed = from_record(command, rec, GateState())  # its key shredded since: no text, no value
    assert replayed.memory is not None and replayed.memory.fact == SLOT  # the slot is named, by entity/attribute
    assert [e.fact for e in replayed.effects if isinstance(e, MemoryFacts)] == [None]


def test_memory_recorded_never_copies_a_clear_value() -> None:
    command, _ = _sealed_record("I eat everything", "omnivore")
    d = _run(command.model_copy(update={"fact": _keyed("omnivore")}), "I eat everything", GateState())
    event = memory_recorded(command, d, POS, NOW)
    assert event["fact"]["value"] == "" and event["fact"]["value_sealed"] == command.fact.value_sealed  # type: ignore[union-attr]
    legacy = command.model_copy(update={"fact": Fact(entity="persona", attribute="diet", value=MARKER)})
    assert memory_recorded(legacy, d, POS, NOW)["fact"] == {
        "entity": "persona", "attribute": "diet", "value": "", "cardinality": "SINGLE", "value_nonce": None,
        "value_sealed": None}
    assert MARKER.encode() not in default_codec().encode("MemoryRecorded", memory_recorded(legacy, d, POS, NOW))


# -- the processor opens the value with the key ring and hands the gate its digest -----------------------
class _Keys:
    def __init__(self, keys: dict[str, bytes | None]) -> None:
        self.keys = keys

    def lookup(self, key_ids: list[str], timeout_s: float = 30.0) -> dict[str, bytes | None]:
        return {k: self.keys.get(k) for k in key_ids}


def test_the_processor_opens_the_fact_with_the_content_key_and_digests_it() -> None:
    command, key = _sealed_record("I eat everything", "Omnivore")
    legacy = f.record("I drink tea").model_copy(
        update={"fact": Fact(entity="persona", attribute="diet", value="omnivore")})
    shredded, _ = _sealed_record("I eat fish", "pescatarian")
    keys = _Keys({command.content.key_id: key, shredded.content.key_id: None})
    processor = GateProcessor(default_codec(), keys, None, GateLimits(), f.principal("service:admin"),  # type: ignore[arg-type]
                              DIGEST_KEY)
    texts, compared = asyncio.run(processor._decrypt([command, legacy, shredded]))
    assert texts[command.envelope.command_id] == "I eat everything"
    assert texts[shredded.envelope.command_id] is None
    expected = value_digest(DIGEST_KEY, SLOT, "omnivore")
    assert compared[command.envelope.command_id].fact == Fact(entity="persona", attribute="diet", value=expected)
    assert compared[legacy.envelope.command_id].fact.value == expected  # type: ignore[union-attr]
    assert shredded.envelope.command_id not in compared  # stays sealed: no value
    assert compared[command.envelope.command_id].content == command.content
