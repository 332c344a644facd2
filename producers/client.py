"""``MemwardenClient``: what agents use to write memory commands and recall memories.

Writes: a command is built from keyword arguments, validated (a clear ``ValidationError`` naming the
field), its text encrypted under a fresh data key, the wrapped key published to the compacted keys
topic and delivered, then the command published to the ledger with confluent-kafka's idempotent
producer (``acks=all``), keyed by subject so one subject's history stays ordered in one partition.
The ledger position (topic, partition, offset) comes back once delivered.

Signing: every command carries σ(μ) (SSGM Principle 2), an Ed25519 signature by a key of its
``envelope.principal`` over the canonical unsigned bytes. The client signs transparently with the
:class:`~memwarden.commands.signing.Signer` it holds for that principal (``signers=`` or
:meth:`MemwardenClient.add_signer`); without one it refuses to publish (``sign=False`` publishes an
unsigned command on purpose, which the gate rejects).

Reads: ``recall`` asks the projector worker's read endpoint (the process that owns the index).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pydantic
from confluent_kafka import KafkaError, Producer

from memwarden.commands.model import (
    ApproveQuarantined,
    EncryptedContent,
    Envelope,
    EpistemicStatus,
    Fact,
    ForgetMemory,
    GrantAccess,
    PrincipalKind,
    ProtectFact,
    PublicKey,
    PublishPolicy,
    RecordMemory,
    RegisterPrincipal,
    RejectQuarantined,
    RevokeAccess,
    RevokeKey,
    RotateKey,
    Sensitivity,
    Source,
    SourceKind,
    StoreKind,
    SupersedeMemory,
    WriteAuthority,
    to_avro,
)
from memwarden.commands.read_auth import sign_request
from memwarden.commands.readmodel.query import DEFAULT_PURPOSE, RecalledMemory, RecallMode, check_query
from memwarden.commands.signing import Signer
from memwarden.crypto import Kek, encrypt_text, load_kek, new_data_key
from memwarden.errors import MemwardenError, StackUnavailable, ValidationError
from memwarden.schemas.codec import AvroCodec, default_codec
from memwarden.settings import Settings


@dataclass(frozen=True)
class Receipt:
    """What a delivered command returns: its ids and ledger position."""

    command_id: str
    memory_id: str
    topic: str
    partition: int
    offset: int


def check_text(text: Any, max_chars: int, field: str = "text") -> str:
    """Validate memory text: a non-empty UTF-8 string of at most ``max_chars`` characters."""
    if not isinstance(text, str):
        raise ValidationError(field, f"must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValidationError(field, "must not be empty")
    if len(text) > max_chars:
        raise ValidationError(field, f"has {len(text)} characters, limit {max_chars}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(field, f"not valid UTF-8 (lone surrogate at index {exc.start})") from None
    return text


def _build(model: type[pydantic.BaseModel], data: dict[str, Any], prefix: str = "") -> Any:
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        msg = str(first["msg"])
        if not field:  # a model-level rule names its field as "field: reason"
            named = re.match(r"(?:Value error, )?([a-z_.]+): (.*)", msg)
            field, msg = (named.group(1), named.group(2)) if named else ("command", msg)
        raise ValidationError(prefix + field, msg) from None


def _names(value: Any, field: str) -> tuple[Any, ...]:
    """A list of names; a bare string is refused rather than split into characters."""
    if isinstance(value, str | bytes):
        raise ValidationError(field, "must be a list of strings, not a single string")
    return tuple(value)


def _fact(fact: Mapping[str, Any] | None) -> Fact | None:
    return _build(Fact, dict(fact), "fact.") if fact else None


#: Command ids per decisions lookup request.
_LOOKUP_CHUNK = 2_000


class MemwardenClient:
    """Client of one namespace. Thread-compatible; call :meth:`close` (or use ``with``) when done.

    Args:
        settings: where Kafka and the worker are.
        kek: key-encryption key (default: from settings / the data folder).
    """

    def __init__(self, settings: Settings, kek: Kek | None = None, codec: AvroCodec | None = None,
                 signers: Iterable[Signer] = ()) -> None:
        self.settings = settings
        self._signers: dict[str, Signer] = {sg.principal_id: sg for sg in signers}
        self._kek = kek or load_kek(settings.kek, settings.data_dir)
        self._codec = codec or default_codec()
        self._producer = Producer({
            "bootstrap.servers": settings.bootstrap_servers,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "compression.type": "lz4",
            "message.max.bytes": 1_048_576,
        })
        self._http = httpx.Client(base_url=settings.worker_url, timeout=30.0)

    def add_signer(self, signer: Signer) -> None:
        """Sign commands of ``signer.principal_id`` with it from now on."""
        self._signers[signer.principal_id] = signer

    def __enter__(self) -> MemwardenClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- building -----------------------------------------------------------------------------
    def _envelope(self, principal: str, subject: str, *, command_id: str | None, scope: str,
                  source_kind: SourceKind | str, source_ref: str | None, source_uri: str | None,
                  derived_from: Sequence[str], quoted_span: str | None, store_kind: StoreKind | str,
                  observed_at: datetime | None, effective_from: datetime | None, effective_to: datetime | None,
                  expires_at: datetime | None, epistemic_status: EpistemicStatus | str,
                  sensitivity: Sensitivity | str, purposes: Sequence[str], supersedes: str | None,
                  write_authority: Mapping[str, Any] | None, attributes: Mapping[str, str] | None) -> dict[str, Any]:
        now = datetime.now(UTC)
        return {
            "command_id": command_id or str(uuid.uuid4()),
            "principal": principal, "subject": subject, "scope": scope, "store_kind": store_kind,
            "source": {"kind": source_kind, "reference": source_ref, "uri": source_uri,
                       "derived_from": _names(derived_from, "derived_from"), "quoted_span": quoted_span},
            "observed_at": observed_at if observed_at is not None else now, "issued_at": now,
            "effective_from": effective_from, "effective_to": effective_to, "expires_at": expires_at,
            "epistemic_status": epistemic_status, "sensitivity": sensitivity, "purposes": _names(purposes, "purposes"),
            "supersedes": supersedes,
            "write_authority": dict(write_authority) if write_authority else None,
            "attributes": dict(attributes or {}),
        }

    def _encrypt(self, text: str, subject: str) -> tuple[dict[str, Any], tuple[str, bytes]]:
        key_id = str(uuid.uuid4())
        key = new_data_key()
        nonce, ciphertext = encrypt_text(text, key, key_id)
        wrap_nonce, wrapped = self._kek.wrap(key, key_id)
        data_key = self._codec.encode("DataKey", {
            "key_id": key_id, "subject": subject, "kek_id": self._kek.kek_id, "algorithm": "AES-256-GCM",
            "wrap_nonce": wrap_nonce, "wrapped_key": wrapped, "created_at": datetime.now(UTC)})
        return {"key_id": key_id, "nonce": nonce, "ciphertext": ciphertext}, (key_id, data_key)

    def build_record(self, *, principal: str, subject: str, text: str, memory_id: str | None = None,
                     fact: Mapping[str, str] | None = None, tags: Sequence[str] = (),
                     **envelope: Any) -> tuple[RecordMemory, tuple[str, bytes]]:
        """Validate and build a ``RecordMemory`` and its wrapped data key (not yet published)."""
        check_text(text, self.settings.max_text_chars)
        env = _build(Envelope, self._envelope(principal, subject, **_envelope_defaults(envelope)))
        content, data_key = self._encrypt(text, subject)
        command = _build(RecordMemory, {"envelope": env, "memory_id": memory_id or str(uuid.uuid4()),
                                        "content": EncryptedContent(**content),
                                        "fact": _fact(fact), "tags": _names(tags, "tags")})
        return command, data_key

    # -- publishing ---------------------------------------------------------------------------
    def record(self, sign: bool = True, **kwargs: Any) -> Receipt:
        """Publish one ``RecordMemory``; see :meth:`build_record` for the arguments.

        Returns the ``Receipt`` once the broker acknowledged it (acks=all). Raises
        ``ValidationError`` for bad arguments, ``StackUnavailable`` if Kafka does not acknowledge.
        """
        return self.record_many([kwargs], sign)[0]

    def record_many(self, items: Iterable[Mapping[str, Any]], sign: bool = True) -> list[Receipt]:
        """Validate every item first (nothing is published if one is bad), then publish all data keys,
        wait for them, publish all commands and wait: two round trips for a whole batch."""
        built = [self.build_record(**dict(item)) for item in items]
        return self._publish([(c, c.memory_id, k) for c, k in built], sign)

    def supersede(self, memory_id: str, *, principal: str, subject: str, text: str,
                  evidence: Sequence[str] = (), fact: Mapping[str, str] | None = None, sign: bool = True,
                  **envelope: Any) -> Receipt:
        """Publish a ``SupersedeMemory``: a new version of ``memory_id`` with ``text``."""
        check_text(text, self.settings.max_text_chars)
        env = _build(Envelope, self._envelope(principal, subject, **_envelope_defaults(envelope, memory_id)))
        content, data_key = self._encrypt(text, subject)
        command = _build(SupersedeMemory, {"envelope": env, "content": EncryptedContent(**content),
                                           "fact": _fact(fact), "evidence": _names(evidence, "evidence")})
        return self._publish([(command, command.memory_id, data_key)], sign)[0]

    def forget(self, memory_id: str, *, principal: str, subject: str, reason: str = "", sign: bool = True,
               **envelope: Any) -> Receipt:
        """Publish a ``ForgetMemory`` for every version of ``memory_id``."""
        env = _build(Envelope, self._envelope(principal, subject, **_envelope_defaults(envelope)))
        command = _build(ForgetMemory, {"envelope": env, "memory_id": memory_id, "reason": reason})
        return self._publish([(command, command.memory_id, None)], sign)[0]

    # -- governance (issue 3 and 4) -------------------------------------------------------------
    def _governance(self, model: type[pydantic.BaseModel], principal: str, subject: str, sign: bool,
                    fields: dict[str, Any], **envelope: Any) -> Receipt:
        envelope.setdefault("scope", "governance")
        envelope.setdefault("source_kind", SourceKind.APPROVED_RULE)
        env = _build(Envelope, self._envelope(principal, subject, **_envelope_defaults(envelope)))
        command = _build(model, {"envelope": env, **fields})
        return self._publish([(command, "", None)], sign)[0]

    def register_principal(self, principal_id: str, *, by: str, kind: PrincipalKind | str = PrincipalKind.USER,
                           roles: Sequence[str] = (), attributes: Mapping[str, str] | None = None,
                           public_key: bytes, key_id: str, sign: bool = True) -> Receipt:
        """``RegisterPrincipal`` issued by admin ``by``: kind, roles, attributes and first key."""
        return self._governance(RegisterPrincipal, by, principal_id, sign, {
            "principal_id": principal_id, "principal_kind": kind, "roles": _names(roles, "roles"),
            "attributes": dict(attributes or {}), "key": PublicKey(key_id=key_id, public_key=public_key)})

    def rotate_key(self, principal_id: str, *, by: str, public_key: bytes, key_id: str, sign: bool = True) -> Receipt:
        """``RotateKey``: a new key for ``principal_id`` (by itself or an admin)."""
        return self._governance(RotateKey, by, principal_id, sign, {
            "principal_id": principal_id, "key": PublicKey(key_id=key_id, public_key=public_key)})

    def revoke_key(self, principal_id: str, key_id: str, *, by: str, reason: str = "", sign: bool = True) -> Receipt:
        """``RevokeKey``: ``key_id`` verifies nothing decided from now on."""
        return self._governance(RevokeKey, by, principal_id, sign, {
            "principal_id": principal_id, "key_id": key_id, "reason": reason})

    def publish_policy(self, document: str, *, by: str, sign: bool = True) -> Receipt:
        """``PublishPolicy`` of a JSON write-policy document (policy id and version read from it)."""
        import json

        try:
            head = json.loads(document)
            policy_id, version = str(head["policy_id"]), int(head["version"])
        except (ValueError, KeyError, TypeError):
            policy_id, version = "unparsed", 1  # the gate rejects it with the parse error, on the ledger
        return self._governance(PublishPolicy, by, "policy", sign, {
            "policy_id": policy_id, "version": version, "document": document})

    def protect_fact(self, subject: str, entity: str, attribute: str, *, by: str, protected: bool = True,
                     sign: bool = True) -> Receipt:
        """``ProtectFact``: mark ``subject``'s (entity, attribute) as protected core fact."""
        return self._governance(ProtectFact, by, subject, sign, {
            "entity": entity, "attribute": attribute, "protected": protected})

    def approve_quarantined(self, command_id: str, *, by: str, subject: str, note: str = "",
                            sign: bool = True) -> Receipt:
        """``ApproveQuarantined`` by reviewer ``by`` (keyed by the memory's ``subject``)."""
        return self._governance(ApproveQuarantined, by, subject, sign, {
            "quarantined_command_id": command_id, "note": note})

    def reject_quarantined(self, command_id: str, *, by: str, subject: str, note: str = "",
                           sign: bool = True) -> Receipt:
        """``RejectQuarantined`` by reviewer ``by``: the quarantined content's key is shredded."""
        return self._governance(RejectQuarantined, by, subject, sign, {
            "quarantined_command_id": command_id, "note": note})

    def grant_access(self, grantee: str, *, by: str, rights: Sequence[str], scopes: Sequence[str],
                     subjects: Sequence[str] = (), purposes: Sequence[str] = (), store_kinds: Sequence[str] = (),
                     sensitivity_ceiling: Sensitivity | str = Sensitivity.INTERNAL,
                     valid_from: datetime | None = None, valid_to: datetime | None = None,
                     relationship: str | None = None, grant_id: str | None = None, sign: bool = True) -> Receipt:
        """``GrantAccess``: ``grantee`` (principal id or ``role:<name>``) gets ``rights`` on records in
        ``scopes`` (and ``subjects``), for ``purposes`` and ``store_kinds``, up to the ceiling."""
        gid = grant_id or str(uuid.uuid4())
        receipt = self._governance(GrantAccess, by, grantee, sign, {
            "grant_id": gid, "grantee": grantee, "rights": _names(rights, "rights"),
            "scopes": _names(scopes, "scopes"), "subjects": _names(subjects, "subjects"),
            "purposes": _names(purposes, "purposes"), "store_kinds": _names(store_kinds, "store_kinds"),
            "sensitivity_ceiling": sensitivity_ceiling, "valid_from": valid_from, "valid_to": valid_to,
            "relationship": relationship})
        return Receipt(receipt.command_id, gid, receipt.topic, receipt.partition, receipt.offset)

    def revoke_access(self, grant_id: str, *, by: str, grantee: str, reason: str = "", sign: bool = True) -> Receipt:
        """``RevokeAccess``: the grant stops applying from the next read and write on."""
        return self._governance(RevokeAccess, by, grantee, sign, {"grant_id": grant_id, "reason": reason})

    def decisions(self, command_ids: Sequence[str], timeout_s: float = 60.0) -> dict[str, str]:
        """Wait until the gate decided every command id; returns ``command_id -> outcome``.

        See :meth:`decided` for the whole decisions. Raises ``StackUnavailable`` after ``timeout_s``
        seconds or when the read API does not answer.
        """
        return {cid: d["outcome"] for cid, d in self.decided(command_ids, timeout_s).items()}

    def decided(self, command_ids: Sequence[str], timeout_s: float = 60.0) -> dict[str, dict[str, Any]]:
        """Wait until the gate decided every command id; returns ``command_id -> decision`` (``outcome``,
        ``reasons`` with ``code``/``message``/``field``, ``memory_id``, ``policy_version``, ledger
        ``position``, ``decided_at``), asked of the read API's public decisions endpoint.

        Raises ``StackUnavailable`` after ``timeout_s`` seconds or when the read API does not answer.
        """
        wanted = list(dict.fromkeys(command_ids))
        found: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + timeout_s
        while True:
            missing = [cid for cid in wanted if cid not in found]
            for i in range(0, len(missing), _LOOKUP_CHUNK):
                found.update(self._lookup(missing[i:i + _LOOKUP_CHUNK]))
            if len(found) >= len(wanted):
                return found
            if time.monotonic() > deadline:
                raise StackUnavailable(f"{len(wanted) - len(found)} commands not decided in {timeout_s}s")
            time.sleep(0.1)

    def _lookup(self, command_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        try:
            response = self._http.post("/decisions", json={"command_ids": list(command_ids)})
        except httpx.HTTPError as exc:
            raise StackUnavailable(f"worker at {self.settings.worker_url} does not answer: {exc}") from exc
        if response.status_code != 200:
            raise MemwardenError(f"decisions lookup failed with HTTP {response.status_code}: {response.text}")
        decisions: dict[str, dict[str, Any]] = response.json()["decisions"]
        return decisions

    def publish_raw(self, key: bytes | None, value: bytes | None) -> Receipt:
        """Publish arbitrary bytes to the commands topic (tests and tools; no validation at all)."""
        return self._send([(self.settings.topic("commands"), key, value)], [""])[0]

    def encode_signed(self, command: Any, sign: bool = True) -> bytes:
        """Single-object bytes of ``command``, signed by its principal's signer when ``sign``.

        Raises ``ValidationError`` (field ``principal``) when ``sign`` and no signer is held.
        """
        unsigned = self._codec.encode(command.kind, to_avro(command))
        if not sign:
            return unsigned
        signer = self._signers.get(command.envelope.principal)
        if signer is None:
            raise ValidationError("principal", f"no signing key held for {command.envelope.principal!r};"
                                  " add one with add_signer()")
        signature = {"key_id": signer.key_id, "algorithm": "Ed25519", "value": signer.sign(unsigned)}
        record = to_avro(command)
        record["envelope"]["signature"] = signature
        return self._codec.encode(command.kind, record)

    def _publish(self, commands: Sequence[tuple[Any, str, tuple[str, bytes] | None]],
                 sign: bool = True) -> list[Receipt]:
        encoded = [self.encode_signed(c, sign) for c, _, _ in commands]  # refuse before sending anything
        keys = [(self.settings.topic("keys"), k[0].encode(), k[1]) for _, _, k in commands if k is not None]
        if keys:
            self._send(keys, [""] * len(keys))
        records = [(self.settings.topic("commands"), c.envelope.subject.encode(), value)
                   for (c, _, _), value in zip(commands, encoded, strict=True)]
        receipts = self._send(records, [c.envelope.command_id for c, _, _ in commands])
        return [Receipt(c.envelope.command_id, mid, r.topic, r.partition, r.offset)
                for (c, mid, _), r in zip(commands, receipts, strict=True)]

    def _send(self, records: Sequence[tuple[str, bytes | None, bytes | None]], ids: Sequence[str],
              timeout_s: float = 60.0) -> list[Receipt]:
        results: list[Receipt | KafkaError | None] = [None] * len(records)

        def on_delivery(i: int) -> Any:
            def report(err: KafkaError | None, msg: Any) -> None:
                results[i] = err if err is not None else Receipt(ids[i], "", msg.topic(), msg.partition(),
                                                                 msg.offset())
            return report

        for i, (topic, key, value) in enumerate(records):
            while True:
                try:
                    self._producer.produce(topic, key=key, value=value, on_delivery=on_delivery(i))
                    break
                except BufferError:
                    self._producer.poll(0.1)
        left = self._producer.flush(timeout_s)
        if left:
            raise StackUnavailable(f"{left} records not acknowledged by Kafka within {timeout_s}s")
        errors = [r for r in results if isinstance(r, KafkaError) or r is None]
        if errors:
            raise StackUnavailable(f"Kafka refused {len(errors)} records: {errors[0]}")
        return [r for r in results if isinstance(r, Receipt)]

    # -- reading ------------------------------------------------------------------------------
    def recall(self, principal: str, query: str, k: int = 10, as_of: datetime | None = None,
               known_at: datetime | None = None, purpose: str = DEFAULT_PURPOSE,
               freshness: bool = True, include_untrusted: bool = False,
               mode: RecallMode = "hybrid") -> list[RecalledMemory]:
        """Top-``k`` memories ``principal`` may read for ``purpose`` and ``query``, valid at ``as_of``
        (default now), as the ledger knew them at ``known_at`` (default now). Every call is audited
        (ids only) on the audit topic. ``freshness=False`` skips the Eq. 3 horizon (evaluations on old
        data); ``include_untrusted=True`` also returns content from untrusted sources (tagged);
        ``mode`` is the retrieval path (``"hybrid"``, ``"dense"`` or ``"lexical"``), the read filter
        being the same on each.

        Raises ``ValidationError`` for bad arguments, ``StackUnavailable`` if the worker is down.
        """
        check_query(principal, query, k, as_of, known_at, purpose, mode)
        body = {"principal": principal, "query": query, "k": k, "as_of": as_of.isoformat() if as_of else None,
                "known_at": known_at.isoformat() if known_at else None, "purpose": purpose,
                "freshness": freshness, "include_untrusted": include_untrusted, "mode": mode}
        signer = self._signers.get(principal)
        if signer is not None:  # authenticated read (commands.read_auth)
            body = sign_request(body, signer, int(time.time() * 1000))
        try:
            response = self._http.post("/recall", json=body)
        except httpx.HTTPError as exc:
            raise StackUnavailable(f"worker at {self.settings.worker_url} does not answer: {exc}") from exc
        data = response.json()
        if response.status_code in (400, 401):
            raise ValidationError(data.get("field") or "request", data.get("error", "bad request"))
        if response.status_code != 200:
            raise MemwardenError(f"recall failed with HTTP {response.status_code}: {data}")
        return [RecalledMemory.from_json(m) for m in data["memories"]]

    def close(self) -> None:
        """Flush pending records and close connections."""
        self._producer.flush(10)
        self._http.close()


_ENVELOPE_DEFAULTS: dict[str, Any] = {
    "command_id": None, "scope": "account:default", "source_kind": SourceKind.USER_STATEMENT, "source_ref": None,
    "source_uri": None, "derived_from": (), "quoted_span": None, "store_kind": StoreKind.PROFILE,
    "observed_at": None, "effective_from": None, "effective_to": None, "expires_at": None,
    "epistemic_status": EpistemicStatus.QUOTED, "sensitivity": Sensitivity.INTERNAL, "purposes": (),
    "supersedes": None, "write_authority": None, "attributes": None,
}


def _envelope_defaults(given: Mapping[str, Any], supersedes: str | None = None) -> dict[str, Any]:
    unknown = set(given) - set(_ENVELOPE_DEFAULTS)
    if unknown:
        raise ValidationError(sorted(unknown)[0], "unknown argument")
    merged = {**_ENVELOPE_DEFAULTS, **given}
    if supersedes is not None:
        merged["supersedes"] = supersedes
    return merged


def enroll(client: MemwardenClient, admin: Signer, principals: Iterable[tuple[str, PrincipalKind | str, Sequence[str]]],
           attributes: Mapping[str, Mapping[str, str]] | None = None, timeout_s: float = 60.0) -> dict[str, Signer]:
    """Generate keys for ``(principal_id, kind, roles)`` items, register them through ``admin`` and wait
    for the gate to decide; returns the signers (also added to ``client``). Raises ``MemwardenError``
    when a registration is not accepted."""
    client.add_signer(admin)
    signers: dict[str, Signer] = {}
    receipts = []
    for principal_id, kind, roles in principals:
        signer = Signer.generate(principal_id)
        signers[principal_id] = signer
        client.add_signer(signer)
        receipts.append(client.register_principal(
            principal_id, by=admin.principal_id, kind=kind, roles=roles,
            attributes=(attributes or {}).get(principal_id), public_key=signer.public_key, key_id=signer.key_id))
    outcomes = client.decisions([r.command_id for r in receipts], timeout_s)
    refused = {cid: o for cid, o in outcomes.items() if o != "ACCEPTED"}
    if refused:
        raise MemwardenError(f"registrations not accepted: {refused}")
    return signers


__all__ = ["MemwardenClient", "Receipt", "ValidationError", "WriteAuthority", "Source", "check_text", "enroll"]
