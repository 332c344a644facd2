"""``MemwardenClient`` rejects bad arguments with a ``ValidationError`` naming the field, before
anything reaches Kafka; good text (emoji, CJK, zero-width) is encrypted and decrypts byte-exact; times
with an offset are normalised to UTC (field cases W8, W9; seed 004 "The write boundary is the first
safety boundary").

No broker is needed: confluent-kafka's ``Producer`` does not connect when constructed, and every test
that could publish swaps it for a recorder that must stay empty.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memwarden.commands.model import RecordMemory, from_avro, to_avro
from memwarden.crypto import ContentUnreadable, Kek, decrypt_text
from memwarden.errors import ValidationError
from memwarden.producers.client import MemwardenClient
from memwarden.schemas.codec import default_codec
from memwarden.settings import Settings

KEK = Kek(b"k" * 32)
IST = timezone(timedelta(hours=5, minutes=30))
BASE: dict[str, Any] = {"principal": "user:alice", "subject": "user:alice", "text": "prefers green tea"}


class RecordingProducer:
    """Stands in for confluent-kafka's ``Producer``: records every ``produce`` call, sends nothing."""

    def __init__(self) -> None:
        self.produced: list[tuple[str, bytes | None, bytes | None]] = []

    def produce(self, topic: str, key: bytes | None = None, value: bytes | None = None, **_: Any) -> None:
        self.produced.append((topic, key, value))

    def poll(self, timeout: float = 0) -> int:
        return 0

    def flush(self, timeout: float = 0) -> int:
        return 0


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(bootstrap_servers="127.0.0.1:1", data_dir=tmp_path, topic_prefix="unit")


@pytest.fixture
def client(settings: Settings) -> Iterator[MemwardenClient]:
    with MemwardenClient(settings, kek=KEK) as c:
        yield c


@pytest.fixture
def producer(client: MemwardenClient, monkeypatch: pytest.MonkeyPatch) -> RecordingProducer:
    recorder = RecordingProducer()
    monkeypatch.setattr(client, "_producer", recorder)
    return recorder


def _args(**over: Any) -> dict[str, Any]:
    return {**BASE, **over}


def _plaintext(command: RecordMemory, data_key: tuple[str, bytes]) -> str:
    """Decrypt ``command``'s content the way a reader does: decode the DataKey, unwrap it with the KEK."""
    key_id, blob = data_key
    name, record = default_codec().decode(blob)
    assert name == "DataKey"
    assert record["key_id"] == key_id == command.content.key_id
    assert record["subject"] == command.envelope.subject
    assert record["kek_id"] == KEK.kek_id
    key = KEK.unwrap(record["wrap_nonce"], record["wrapped_key"], key_id)
    return decrypt_text(command.content.nonce, command.content.ciphertext, key, key_id)


# (arguments overriding BASE, field the error must name, words the message must contain)
INVALID: list[Any] = [
    pytest.param({"principal": ""}, "principal", "empty", id="empty-principal"),
    pytest.param({"principal": "   "}, "principal", "empty", id="blank-principal"),
    pytest.param({"principal": None}, "principal", "", id="none-principal"),
    pytest.param({"principal": "a" * 257}, "principal", "", id="overlong-principal"),
    pytest.param({"subject": ""}, "subject", "empty", id="empty-subject"),
    pytest.param({"text": 42}, "text", "string", id="int-text"),
    pytest.param({"text": b"prefers tea"}, "text", "string", id="bytes-text"),
    pytest.param({"text": ""}, "text", "empty", id="empty-text"),
    pytest.param({"text": " \t\n "}, "text", "empty", id="whitespace-text"),
    pytest.param({"text": "tea \ud800 pot"}, "text", "surrogate", id="lone-surrogate-text"),
    pytest.param({"principal": "user:\udfff"}, "principal", "surrogate", id="lone-surrogate-principal"),
    # a NUL stopped the gate for good (PostgreSQL's text refuses it; newcomer trial, twentieth session)
    pytest.param({"tags": ["a\x00b"]}, "tags.0", "NUL", id="nul-tag"),
    # newcomer trial, twenty-fourth session: a NUL in the text itself, and a text of zero-width spaces (stored,
    # it then matched a recall of an emoji above the relevance floor), were accepted
    pytest.param({"text": "Dave\x00s favourite ink is sepia"}, "text", "NUL", id="nul-text"),
    pytest.param({"text": "\u200b\u200b\u200b"}, "text", "invisible", id="zero-width-text"),
    pytest.param({"text": "\ufeff\u2060 \u200d\u3164"}, "text", "invisible", id="invisible-text"),
    pytest.param({"text": " \n\t "}, "text", "empty", id="blank-text"),
    pytest.param({"source_ref": "chat:\x00"}, ("source_ref", "source.reference"), "NUL", id="nul-source_ref"),
    pytest.param({"observed_at": datetime(2025, 7, 25, 2, 0)}, "observed_at", "timezone", id="naive-observed_at"),
    pytest.param({"effective_from": datetime(2025, 7, 25)}, "effective_from", "timezone", id="naive-effective_from"),
    pytest.param({"colour": "blue"}, "colour", "unknown", id="unknown-keyword"),
    pytest.param({"source_kind": "RUMOUR"}, ("source_kind", "source.kind"), "USER_STATEMENT", id="bad-source_kind"),
    pytest.param({"sensitivity": "TOP_SECRET"}, "sensitivity", "RESTRICTED", id="bad-sensitivity"),
    pytest.param({"epistemic_status": "CERTAIN"}, "epistemic_status", "", id="bad-epistemic_status"),
    pytest.param({"command_id": "not-a-uuid"}, "command_id", "UUID", id="bad-command_id"),
    pytest.param({"memory_id": "42"}, "memory_id", "UUID", id="bad-memory_id"),
    pytest.param({"derived_from": ["x"]}, "source.derived_from.0", "UUID", id="bad-derived_from"),
    pytest.param({"write_authority": {"policy_id": ""}}, "write_authority.policy_id", "empty", id="bad-authority"),
]


def _check(err: ValidationError, field: str | tuple[str, ...], words: str) -> None:
    fields = (field,) if isinstance(field, str) else field
    assert err.field in fields
    assert str(err).startswith(f"{err.field}: ")
    assert words.lower() in err.reason.lower()


@pytest.mark.parametrize(("over", "field", "words"), INVALID)
def test_build_record_names_the_bad_field(client: MemwardenClient, over: dict[str, Any],
                                          field: str | tuple[str, ...], words: str) -> None:
    with pytest.raises(ValidationError) as caught:
        client.build_record(**_args(**over))
    _check(caught.value, field, words)


@pytest.mark.parametrize(("over", "field", "words"), INVALID)
def test_record_rejects_before_anything_is_sent(client: MemwardenClient, producer: RecordingProducer,
                                                over: dict[str, Any], field: str | tuple[str, ...], words: str) -> None:
    with pytest.raises(ValidationError) as caught:
        client.record(**_args(**over))
    _check(caught.value, field, words)
    assert producer.produced == []  # neither the data key nor the command


@pytest.mark.parametrize("missing", ["principal", "subject", "text"])
def test_a_missing_required_argument_is_a_type_error_and_sends_nothing(
        client: MemwardenClient, producer: RecordingProducer, missing: str) -> None:
    args = _args()
    del args[missing]
    with pytest.raises(TypeError, match=missing):
        client.build_record(**args)
    with pytest.raises(TypeError, match=missing):
        client.record(**args)
    assert producer.produced == []


def test_a_10_mb_text_is_rejected_with_the_limit(client: MemwardenClient, producer: RecordingProducer) -> None:
    text = "x" * 10_000_000
    with pytest.raises(ValidationError) as caught:
        client.record(**_args(text=text))
    err = caught.value
    assert err.field == "text"
    assert str(client.settings.max_text_chars) in err.reason
    assert "limit" in err.reason
    assert producer.produced == []


def test_the_text_limit_counts_characters_not_bytes(tmp_path: Path) -> None:
    with MemwardenClient(Settings(bootstrap_servers="127.0.0.1:1", data_dir=tmp_path, max_text_chars=10),
                         kek=KEK) as small:
        command, key = small.build_record(**_args(text="茶" * 10))  # 30 UTF-8 bytes, 10 characters
        assert _plaintext(command, key) == "茶" * 10
        with pytest.raises(ValidationError) as caught:
            small.build_record(**_args(text="茶" * 11))
    assert caught.value.field == "text"
    assert "limit 10" in caught.value.reason


def test_effective_to_before_observed_at_is_rejected_and_sends_nothing(client: MemwardenClient,
                                                                       producer: RecordingProducer) -> None:
    observed = datetime(2025, 7, 25, 2, 0, tzinfo=UTC)
    for effective_to in (observed - timedelta(days=1), observed):
        with pytest.raises(ValidationError) as caught:
            client.record(**_args(observed_at=observed, effective_to=effective_to))
        assert "effective_to" in str(caught.value)
    assert producer.produced == []


def test_effective_to_before_observed_at_names_effective_to(client: MemwardenClient) -> None:
    observed = datetime(2025, 7, 25, 2, 0, tzinfo=UTC)
    with pytest.raises(ValidationError) as caught:
        client.build_record(**_args(observed_at=observed, effective_to=observed - timedelta(days=1)))
    assert caught.value.field == "effective_to"


def test_one_bad_item_in_a_batch_publishes_nothing(client: MemwardenClient, producer: RecordingProducer) -> None:
    with pytest.raises(ValidationError) as caught:
        client.record_many([_args(), _args(text="ok too"), _args(sensitivity="TOP_SECRET")])
    assert caught.value.field == "sensitivity"
    assert producer.produced == []


@pytest.mark.parametrize(("fact", "field"), [
    ({"entity": "user:alice", "attribute": "drink", "value": "tea \ud800"}, "fact.value"),
    ({"entity": "user:alice", "attribute": "drink", "value": "tea", "colour": "green"}, "fact.colour"),
    ({"entity": "user:alice"}, "fact.attribute"),
])
def test_a_bad_fact_is_a_validation_error_naming_the_field(client: MemwardenClient, fact: dict[str, str],
                                                           field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        client.build_record(**_args(fact=fact))
    assert caught.value.field == field


@pytest.mark.parametrize("name", ["purposes", "tags"])
def test_a_bare_string_is_not_split_into_characters(client: MemwardenClient, name: str) -> None:
    try:
        command, _ = client.build_record(**_args(**{name: "support"}))
    except ValidationError as err:
        assert err.field == name
    else:
        got = command.envelope.purposes if name == "purposes" else command.tags
        assert got == ("support",)


@pytest.mark.parametrize("text", [
    "prefers 🍵 over ☕ 👍🏽",
    "👩‍👩‍👧‍👦 family plan, flag 🇳🇴",
    "喜欢喝绿茶，住在東京。차를 좋아해요",
    "tea\u200bpot\u200c\u200d\u2060\ufeff end",
    "cafe\u0301 vs café, RTL: שלום مرحبا",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \U0010fffd line\r\nbreak\ttab",
])
def test_unicode_text_encrypts_and_decrypts_byte_exact(client: MemwardenClient, text: str) -> None:
    command, data_key = client.build_record(**_args(text=text))
    assert text.encode("utf-8") not in command.content.ciphertext
    assert _plaintext(command, data_key).encode("utf-8") == text.encode("utf-8")
    # and through the ledger's Avro bytes, as a replaying reader sees it
    codec = default_codec()
    name, record = codec.decode(codec.encode(command.kind, to_avro(command)))
    replayed = from_avro(name, record)
    assert replayed == command
    assert isinstance(replayed, RecordMemory)
    assert _plaintext(replayed, data_key).encode("utf-8") == text.encode("utf-8")


def test_each_record_gets_its_own_data_key(client: MemwardenClient) -> None:
    first, (first_key, _) = client.build_record(**_args())
    second, (second_key, _) = client.build_record(**_args())
    assert first_key != second_key
    assert first.content.ciphertext != second.content.ciphertext
    assert first.envelope.command_id != second.envelope.command_id
    assert str(uuid.UUID(first.envelope.command_id)) == first.envelope.command_id


def test_a_wrong_kek_cannot_unwrap_the_data_key(client: MemwardenClient) -> None:
    _, (key_id, blob) = client.build_record(**_args())
    _, record = default_codec().decode(blob)
    with pytest.raises(ContentUnreadable, match="does not unwrap"):
        Kek(b"x" * 32).unwrap(record["wrap_nonce"], record["wrapped_key"], key_id)


def test_offset_times_are_normalised_to_utc(client: MemwardenClient) -> None:
    """Field case W8: a time carrying +05:30 is stored as the same instant in UTC, at millisecond precision."""
    local = datetime(2025, 7, 25, 7, 30, 0, 123456, tzinfo=IST)
    command, _ = client.build_record(**_args(observed_at=local, effective_from=local,
                                             effective_to=datetime(2025, 7, 25, 3, 0, tzinfo=UTC)))
    env = command.envelope
    for value in (env.observed_at, env.effective_from, env.issued_at):
        assert value is not None
        assert value.utcoffset() == timedelta(0)
    assert env.observed_at == datetime(2025, 7, 25, 2, 0, 0, 123000, tzinfo=UTC)
    assert env.observed_at.isoformat() == "2025-07-25T02:00:00.123000+00:00"
    assert env.effective_from == env.observed_at
    # 03:00Z is later than 07:30+05:30 (= 02:00Z): the interval is ordered in UTC, not by wall clock
    assert env.effective_to == datetime(2025, 7, 25, 3, 0, tzinfo=UTC)
    codec = default_codec()
    _, record = codec.decode(codec.encode(command.kind, to_avro(command)))
    assert record["envelope"]["observed_at"] == env.observed_at


def test_an_offset_time_given_as_iso_text_is_normalised_too(client: MemwardenClient) -> None:
    command, _ = client.build_record(**_args(observed_at="2025-07-25T07:30:00+05:30"))
    assert command.envelope.observed_at == datetime(2025, 7, 25, 2, 0, tzinfo=UTC)
    assert command.envelope.observed_at.utcoffset() == timedelta(0)


def test_a_refused_read_names_its_field_once_and_an_unsigned_one_the_missing_key() -> None:
    """"include_untrusted: include_untrusted: must be a boolean", and "auth: READ_UNSIGNED ..." for a client
    holding no key for the reader (newcomer trial, twentieth session)."""
    from memwarden.producers.building import refused_read

    bad = refused_read({"error": "include_untrusted: must be a boolean (true or false)", "code": "INVALID_FIELD",
                        "field": "include_untrusted"}, "user:ann", signed=True)
    assert bad.field == "include_untrusted" and str(bad) == "include_untrusted: must be a boolean (true or false)"
    unsigned = {"error": "the request carries no auth.key_id and auth.signature", "code": "READ_UNSIGNED",
                "field": "auth"}
    keyless = refused_read(unsigned, "user:ann", signed=False)
    assert keyless.field == "principal" and "no signing key held for user:ann" in str(keyless)
    assert refused_read(unsigned, "user:ann", signed=True).field == "auth"
