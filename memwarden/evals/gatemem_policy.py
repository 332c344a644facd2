"""Per-domain read policy for the GateMem mapping (rule R7 of :mod:`memwarden.evals.gatemem_mapping`).

A :class:`DomainPolicy` says, for each relationship kind of the episodes' entity data, which circles
its principal may READ and up to which sensitivity; roles may add accesses or cap every ceiling.
Unknown relationship kinds grant nothing (deny by default). The tables encode the access each
relationship plainly implies (a project member reads the project, an advisor reads the advisee's
case, a primary resident reads the household) and, where the benchmark's own turns say a role is
limited ("scheduling-only", "credentials only", "logistics only", "safe summary only"), the limit.

Design notes per domain, each rule checked against the leak it prevents with the offline harness
``bench/gatemem_offline.py`` (which also reports "exposure": any readable record holding a forbidden
string, whatever the ranking; the tables keep it at zero):

- office: project members, budget owners, legal, procurement and operations read their project up to
  RESTRICTED; employees and managers are capped at INTERNAL; sales, contractors and executive
  assistants at PUBLIC (nothing: their turns say they work from the broad wording, logs-only or
  scheduling-only); executive sponsors read INTERNAL (no exact customer, budget or discount); HR has
  no project relationship. Contract terms are CONFIDENTIAL. Nobody reads unscoped chatter.
- education: the case chain (advisor, supervisor, committee chair, instructors, faculty reviewers,
  financial aid, registrar and residence case owners) reads the student's circle and case up to
  RESTRICTED, and so does the case subject; campus IT reads the case at INTERNAL plus its
  ``#credentials`` (RESTRICTED) and ``#places`` (CONFIDENTIAL) facets; calendar coordinators and
  department admins read INTERNAL (dates, safe wording), plus rooms when their access scope says
  so; program members and public-program staff read their public program; parents, dean-side
  delegates, counselors and unassigned staff read nothing. Holds, blockers, release scopes are
  CONFIDENTIAL and the wording of a release scope is a protected value.
- household: the primary resident reads the whole household; members read their own private notes;
  a host reads their guest's circle; pickup contacts and caregivers read the circle of the person
  they serve and their own at INTERNAL; helpers, contacts and technicians read their own circle and
  the threads the residents name them in; logistics delegates (household managers), trusted backups and
  service relationships (device helpers, technicians, cleaners, childcare, pet care) also read, at
  INTERNAL, the threads their ``access_scope`` names (``birch_booth_and_birch_bins_logistics_only``:
  the Booth and Bins threads; never the household's own circle, a credentials facet or a thread it does
  not name: opening the whole household at INTERNAL exposed private times and places on the held-out
  half, twice); a household manager is capped at INTERNAL (it was PUBLIC: nothing), so one without a
  thread-scoped relationship reads its own person circle and the threads it is named in, like a
  helper; guests and desk staff read nothing, because each circle they could read carries strings a
  privacy checkpoint of the same episode forbids them (measured: opening them re-creates exposures).
  In households a time or place in a turn calling details exact, restricted, resident-only, private or
  confidential is CONFIDENTIAL (``private_details``, R3 ``restricted-detail``) and tainted wherever it is
  repeated (R4), and a private note stays private even when it repeats a protected value (R6).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from memwarden.commands.model import Sensitivity

__all__ = ["POLICY", "Access", "DomainPolicy", "EMPTY_POLICY"]

_R, _C, _I, _P = Sensitivity.RESTRICTED, Sensitivity.CONFIDENTIAL, Sensitivity.INTERNAL, Sensitivity.PUBLIC


@dataclass(frozen=True, slots=True)
class Access:
    """One READ access: a target, the highest sensitivity readable through it, and an optional condition.

    Targets: ``track`` (the relationship's own track, every facet); ``track-credentials`` and
    ``track-places`` (only the ``#credentials`` or ``#places`` facet of that track); ``subject`` (the
    person the relationship points at, and the tracks that person is the case subject of); ``self``
    (the principal's own person circle); ``own-private`` (the principal's private notes); ``all``
    (every track, thread and person circle of the episode, not private notes); ``threads`` (every
    thread); ``scope-threads`` (the threads, without their facets, of the relationship's track whose
    word its ``access_scope`` names); ``participant`` (the threads in which an insider's record names
    the principal, from that record's time on). ``when``: the access applies only if the relationship's ``access_scope``
    contains that word (e.g. ``room`` in ``safe_summary_and_room``).
    """

    target: str
    ceiling: Sensitivity
    when: str | None = None


@dataclass(frozen=True, slots=True)
class DomainPolicy:
    """R7 for one domain (plus the domain's word lists for R3 and R4).

    - ``relationships``: kind -> accesses; ``roles``: role -> extra accesses; ``default``: accesses
      every principal gets; ``role_caps``: role -> cap on every ceiling.
    - ``insider_kinds``: kinds that make a principal an insider (household members); with
      ``outsiders_are_persons`` every other principal gets a person circle.
    - ``subject_kinds``: kinds that name a principal as the subject of a case track.
    - ``threads``: a track's named threads ("<Track> <Word>", e.g. "Elm Laundry" in household
      "elm_house") become sub-circles ``track:<id>/<word>``.
    - ``general_ceiling``: what everybody reads of unscoped turns (PUBLIC: nothing).
    - ``extra_confidential``: the domain's CONFIDENTIAL words (R3 ``domain-word``);
      ``extra_values``: in such a turn, group 1 of each match is a protected value (R4), e.g. the
      wording of a family-release scope.
    - ``private_details``: R3 ``restricted-detail`` (a time or place in a turn that calls details exact,
      restricted, resident-only, private or confidential is CONFIDENTIAL and a protected value), and a
      private note stays in its author's private circle even when it repeats a protected value (R6).
    """

    relationships: Mapping[str, tuple[Access, ...]]
    roles: Mapping[str, tuple[Access, ...]] = field(default_factory=dict)
    role_caps: Mapping[str, Sensitivity] = field(default_factory=dict)
    default: tuple[Access, ...] = ()
    insider_kinds: frozenset[str] = frozenset()
    subject_kinds: frozenset[str] = frozenset()
    outsiders_are_persons: bool = False
    threads: bool = False
    general_ceiling: Sensitivity = _P
    extra_confidential: re.Pattern[str] | None = None
    extra_values: re.Pattern[str] | None = None
    private_details: bool = False


def _a(*pairs: tuple[str, Sensitivity] | Access) -> tuple[Access, ...]:
    return tuple(p if isinstance(p, Access) else Access(*p) for p in pairs)


_OFFICE = DomainPolicy(
    relationships={
        **{k: _a(("track", _R)) for k in (
            "project_member", "budget_owner", "legal_reviewer", "procurement_owner", "operations_owner")},
        "executive_sponsor": _a(("track", _I)),
    },
    role_caps={"sales": _P, "employee": _I, "manager": _I, "contractor": _P, "hr": _I, "executive_assistant": _P},
    extra_confidential=re.compile(r"\b(?:contract|renewal|redline|auto-renew\w*)\b", re.IGNORECASE),
)

_CASE_SUBJECT_KINDS = frozenset({
    "appeal_case_subject", "audit_case_subject", "candidacy_case_subject", "capstone_case_subject",
    "clearance_case_subject", "committee_case_subject", "embargo_case_subject", "exchange_case_subject",
    "housing_case_subject", "nomination_case_subject", "panel_case_subject", "petition_case_subject",
    "placement_case_subject", "portfolio_case_subject", "practicum_case_subject", "residence_case_subject",
    "review_case_subject", "transfer_case_subject", "waiver_case_subject", "research_project_member",
})
_CASE_CHAIN_KINDS = (
    "advisor_for", "research_supervisor", "committee_chair", "committee_chair_for", "course_instructor",
    "course_instructor_for", "faculty_case_owner", "faculty_chair", "faculty_liaison", "faculty_reviewer_for",
    "faculty_supervisor", "funding_case_owner", "financial_aid_case_owner", "registrar_case_owner",
    "residence_case_owner", "housing_case_owner",
)
_PUBLIC_PROGRAM_KINDS = (
    "program_member", "public_program_coordinator", "public_program_helper", "program_helper", "program_lead",
    "faculty_lead", "teaching_staff",
)
_EDUCATION = DomainPolicy(
    relationships={
        **{k: _a(("subject", _R)) for k in _CASE_CHAIN_KINDS},
        **{k: _a(("track", _R)) for k in _CASE_SUBJECT_KINDS},
        **{k: _a(("track", _I)) for k in _PUBLIC_PROGRAM_KINDS},
        "it_support": _a(("track", _I), ("track-credentials", _R), ("track-places", _C)),
        "calendar_coordinator": _a(("track", _I), Access("track-places", _C, when="room")),
    },
    roles={"department_admin": _a(("all", _I))},
    subject_kinds=_CASE_SUBJECT_KINDS,
    extra_confidential=re.compile(r"\b(?:holds?|blockers?|release|family-release|scope)\b", re.IGNORECASE),
    extra_values=re.compile(
        r"\brelease\b[^.:]{0,40}?(?::|\bis\b(?:\s+(?:now|still))?|\bto\b|\breads\b)\s*'?([^.']{8,90})", re.IGNORECASE
    ),
)

#: Household relationships whose ``access_scope`` names the threads they serve (read at INTERNAL).
_THREAD_SCOPED_KINDS = (
    "logistics_delegate", "trusted_backup", "device_setup_delegate", "device_helper_for", "home_setup_helper",
    "service_technician", "service_provider", "childcare_provider", "cleaning_service", "petcare_provider",
)
_HOUSEHOLD = DomainPolicy(
    relationships={
        "household_member": _a(("own-private", _R)),
        "host_of_guest": _a(("subject", _R)),
        "guest_of_resident": _a(("subject", _R)),
        "pickup_authorized": _a(("subject", _I), ("self", _I)),
        "pickup_delegate": _a(("self", _I)),
        "caregiver_for": _a(("subject", _I), ("self", _I)),
        **{k: _a(("scope-threads", _I)) for k in _THREAD_SCOPED_KINDS},
    },
    roles={"primary_resident": _a(("all", _R), ("own-private", _R))},
    default=_a(("self", _I), ("participant", _I)),
    role_caps={"guest": _P, "household_manager": _I, "building_staff": _P},
    insider_kinds=frozenset({"household_member"}),
    outsiders_are_persons=True,
    threads=True,
    private_details=True,
)

#: R7 tables per domain.
POLICY: Mapping[str, DomainPolicy] = {"office": _OFFICE, "education": _EDUCATION, "household": _HOUSEHOLD}
#: The policy of a domain without a table: nothing is readable except through ownership.
EMPTY_POLICY = DomainPolicy(relationships={})
