"""Forgetting from the client (issue 14 part 3): by selector, by subject (the right to erasure), by
query, and the legal hold. Each call publishes one signed command; the gate decides it
(:mod:`memwarden.commands.gate.forgetting`) and its decision lists the memories forgotten
(``GateDecided.memory_ids``; for a dry run, the memories that would go). Each call waits for that
decision by default and raises :class:`~memwarden.errors.Refused` when it is ``REJECTED`` (a
``DEFERRED`` forget, waiting for a legal hold, is returned); ``wait=False`` returns at once."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memwarden.commands.forget_commands import (
    NO_MATCH_ID,
    ForgetMatching,
    ForgetSelector,
    ForgetSubject,
    LiftHold,
    PlaceHold,
)
from memwarden.commands.readmodel.query import DEFAULT_PURPOSE, MAX_K
from memwarden.errors import ValidationError
from memwarden.producers.building import Receipt, build, envelope, governance_envelope, names
from memwarden.producers.governance import DecidedReceipt, Settling


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


def contains_words(text: str, query: str) -> bool:
    """Whether ``text`` contains ``query`` as whole words (case and spacing folded): "216" is not in
    "2160", "bridge-17" is in "the old bridge-17 label"."""
    return re.search(r"(?<!\w)" + re.escape(_folded(query)) + r"(?!\w)", _folded(text)) is not None


class ForgetCalls(Settling):
    """The forgetting half of :class:`~memwarden.producers.client.MemwardenClient` (a mixin: it
    publishes through the client's ``_publish`` and resolves a query through its ``recall``)."""

    def _publish(self, commands: Sequence[tuple[Any, str, tuple[str, bytes] | None]],
                 sign: bool = True) -> list[Receipt]:
        raise NotImplementedError

    def recall(self, principal: str, query: str, k: int = 10, **kwargs: Any) -> list[Any]:
        raise NotImplementedError

    def forget_matching(self, *, principal: str, subject: str | None = None, subjects: Sequence[str] = (),
                        scopes: Sequence[str] = (), source_references: Sequence[str] = (),
                        writers: Sequence[str] = (), key_ids: Sequence[str] = (), tags: Sequence[str] = (),
                        memory_ids: Sequence[str] = (), observed_from: datetime | None = None,
                        observed_to: datetime | None = None, admitted_from: datetime | None = None,
                        admitted_to: datetime | None = None, expired_before: datetime | None = None,
                        query: str | None = None, reason: str = "", dry_run: bool = False, cascade: bool = True,
                        purposes: Sequence[str] = (), sign: bool = True, wait: bool = True,
                        **given: Any) -> DecidedReceipt:
        """Publish a ``ForgetMatching``: every memory matching all the criteria given (AND across
        criteria, OR within one list) that ``principal`` may forget, with its derivatives when
        ``cascade``. ``query`` is resolved here, never sent: the memories ``principal`` can read whose
        text contains it (case and spacing folded, every retrieval leg, untrusted included), read for the
        default purpose and for each of ``purposes`` (a memory tagged with purposes is read only for one of
        them), become ``memory_ids`` (nothing matched: a refusal-free no-op is still published so the
        outcome is on the ledger). ``subject`` is the command's Kafka key (default: ``principal``).

        Raises ``ValidationError`` naming the field for bad arguments; an empty selector is published
        and refused by the gate with ``EMPTY_SELECTOR`` (it never means everything)."""
        ids = list(names(memory_ids, "memory_ids"))
        if query is not None:
            if not isinstance(query, str):
                raise ValidationError("query", f"must be text (the words to forget), got {type(query).__name__}")
            if not query.strip():
                raise ValidationError("query", "must not be blank")
            for purpose in dict.fromkeys((DEFAULT_PURPOSE, *names(purposes, "purposes"))):
                ids += [m for m in self.matching_ids(principal, query, purpose) if m not in ids]
            if not ids:
                ids = [NO_MATCH_ID]  # "the query matched nothing", never an empty selector
        selector = build(ForgetSelector, {
            "subjects": names(subjects, "subjects"), "scopes": names(scopes, "scopes"),
            "source_references": names(source_references, "source_references"), "writers": names(writers, "writers"),
            "key_ids": names(key_ids, "key_ids"), "tags": names(tags, "tags"), "memory_ids": tuple(ids),
            "observed_from": observed_from, "observed_to": observed_to, "admitted_from": admitted_from,
            "admitted_to": admitted_to, "expired_before": expired_before},
            prefix="selector.")
        command = build(ForgetMatching, {"envelope": envelope(principal, subject or principal, given),
                                         "selector": selector, "reason": reason, "dry_run": dry_run,
                                         "cascade": cascade})
        return self._settled(self._publish([(command, "", None)], sign)[0], wait)

    def matching_ids(self, principal: str, query: str, purpose: str = DEFAULT_PURPOSE) -> list[str]:
        """Ids of the memories ``principal`` can read now for ``purpose`` whose text, in any version it may
        read (superseded and closed ones too: a forget takes every version), contains ``query`` as
        whole words (folded), among the ``MAX_K`` best of the lexical and of the dense leg,
        ranked by relevance alone (``recency=0``, ``repeats=False``: every copy of a value
        keeps its rank): a value stored in more memories
        than that needs a second forget (its dry run shows what is left)."""
        found: dict[str, None] = {}
        for mode in ("lexical", "dense"):
            for m in self.recall(principal, query, k=MAX_K, mode=mode, freshness=False, include_untrusted=True,
                                 recency=0, repeats=False, purpose=purpose, every_version=True):
                if contains_words(m.text, query):
                    found[m.memory_id] = None
        return list(found)

    def forget_subject(self, subject: str, *, principal: str, reason: str = "", dry_run: bool = False,
                       sign: bool = True, wait: bool = True, **given: Any) -> DecidedReceipt:
        """Publish a ``ForgetSubject``: everything about ``subject`` and every derivative (the right to
        erasure; by the subject itself or an admin)."""
        command = build(ForgetSubject, {"envelope": envelope(principal, subject, given), "reason": reason,
                                        "dry_run": dry_run})
        return self._settled(self._publish([(command, "", None)], sign)[0], wait)

    def place_hold(self, hold_id: str, *, by: str, subjects: Sequence[str] = (), scopes: Sequence[str] = (),
                   reason: str = "", sign: bool = True, wait: bool = True) -> DecidedReceipt:
        """``PlaceHold`` (admin): forgets of memories about ``subjects`` or in ``scopes`` wait. The
        receipt's ``memory_id`` is the hold id."""
        command = build(PlaceHold, {"envelope": governance_envelope(by, by, {}), "hold_id": hold_id,
                                    "subjects": names(subjects, "subjects"), "scopes": names(scopes, "scopes"),
                                    "reason": reason})
        return self._settled(self._publish([(command, hold_id, None)], sign)[0], wait)

    def lift_hold(self, hold_id: str, *, by: str, reason: str = "", sign: bool = True,
                  wait: bool = True) -> DecidedReceipt:
        """``LiftHold`` (admin): the forgets the hold kept waiting run now."""
        command = build(LiftHold, {"envelope": governance_envelope(by, by, {}), "hold_id": hold_id, "reason": reason})
        return self._settled(self._publish([(command, hold_id, None)], sign)[0], wait)


__all__ = ["ForgetCalls"]
