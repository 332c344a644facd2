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
Pure functions.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from memwarden.commands.model import Fact, FactCardinality

FactKey = tuple[str, str, str]


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def fact_key(subject: str, entity: str, attribute: str) -> FactKey:
    """Key of a fact slot: (subject, entity, attribute), entity and attribute case-folded."""
    return subject, _fold(entity), _fold(attribute)


@dataclass(frozen=True)
class FactState:
    """The current value of one single-valued fact slot and the memory that holds it."""

    key: FactKey
    value: str
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
        fact: the typed fact of the new memory version (``None``: nothing to check).
        current: the slot's current value (``None``: empty slot).
        protected: the slot is marked protected core (M_core).
        superseding: memory id the command supersedes (``None`` for a new record).
        has_authority: the writer is the subject or an admin.
        has_evidence: the command carries evidence.
    """
    if fact is None or fact.cardinality is FactCardinality.MULTI or current is None:
        return OK
    if _fold(fact.value) == _fold(current.value):
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
