"""Protected core facts and typed-fact contradiction (SSGM Eq. 6: reject ΔM when ΔM ∧ M_core ⊨ ⊥;
issue 3 part 5; field cases W3, W4).

A memory may carry a typed fact (entity, attribute, value, cardinality). Facts are compared only
within one subject and one (entity, attribute), case-insensitively:

* a different value for a *protected* single-valued attribute is rejected (``CORE_FACT_CONFLICT``)
  unless it is a ``SupersedeMemory`` of the memory holding the fact, by a principal with authority
  over it (the subject itself or an admin), carrying evidence;
* a different value for an *unprotected* single-valued attribute supersedes the old memory
  automatically (its interval closes; history stays);
* multi-valued attributes never conflict.

No fact value at rest (issue 14): on the ledger the value is sealed under the memory's data key; the
processor opens it and hands the gate the fact *as compared*: its value replaced by
:func:`value_digest`, an HMAC under the namespace's digest key of the slot and the folded value
(:func:`keyed_fact`). The gate's slots (:class:`FactState`, table ``gate_facts``) hold that digest,
never the value, and equal folded values have equal digests, so the checks below decide as they did
on clear values. Pure functions (``hmac`` only, like the keyed claims of :mod:`.contradiction`).
"""

from __future__ import annotations

import hashlib
import hmac
import unicodedata
from dataclasses import dataclass

from memwarden.commands.model import Fact, FactCardinality

FactKey = tuple[str, str, str]


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def fact_key(subject: str, entity: str, attribute: str) -> FactKey:
    """Key of a fact slot: (subject, entity, attribute), entity and attribute case-folded."""
    return subject, _fold(entity), _fold(attribute)


def value_digest(digest_key: bytes, key: FactKey, value: str) -> str:
    """Keyed digest of a fact value as the gate keeps and compares it: HMAC-SHA256 under the
    namespace's ``digest_key`` over the slot ``key`` (subject, entity, attribute) and the folded value
    (case and spacing do not matter, as for clear values). Bound to the slot, so equal values of two
    slots or two subjects do not show as equal digests; keyed, so a guessed value cannot be confirmed
    without the key."""
    message = "\x00".join(("memwarden.fact", *key, _fold(value)))
    return hmac.new(digest_key, message.encode(), hashlib.sha256).hexdigest()


def keyed_fact(fact: Fact, subject: str, value: str, digest_key: bytes) -> Fact:
    """``fact`` (of a write about ``subject``) as the gate decides on it: its opened ``value`` replaced
    by :func:`value_digest`, the sealed fields dropped. A fact still sealed when it reaches the gate is
    one whose value did not open."""
    key = fact_key(subject, fact.entity, fact.attribute)
    return Fact(entity=fact.entity, attribute=fact.attribute, value=value_digest(digest_key, key, value),
                cardinality=fact.cardinality)


@dataclass(frozen=True)
class FactState:
    """The current value of one single-valued fact slot and the memory that holds it. ``value`` is the
    value as the gate compares it (:func:`value_digest`, never the clear value); ``None`` when unknown
    (a slot stored before values were digested), compared as a different value."""

    key: FactKey
    value: str | None
    memory_id: str


@dataclass(frozen=True)
class FactCheck:
    """Result: a refusal (``code``, ``message``) or the memory to close (``closes``), or neither."""

    code: str | None = None
    message: str = ""
    closes: str | None = None


OK = FactCheck()


def check_fact(fact: Fact | None, current: FactState | None, protected: bool, superseding: str | None,
               has_authority: bool, has_evidence: bool) -> FactCheck:
    """Eq. 6 check of a new fact against the slot's current value.

    Args:
        fact: the typed fact of the new memory version as compared (:func:`keyed_fact`; ``None``:
            nothing to check).
        current: the slot's current value (``None``: empty slot).
        protected: the slot is marked protected core (M_core).
        superseding: memory id the command supersedes (``None`` for a new record).
        has_authority: the writer is the subject or an admin.
        has_evidence: the command carries evidence.
    """
    if fact is None or fact.cardinality is FactCardinality.MULTI or current is None:
        return OK
    if current.value is not None and _fold(fact.value) == _fold(current.value):
        return OK
    if current.memory_id == superseding:
        return protected_supersede(protected, has_authority, has_evidence)
    if protected:
        return FactCheck("CORE_FACT_CONFLICT",
                         f"{current.key[1]}.{current.key[2]} is a protected core fact held by memory "
                         f"{current.memory_id}; change it with SupersedeMemory, authority and evidence")
    return FactCheck(closes=current.memory_id)


def protected_supersede(protected: bool, has_authority: bool, has_evidence: bool) -> FactCheck:
    """A supersede of a memory holding a protected fact needs authority over it and evidence."""
    if not protected:
        return OK
    if not has_authority:
        return FactCheck("NO_AUTHORITY_OVER_CORE_FACT", "only the subject or an admin may change a protected core fact")
    if not has_evidence:
        return FactCheck("CORE_FACT_NEEDS_EVIDENCE", "changing a protected core fact needs evidence")
    return OK
