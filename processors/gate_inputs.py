"""What the gate's decisions on a batch read besides the governed state (:class:`BatchInputs`): the
plaintext of each memory write and the write *as compared* (its typed fact's value replaced by its
keyed digest, its quoted span opened: :func:`open_writes`), the source records of derived writes
(:func:`open_sources`) and the claims of each text, extracted once per batch (:class:`CachedClaims`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memwarden.commands.attribution import SourceRecord
from memwarden.commands.contradiction import Claim, ClaimExtractor
from memwarden.commands.facts import keyed_fact
from memwarden.commands.gate import Position
from memwarden.commands.model import Command, EpistemicStatus, RecordMemory, Sensitivity, SupersedeMemory
from memwarden.crypto import SPAN_PREFIX, open_content, open_fact, open_span
from memwarden.processors.gate_replay import RecordedOutcome
from memwarden.schemas.codec import AvroCodec
from memwarden.stores.keyring import KeyRing


class CachedClaims:
    """Claims extracted once per batch text (the processor needs them to load state, the gate to decide)."""

    def __init__(self, found: dict[str, tuple[Claim, ...]], extractor: ClaimExtractor) -> None:
        self._found = found
        self._extractor = extractor

    def claims(self, text: str) -> tuple[Claim, ...]:
        got = self._found.get(text)
        return got if got is not None else self._extractor.claims(text)


class NoClaims:
    """Skeleton-mode claim extractor: finds no claim (benchmark baseline only)."""

    def claims(self, text: str) -> tuple[Claim, ...]:
        return ()


@dataclass(frozen=True)
class BatchInputs:
    """What a batch's decisions read besides the state: texts and keyed digests by command id, the
    claim extractor, approvals' review targets, and (replay) the recorded decisions by position;
    ``compared`` the writes whose typed fact opened, as the gate compares them (by command id), and
    ``ledger`` the review targets as the ledger carries them (their facts sealed)."""

    texts: dict[str, str | None]
    digests: dict[str, str | None]
    claims: CachedClaims
    review: dict[str, Any]
    recorded: Mapping[Position, RecordedOutcome] | None
    compared: dict[str, Command] = field(default_factory=dict)
    ledger: dict[str, Command] = field(default_factory=dict)


async def open_sources(codec: AvroCodec, keyring: KeyRing,
                       source_events: dict[str, bytes]) -> dict[str, SourceRecord]:
    """The source records of derived writes: each ``MemoryRecorded`` of ``source_events`` (by memory
    id) decoded and its content opened with the key ring."""
    decoded = {m: codec.decode(b)[1] for m, b in source_events.items()}
    keys = await asyncio.to_thread(keyring.lookup, [r["content"]["key_id"] for r in decoded.values()])
    out: dict[str, SourceRecord] = {}
    for m, r in decoded.items():
        env = r["envelope"]
        out[m] = SourceRecord(m, env["scope"], Sensitivity(env["sensitivity"]),
                              EpistemicStatus(env["epistemic_status"]), open_content(r["content"], keys),
                              owner=env["principal"], subject=env["subject"], store_kind=env["store_kind"],
                              purposes=tuple(env.get("purposes") or ()))
    return out


async def open_writes(keyring: KeyRing, digest_key: bytes,
                      commands: list[Command]) -> tuple[dict[str, str | None], dict[str, Command]]:
    """For each memory write (by command id): the plaintext of its content (``None`` when its data
    key is missing or shredded) and, when its typed fact's value opens with the same key, the write
    as the gate compares it: that value replaced by its keyed digest (no clear value reaches the
    gate's state). A value that does not open stays sealed: the gate refuses such a write
    (``FACT_UNREADABLE``), a replay gives its slot no value (its memory was forgotten)."""
    wanted = [c for c in commands if isinstance(c, RecordMemory | SupersedeMemory)]
    if not wanted:
        return {}, {}
    keys = await asyncio.to_thread(keyring.lookup, [c.content.key_id for c in wanted])
    texts = {c.envelope.command_id: open_content({"key_id": c.content.key_id, "nonce": c.content.nonce,
                                                  "ciphertext": c.content.ciphertext}, keys) for c in wanted}
    compared: dict[str, Command] = {}
    for c in wanted:
        cid, fact, span = c.envelope.command_id, c.fact, c.envelope.source.quoted_span
        if fact is not None:
            value = open_fact({"value": fact.value, "value_nonce": fact.value_nonce,
                               "value_sealed": fact.value_sealed}, c.content.key_id, keys)
            if value is not None:
                keyed = keyed_fact(fact, c.envelope.subject, value, digest_key)
                compared[cid] = c.model_copy(update={"fact": keyed})
        if span is not None and span.startswith(SPAN_PREFIX):  # the derivation check reads the words
            words = open_span(span, c.content.key_id, keys)
            if words is not None:
                base = compared.get(cid, c)
                env = base.envelope.model_copy(update={
                    "source": base.envelope.source.model_copy(update={"quoted_span": words})})
                compared[cid] = base.model_copy(update={"envelope": env})
    return texts, compared


__all__ = ["BatchInputs", "CachedClaims", "NoClaims", "open_sources", "open_writes"]
