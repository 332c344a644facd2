"""``MemwardenClient``: what agents use to write memory commands and recall memories.

Writes: a command is built from keyword arguments (:mod:`memwarden.producers.building`: a clear
``ValidationError`` naming the field), its text and its typed fact's value encrypted under a fresh
data key, the wrapped key published to the compacted keys topic and delivered, then the command
published to the ledger with the idempotent producer (:mod:`memwarden.producers.sending`), keyed by
subject so one subject's history stays ordered in one partition. The ledger position comes back once
delivered.

Signing: every command carries σ(μ) (SSGM Principle 2), an Ed25519 signature by a key of its
``envelope.principal`` over the canonical unsigned bytes. The client signs transparently with the
:class:`~memwarden.commands.signing.Signer` it holds for that principal (``signers=`` or
:meth:`MemwardenClient.add_signer`); without one it refuses to publish (``sign=False`` publishes an
unsigned command on purpose, which the gate rejects).

Reads go to the read API served by the projector worker: ``recall`` (signed, audited) and
``decisions`` (what the gate decided of given commands, with reasons).

Decisions: ``record``/``record_many`` return once the ledger holds the command (bulk ingest; read the
decisions with :meth:`MemwardenClient.decided`). ``supersede``, the forgets and the governance calls
wait for the gate's decision by default and raise :class:`~memwarden.errors.Refused` (outcome, reason
codes, command id) when refused, returning a ``DecidedReceipt`` (``receipt.decision``) when not;
``wait=False`` opts out. :func:`connect` gives a client from the environment's settings with the
local keystore's signers of the principals named.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from memwarden.commands.model import (
    EncryptedContent,
    ForgetMemory,
    RecordMemory,
    Source,
    SupersedeMemory,
    WriteAuthority,
    to_avro,
)
from memwarden.commands.read_auth import sign_request
from memwarden.commands.readmodel.query import DEFAULT_PURPOSE, Recalled, RecallMode, check_query
from memwarden.commands.signing import Signer
from memwarden.crypto import Kek, encrypt_text, kek_path, load_kek, new_data_key, seal_span, uninitialised
from memwarden.epoch import now_ms
from memwarden.errors import MemwardenError, StackUnavailable, ValidationError
from memwarden.keystore import key_path, load_or_create_signer, signed_command
from memwarden.producers.building import (
    Receipt,
    build,
    build_fact,
    check_text,
    envelope,
    names,
    refused_read,
    seal_fact,
    undecided_message,
)
from memwarden.producers.forgetting import ForgetCalls
from memwarden.producers.governance import REFUSED_WRITE, DecidedReceipt, GovernanceCalls
from memwarden.producers.lookups import LookupCalls
from memwarden.producers.sending import producer, send
from memwarden.schemas.codec import AvroCodec, default_codec
from memwarden.settings import Settings
from memwarden.timing import parse_server_timing

#: Command ids per decisions lookup request.
_LOOKUP_CHUNK = 2_000
#: A write before it is published: the command, the memory id it concerns, and its wrapped data key.
Pending = tuple[Any, str, tuple[str, bytes] | None]


class MemwardenClient(GovernanceCalls, ForgetCalls, LookupCalls):
    """Client of one namespace. Thread-compatible; call :meth:`close` (or use ``with``) when done.

    Args:
        settings: where Kafka and the worker are.
        kek: key-encryption key (default: from settings / the data folder).
        codec: Avro codec (default: the packaged schemas).
        signers: the principals' signing keys this client holds.
    """

    def __init__(self, settings: Settings, kek: Kek | None = None, codec: AvroCodec | None = None,
                 signers: Iterable[Signer] = ()) -> None:
        self.settings = settings
        self._signers: dict[str, Signer] = {sg.principal_id: sg for sg in signers}
        self._kek = kek or load_kek(settings.kek, settings.data_dir, create=False)
        self._codec = codec or default_codec()
        self._producer = producer(settings.bootstrap_servers)
        self._http = httpx.Client(base_url=settings.worker_url, timeout=30.0)
        #: Stage timings (ms) of the last recall as the read API reported them (``Server-Timing``).
        self.last_server_timing: dict[str, float] = {}

    def add_signer(self, signer: Signer) -> None:
        """Sign commands of ``signer.principal_id`` with it from now on."""
        self._signers[signer.principal_id] = signer

    def __enter__(self) -> MemwardenClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- building -----------------------------------------------------------------------------
    def _encrypt(self, text: str, subject: str) -> tuple[dict[str, Any], tuple[str, bytes]]:
        content, data_key, _ = self._sealed(text, subject)
        return content, data_key

    def _sealed(self, text: str, subject: str) -> tuple[dict[str, Any], tuple[str, bytes], bytes]:
        """``text`` encrypted under a fresh data key: the content record, the wrapped key record for
        the keys topic and the data key itself (to seal the write's fact value under it too)."""
        key_id = str(uuid.uuid4())
        key = new_data_key()
        nonce, ciphertext = encrypt_text(text, key, key_id)
        wrap_nonce, wrapped = self._kek.wrap(key, key_id)
        data_key = self._codec.encode("DataKey", {
            "key_id": key_id, "subject": subject, "kek_id": self._kek.kek_id, "algorithm": "AES-256-GCM",
            "wrap_nonce": wrap_nonce, "wrapped_key": wrapped, "created_at": datetime.now(UTC)})
        return {"key_id": key_id, "nonce": nonce, "ciphertext": ciphertext}, (key_id, data_key), key

    def _write(self, model: type[RecordMemory] | type[SupersedeMemory], principal: str, subject: str, text: str,
               fields: dict[str, Any], given: Mapping[str, Any],
               supersedes: str | None = None) -> tuple[Any, tuple[str, bytes]]:
        """A validated memory write and its wrapped data key: text checked, envelope built, content
        encrypted under a fresh data key, the typed fact's value and a derived record's quoted span
        sealed under the same key (so a forget shreds all three; none travels in clear)."""
        check_text(text, self.settings.max_text_chars)
        env = envelope(principal, subject, given, supersedes)
        content, data_key, key = self._sealed(text, subject)
        fields = {**fields, "fact": seal_fact(fields.get("fact"), key, content["key_id"])}
        if env.source.quoted_span is not None:  # verbatim words of the sources: sealed like the text
            sealed = seal_span(env.source.quoted_span, key, content["key_id"])
            env = env.model_copy(update={"source": env.source.model_copy(update={"quoted_span": sealed})})
        command = build(model, {"envelope": env, "content": EncryptedContent(**content), **fields})
        return command, data_key

    def build_record(self, *, principal: str, subject: str, text: str, memory_id: str | None = None,
                     fact: Mapping[str, str] | None = None, tags: Sequence[str] = (), follows: str | None = None,
                     **envelope: Any) -> tuple[RecordMemory, tuple[str, bytes]]:
        """Validate and build a ``RecordMemory`` and its wrapped data key (not yet published).
        ``follows``: the memory id this one follows in its conversation (the previous turn of the same
        session), ranking context for hybrid recall; never lineage nor access."""
        fields = {"memory_id": memory_id or str(uuid.uuid4()), "fact": build_fact(fact), "tags": names(tags, "tags"),
                  "follows": follows}
        command, data_key = self._write(RecordMemory, principal, subject, text, fields, envelope)
        return command, data_key

    # -- publishing ---------------------------------------------------------------------------
    def record(self, sign: bool = True, **kwargs: Any) -> Receipt:
        """Publish one ``RecordMemory``; see :meth:`build_record` for the arguments.

        Returns the ``Receipt`` once the broker acknowledged it (acks=all), without waiting for the
        gate's decision (writes are bulk work: read them with :meth:`decided`). Raises
        ``ValidationError`` for bad arguments, ``StackUnavailable`` if Kafka does not acknowledge.
        """
        return self.record_many([kwargs], sign)[0]

    def record_many(self, items: Iterable[Mapping[str, Any]], sign: bool = True) -> list[Receipt]:
        """Validate every item first (nothing is published if one is bad), then publish all data keys,
        wait for them, publish all commands and wait: two round trips for a whole batch. Does not wait
        for the gate's decisions (see :meth:`decided`)."""
        built = [self.build_record(**dict(item)) for item in items]
        return self._publish([(c, c.memory_id, k) for c, k in built], sign)

    def supersede(self, memory_id: str, *, principal: str, subject: str, text: str,
                  evidence: Sequence[str] = (), fact: Mapping[str, str] | None = None, sign: bool = True,
                  wait: bool = True, **envelope: Any) -> DecidedReceipt:
        """Publish a ``SupersedeMemory``: a new version of ``memory_id`` with ``text``.

        Waits for the gate's decision and raises ``Refused`` when it is ``REJECTED`` or
        ``QUARANTINED`` (held for review: not the new version asked for); ``wait=False`` returns at
        once (bulk work that reads the decisions with :meth:`decided`)."""
        fields = {"fact": build_fact(fact), "evidence": names(evidence, "evidence")}
        command, data_key = self._write(SupersedeMemory, principal, subject, text, fields, envelope, memory_id)
        return self._settled(self._publish([(command, command.memory_id, data_key)], sign)[0], wait, REFUSED_WRITE)

    def forget(self, memory_id: str, *, principal: str, subject: str, reason: str = "", sign: bool = True,
               wait: bool = True, **given: Any) -> DecidedReceipt:
        """Publish a ``ForgetMemory`` for every version of ``memory_id``; waits for the decision and
        raises ``Refused`` when it is ``REJECTED`` (e.g. ``NOT_OWNER``), unless ``wait=False``."""
        command = build(ForgetMemory, {"envelope": envelope(principal, subject, given), "memory_id": memory_id,
                                       "reason": reason})
        return self._settled(self._publish([(command, command.memory_id, None)], sign)[0], wait)

    def publish_raw(self, key: bytes | None, value: bytes | None) -> Receipt:
        """Publish arbitrary bytes to the commands topic (tests and tools; no validation at all)."""
        self._own_ledger()
        return self._send([(self.settings.topic("commands"), key, value)], [""])[0]

    def _own_ledger(self) -> None:
        """Refuse to write through a namespace that replays another's ledger: its commands topic is that
        namespace's, so a forget or a repair named for the replay changed the live namespace while the
        replay stayed as it was (newcomer trial, twentieth session). Raises ``ValidationError``
        (field ``namespace``)."""
        s = self.settings
        if not s.owns_ledger:
            raise ValidationError("namespace", f"{s.topic_prefix} is a replay of {s.ledger_prefix}'s ledger and is "
                                  f"read-only: write to {s.ledger_prefix} (a replay follows its ledger)")

    def encode_signed(self, command: Any, sign: bool = True) -> bytes:
        """Single-object bytes of ``command``, signed by its principal's signer when ``sign``.

        Raises ``ValidationError`` (field ``principal``) when ``sign`` and no signer is held.
        """
        if not sign:
            return self._codec.encode(command.kind, to_avro(command))
        signer = self._signers.get(command.envelope.principal)
        if signer is None:
            raise ValidationError("principal", f"no signing key held for {command.envelope.principal!r};"
                                  " add one with add_signer()")
        return signed_command(self._codec, command, signer)

    def _publish(self, commands: Sequence[Pending], sign: bool = True) -> list[Receipt]:
        self._own_ledger()
        encoded = [self.encode_signed(c, sign) for c, _, _ in commands]  # refuse before sending anything
        keys = [(self.settings.topic("keys"), k[0].encode(), k[1]) for _, _, k in commands if k is not None]
        if keys:
            self._send(keys, [""] * len(keys))
        records = [(self.settings.topic("commands"), c.envelope.subject.encode(), value)
                   for (c, _, _), value in zip(commands, encoded, strict=True)]
        receipts = self._send(records, [c.envelope.command_id for c, _, _ in commands])
        return [Receipt(c.envelope.command_id, mid, r.topic, r.partition, r.offset, c.envelope.principal)
                for (c, mid, _), r in zip(commands, receipts, strict=True)]

    def _send(self, records: Sequence[tuple[str, bytes | None, bytes | None]], ids: Sequence[str],
              timeout_s: float = 60.0) -> list[Receipt]:
        return send(self._producer, records, ids, timeout_s)

    # -- reading ------------------------------------------------------------------------------
    def decisions(self, command_ids: Sequence[str], timeout_s: float = 60.0) -> dict[str, str]:
        """Wait until the gate decided every command id; returns ``command_id -> outcome``.

        See :meth:`decided` for the whole decisions. Raises ``StackUnavailable`` after ``timeout_s``
        seconds or when the read API does not answer.
        """
        return {cid: d["outcome"] for cid, d in self.decided(command_ids, timeout_s).items()}

    def decided(self, command_ids: Sequence[str], timeout_s: float = 60.0) -> dict[str, dict[str, Any]]:
        """Wait until the gate decided every command id; returns ``command_id -> decision`` (``outcome``,
        ``reasons`` with ``code``/``message``/``field``, ``memory_id``, ``policy_version``, ledger
        ``position``, ``decided_at``, and ``review``: a held write's review as it stands now, ``status``
        pending / approved / rejected, else ``None``), asked of the read API's public decisions endpoint.

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
                raise StackUnavailable(undecided_message([c for c in wanted if c not in found], timeout_s))
            time.sleep(0.1)

    def _post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        try:
            return self._http.post(path, json=body)
        except httpx.HTTPError as exc:
            raise StackUnavailable(f"worker at {self.settings.worker_url} does not answer: {exc}") from exc

    def _lookup(self, command_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        response = self._post("/decisions", {"command_ids": list(command_ids)})
        if response.status_code == 503:  # a dependency of the worker is down: ask again until the timeout
            return {}
        if response.status_code == 400:  # a bad id: the field it names (command_ids[i]), never a raw answer
            data = response.json()
            raise refused_read(data if isinstance(data, dict) else {}, "", True)
        if response.status_code != 200:
            raise MemwardenError(f"decisions lookup failed with HTTP {response.status_code}: {response.text}")
        decisions: dict[str, dict[str, Any]] = response.json()["decisions"]
        return decisions

    def recall(self, principal: str, query: str, k: int = 10, as_of: datetime | None = None,  # type: ignore[override]
               known_at: datetime | None = None, purpose: str = DEFAULT_PURPOSE,
               freshness: bool = True, include_untrusted: bool = False,
               mode: RecallMode = "hybrid", min_score: float = 0.0, recency: float | None = None,
               repeats: bool = True, decompose: bool = True, every_version: bool = False) -> Recalled:
        """Top-``k`` memories ``principal`` may read for ``purpose`` and ``query``, valid at ``as_of``
        (default now), as the ledger knew them at ``known_at`` (default now). Every call is audited
        (ids only) on the audit topic. ``freshness=False`` skips the Eq. 3 horizon (evaluations on old
        data); ``include_untrusted=True`` also returns content from untrusted sources (tagged);
        ``mode`` is the retrieval path (``"hybrid"``, ``"dense"`` or ``"lexical"``), the read filter
        being the same on each. Each memory carries its ``relevance`` in [0, 1] (one scale for every
        query); ``min_score`` (0 = none; the README recommends 0.35) drops those below it: the result
        is a list with ``below_floor`` (how many were dropped) and ``nothing_relevant`` (hits were
        found, none reached the floor). ``recency``: the weight of recency in the ranking
        (``memwarden.commands.readmodel.recency``); ``None`` applies it to queries that ask for a
        current, latest or final value, 0 ranks by relevance alone. ``repeats=False`` keeps
        near-repeats of a better-ranked memory in rank order (by default they come after the others).
        ``decompose=False`` ranks an enumerating question ("the current date, amount, and blocker") as
        one query (by default each part is recalled and the rankings are merged in turn).
        ``every_version=True`` reads every version ``principal`` may read now, whenever it was valid
        (superseded and closed ones too: a memory may come back once per version; not with ``as_of`` or
        ``known_at``); forget by query uses it.

        Raises ``ValidationError`` for bad arguments, ``StackUnavailable`` if the worker is down.
        """
        check_query(principal, query, k, as_of, known_at, purpose, mode, min_score, recency)
        body = {"principal": principal, "query": query, "k": k, "as_of": as_of.isoformat() if as_of else None,
                "known_at": known_at.isoformat() if known_at else None, "purpose": purpose,
                "freshness": freshness, "include_untrusted": include_untrusted, "mode": mode,
                "min_score": min_score}
        if recency is not None:
            body["recency"] = recency
        if not repeats:
            body["repeats"] = False
        if not decompose:
            body["decompose"] = False
        if every_version:
            if as_of is not None or known_at is not None:
                raise ValidationError("every_version", "a read of every version takes no as_of or known_at")
            body["every_version"] = True
        signer = self._signers.get(principal)
        if signer is not None:  # authenticated read (commands.read_auth)
            body = sign_request(body, signer, now_ms())
        response = self._post("/recall", body)
        data = response.json()
        if response.status_code in (400, 401):
            raise refused_read(data, principal, signer is not None)
        if response.status_code != 200:
            raise MemwardenError(f"recall failed with HTTP {response.status_code}: {data}")
        self.last_server_timing = parse_server_timing(response.headers.get("server-timing"))
        return Recalled.from_json(data)

    def close(self) -> None:
        """Flush pending records and close connections."""
        self._producer.flush(10)
        self._http.close()


def connect(*principals: str, settings: Settings | None = None) -> MemwardenClient:
    """A connected client of ``settings`` (default: ``Settings()``, from the environment) holding the
    signing keys of ``principals`` from the local keystore (``<data>/keys/principals/``, where
    ``memwarden principal register`` writes them; the root admin's too when named).

    Raises ``ValidationError`` (field ``principals``) when a principal has no key file here (naming the data
    folder when it holds no key-encryption key either: most likely not the stack's), ``MemwardenError`` when
    the data folder is not one the stack set up (:func:`memwarden.crypto.load_kek`).
    """
    s = settings or Settings()
    signers = []
    for principal in principals:
        path = key_path(s.data_dir, principal)
        if not path.exists():
            if not s.kek and not kek_path(s.data_dir).exists():  # not the stack's data folder at all
                raise ValidationError("principals", uninitialised(f"signing key for {principal!r}", path, s.data_dir))
            raise ValidationError("principals", f"no signing key for {principal!r} at {path}; register it with"
                                  " `memwarden principal register`")
        signers.append(load_or_create_signer(path, principal))
    return MemwardenClient(s, signers=signers)


__all__ = ["DecidedReceipt", "MemwardenClient", "Receipt", "ValidationError", "WriteAuthority", "Source", "check_text",
           "connect"]
