"""The gate processor's wiring below the integration suite, with the real Avro codec: what is not a
command becomes a dead letter plus a ``REJECTED`` decision naming the reason, and each decision
publishes exactly its records (the gate being the one owner of key tombstones)."""

from __future__ import annotations

from datetime import timedelta

from memwarden.commands import gate
from memwarden.commands.gate import GateState, Outcome, Position
from memwarden.commands.model import PrincipalKind, PublicKey, RegisterPrincipal, to_avro
from memwarden.processors.gate_io import Inbound, decision_records, parse
from memwarden.processors.gate_processor import outbound
from memwarden.schemas.codec import default_codec
from tests import factories as f

CODEC = default_codec()
NOW = f.T0 + timedelta(days=1)
POS = Position("mw.commands", 2, 40)


def _inbound(command: object, offset: int = 40) -> Inbound:
    signed, _ = f.sign(command)
    return Inbound(b"k", CODEC.encode(signed.kind, to_avro(signed)), Position("mw.commands", 2, offset))


def _topics(records: list[dict]) -> list[str]:
    return [r["topic"] for r in records]


def test_garbage_and_non_commands_become_dead_letters_with_a_rejected_decision() -> None:
    event = CODEC.encode("MemoryUsed", {"event_id": "e", "uses": []})
    parsed, out = parse(CODEC, [Inbound(b"k", b"not avro", POS), Inbound(None, None, POS),
                                Inbound(b"k", event, POS)], NOW)
    assert parsed == []
    assert [o.topic for o in out] == ["deadletter", "decisions"] * 3
    letters = [dict(o.headers) for o in out if o.topic == "deadletter"]
    assert [h["reason_code"] for h in letters] == [b"NOT_SINGLE_OBJECT", b"NULL_VALUE", b"NOT_A_COMMAND"]
    assert all(h["source_offset"] == b"40" for h in letters)
    assert out[0].value == b"not avro"  # the original bytes, untouched
    _, decided = CODEC.decode(out[1].value)
    assert decided["outcome"] == "REJECTED" and decided["reasons"][0]["code"] == "NOT_SINGLE_OBJECT"


def test_a_valid_command_parses_with_the_bytes_its_signature_covers() -> None:
    item = _inbound(f.record())
    parsed, out = parse(CODEC, [item], NOW)
    assert out == [] and len(parsed) == 1
    assert parsed[0].signed == CODEC.unsigned_bytes(item.value)


def test_an_accepted_record_publishes_its_decision_and_event() -> None:
    item = _inbound(f.record())
    (p,), _ = parse(CODEC, [item], NOW)
    d = gate.decide(p.command, "prefers tea", item.position, GateState(principals=f.registry()), NOW,
                    signed_bytes=p.signed)
    records = decision_records(CODEC, p.command, d, item, NOW)
    assert _topics(records) == ["decisions", "events"]
    name, event = CODEC.decode(outbound(records)[1].value)
    assert name == "MemoryRecorded" and event["memory_id"] == p.command.memory_id and event["version"] == 1


def test_a_refusal_publishes_only_its_decision() -> None:
    item = _inbound(f.record(principal="user:bob", subject="user:alice"))
    (p,), _ = parse(CODEC, [item], NOW)
    d = gate.decide(p.command, "prefers tea", item.position, GateState(), NOW, signed_bytes=p.signed)
    assert d.outcome is Outcome.REJECTED
    assert _topics(decision_records(CODEC, p.command, d, item, NOW)) == ["decisions"]


def test_a_forget_publishes_the_tombstone_of_every_version_key() -> None:
    record = f.record()
    state = GateState(principals=f.registry())
    d1 = gate.decide(*_signed(record), POS, state, NOW, signed_bytes=_signed_bytes(record))
    state = gate.evolve(state, d1)
    again = f.supersede(record.memory_id)
    d2 = gate.decide(*_signed(again, "prefers coffee"), Position("mw.commands", 2, 41), state, NOW,
                     signed_bytes=_signed_bytes(again))
    state = gate.evolve(state, d2)
    forget = f.forget(record.memory_id)
    item = _inbound(forget, 42)
    (p,), _ = parse(CODEC, [item], NOW)
    d3 = gate.decide(p.command, None, item.position, state, NOW, signed_bytes=p.signed)
    records = decision_records(CODEC, p.command, d3, item, NOW)
    assert _topics(records) == ["decisions", "events", "keys", "keys"]
    tombstones = [o for o in outbound(records) if o.topic == "keys"]
    assert {o.key for o in tombstones} == {record.content.key_id.encode(), again.content.key_id.encode()}
    assert all(o.value is None for o in tombstones)


def test_a_registration_publishes_the_registry_entry() -> None:
    s = f.signer("user:newcomer")
    command = RegisterPrincipal(envelope=f.envelope("service:admin", "user:newcomer", scope="governance",
                                                    source=f.Source(kind="APPROVED_RULE")),
                                principal_id="user:newcomer", principal_kind=PrincipalKind.USER,
                                key=PublicKey(key_id=s.key_id, public_key=s.public_key))
    item = _inbound(command)
    (p,), _ = parse(CODEC, [item], NOW)
    d = gate.decide(p.command, None, item.position, GateState(principals=f.registry()), NOW, signed_bytes=p.signed)
    assert d.outcome is Outcome.ACCEPTED
    records = decision_records(CODEC, p.command, d, item, NOW)
    assert _topics(records) == ["decisions", "events", "principals"]
    name, state = CODEC.decode(outbound(records)[2].value)
    assert name == "PrincipalState" and state["principal_id"] == "user:newcomer"


def _signed(command: object, text: str = "prefers tea") -> tuple[object, str]:
    return f.sign(command)[0], text


def _signed_bytes(command: object) -> bytes:
    return f.sign(command)[1]
