"""Forgetting commands beyond one memory id (issue 14 part 3; seed 004 "Forgetting is an end-to-end
operation"): ``ForgetMatching`` (by selector), ``ForgetSubject`` (the right to erasure), and the
legal hold (``PlaceHold`` / ``LiftHold``) that makes a forget wait. Frozen pydantic models with the
Avro shapes of ``schemas/avro/memwarden.v1.{ForgetSelector,ForgetMatching,ForgetSubject,PlaceHold,
LiftHold}.avsc``; every decision about them is in :mod:`memwarden.commands.gate.forgetting`."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from memwarden.commands.envelope import Envelope, FrozenModel, Name, Text, UtcTime, Uuid

#: The memory id a ``ForgetMatching`` names when its ``query`` matched nothing the issuer can read (the client
#: resolves a query into ids and never publishes an empty selector): the nil UUID, which no memory has; the gate
#: answers it with ``QUERY_MATCHED_NOTHING``, never as an unknown memory.
NO_MATCH_ID = "00000000-0000-0000-0000-000000000000"


class ForgetSelector(FrozenModel):
    """Which memories a ``ForgetMatching`` names: a memory matches when every field given matches
    (AND across fields, OR within one list). ``observed_from`` / ``observed_to`` bound ``observed_at``
    (from inclusive, to exclusive) as the writer stated it; ``admitted_from`` / ``admitted_to`` bound
    when the gate admitted the current version (a window a compromised writer cannot back-date);
    ``expired_before`` selects memories whose ``expires_at`` is at or
    before it (retention). An empty selector is valid here and refused by the gate
    (``EMPTY_SELECTOR``): it never means "everything"."""

    subjects: tuple[Name, ...] = ()
    scopes: tuple[Name, ...] = ()
    source_references: tuple[Name, ...] = ()
    writers: tuple[Name, ...] = ()
    key_ids: tuple[Name, ...] = ()
    tags: tuple[Name, ...] = ()
    memory_ids: tuple[Uuid, ...] = ()
    observed_from: UtcTime | None = None
    observed_to: UtcTime | None = None
    admitted_from: UtcTime | None = None
    admitted_to: UtcTime | None = None
    expired_before: UtcTime | None = None

    @model_validator(mode="after")
    def _interval(self) -> ForgetSelector:
        if self.observed_from and self.observed_to and self.observed_to <= self.observed_from:
            raise ValueError("observed_to: must be later than observed_from")
        if self.admitted_from and self.admitted_to and self.admitted_to <= self.admitted_from:
            raise ValueError("admitted_to: must be later than admitted_from")
        return self

    @property
    def empty(self) -> bool:
        """No criterion given (the gate refuses it)."""
        return not any((self.subjects, self.scopes, self.source_references, self.writers, self.key_ids, self.tags,
                        self.memory_ids, self.observed_from, self.observed_to, self.admitted_from, self.admitted_to,
                        self.expired_before))


class ForgetMatching(FrozenModel):
    """Command: forget what ``selector`` matches and the issuer may forget, with every derivative
    when ``cascade``; ``dry_run`` lists the ids in the decision and changes nothing."""

    kind: Literal["ForgetMatching"] = "ForgetMatching"
    envelope: Envelope
    selector: ForgetSelector
    reason: Text = ""
    dry_run: bool = False
    cascade: bool = True


class ForgetSubject(FrozenModel):
    """Command: forget every memory about ``envelope.subject`` and every derivative (the subject
    itself or an admin only); ``dry_run`` lists the ids and changes nothing."""

    kind: Literal["ForgetSubject"] = "ForgetSubject"
    envelope: Envelope
    reason: Text = ""
    dry_run: bool = False


class PlaceHold(FrozenModel):
    """Command (admin): legal hold ``hold_id`` on ``subjects`` and/or ``scopes`` (at least one)."""

    kind: Literal["PlaceHold"] = "PlaceHold"
    envelope: Envelope
    hold_id: Name
    subjects: tuple[Name, ...] = ()
    scopes: tuple[Name, ...] = ()
    reason: Text = ""

    @model_validator(mode="after")
    def _covers(self) -> PlaceHold:
        if not self.subjects and not self.scopes:
            raise ValueError("subjects: a hold names at least one subject or scope")
        return self


class LiftHold(FrozenModel):
    """Command (admin): lift legal hold ``hold_id``."""

    kind: Literal["LiftHold"] = "LiftHold"
    envelope: Envelope
    hold_id: Name
    reason: Text = ""


ForgetCommand = ForgetMatching | ForgetSubject
HoldCommand = PlaceHold | LiftHold

__all__ = ["NO_MATCH_ID", "ForgetCommand", "ForgetMatching", "ForgetSelector", "ForgetSubject", "HoldCommand",
           "LiftHold", "PlaceHold"]
