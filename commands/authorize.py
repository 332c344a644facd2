"""The action boundary: may this principal do this action on this resource, under current policy?

Seed 004 "Reading memory must not grant authority": "A remembered procedure is an input to
authorization, never a substitute for it. [...] Deterministic policy at the action boundary must be
able to say no." :func:`authorize` therefore decides from the versioned :class:`ActionPolicy` (the
policy document, :mod:`memwarden.commands.action_policy`), the authenticated principal and the
resource's own attributes ALONE. Memory takes part only as ``evidence_ids`` (memory ids, validated as
UUIDs so that no memory text can be passed), which are echoed into the decision for audit and read by
nothing else. A stored "always approve invoices from X" changes no decision. Pure: no I/O, no clock.

Decision procedure (first match wins, in this order):

1. principal not authenticated -> deny ``UNAUTHENTICATED``;
2. action named by no rule of the policy -> deny ``UNKNOWN_ACTION``;
3. any matching DENY rule -> deny ``DENIED_BY_RULE`` (explicit denies win over every allow);
4. a matching ALLOW rule whose limits all hold -> allow ``ALLOWED_BY_RULE``;
5. matching ALLOW rules but none within its limits -> deny ``LIMIT_EXCEEDED`` and/or
   ``LIMIT_ATTRIBUTE_MISSING`` (a limit on an attribute the resource lacks fails closed);
6. otherwise -> deny ``NO_MATCHING_RULE`` (default deny).

A rule matches when the principal is among ``principals`` (its id, ``role:<r>`` for one of its roles,
or ``"*"``), the action among ``actions`` (or ``"*"``), the resource type among ``resource_types`` (or
``"*"``), the resource scope among ``scopes`` (or ``"*"``), and every ``attributes`` condition holds
(the resource attribute equals one of the listed values; for a DENY rule an absent attribute also
matches, so that leaving it out cannot dodge the deny). ``limits`` (ALLOW rules only) are
inclusive maxima on numeric resource attributes, e.g. ``{"amount": 1000}``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from memwarden.commands.action_policy import ANY, ActionPolicy, Effect, Rule, check_name, check_names, check_number
from memwarden.commands.reasons import Reason
from memwarden.errors import ValidationError

ROLE_PREFIX = "role:"


@dataclass(frozen=True)
class PrincipalInfo:
    """The authenticated caller: principal id, bare role names, and whether authentication holds."""

    principal: str
    roles: frozenset[str] = frozenset()
    authenticated: bool = True

    def __post_init__(self) -> None:
        check_name("principal", self.principal)
        object.__setattr__(self, "roles", frozenset(check_names("roles", self.roles, nonempty=False)))
        if not isinstance(self.authenticated, bool):
            raise ValidationError("authenticated", "must be a bool")


@dataclass(frozen=True)
class Resource:
    """What the action is on: ``type`` (e.g. ``"invoice"``), ``id``, ``scope``, and the request's own
    attributes (``amount``, ``recipient`` ...; str or finite numbers), never memory content."""

    type: str
    id: str
    scope: str
    attributes: Mapping[str, str | int | float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_name("type", self.type)
        check_name("id", self.id)
        check_name("scope", self.scope)
        if not isinstance(self.attributes, Mapping):
            raise ValidationError("attributes", "must be a mapping")
        for k, v in self.attributes.items():
            check_name("attributes", k)
            if not isinstance(v, str):
                check_number(f"attributes.{k}", v)
        object.__setattr__(self, "attributes", MappingProxyType(dict(self.attributes)))


@dataclass(frozen=True)
class AuthorizationDecision:
    """Allow or deny with reasons, the policy (id, version) that decided, and the evidence ids echoed
    for audit only (they played no part in the decision)."""

    allowed: bool
    reasons: tuple[Reason, ...]
    policy_id: str
    policy_version: int
    principal: str
    action: str
    resource_type: str
    resource_id: str
    evidence_ids: tuple[str, ...]

    @property
    def codes(self) -> tuple[str, ...]:
        """The reason codes, in order."""
        return tuple(r.code for r in self.reasons)


def _evidence(evidence_ids: Sequence[str]) -> tuple[str, ...]:
    if isinstance(evidence_ids, str | bytes) or not isinstance(evidence_ids, Iterable):
        raise ValidationError("evidence_ids", "must be a sequence of memory ids")
    out = []
    for i, e in enumerate(evidence_ids):
        try:
            out.append(str(uuid.UUID(e)))
        except (ValueError, TypeError, AttributeError):
            raise ValidationError(f"evidence_ids[{i}]", "must be a memory id (UUID); memory content "
                                  "cannot be passed to the action boundary") from None
    return tuple(out)


def _in(values: tuple[str, ...], value: str) -> bool:
    return ANY in values or value in values


def _attribute_holds(rule: Rule, resource: Resource, key: str, values: tuple[str, ...]) -> bool:
    value = resource.attributes.get(key)
    if value is None:
        return rule.effect is Effect.DENY  # fail closed: an absent attribute cannot dodge a deny
    return isinstance(value, str) and value in values


def _matches(rule: Rule, who: PrincipalInfo, action: str, resource: Resource) -> bool:
    names = {who.principal, ANY} | {ROLE_PREFIX + r for r in who.roles}
    return (not names.isdisjoint(rule.principals) and _in(rule.actions, action)
            and _in(rule.resource_types, resource.type) and _in(rule.scopes, resource.scope)
            and all(_attribute_holds(rule, resource, k, vs) for k, vs in rule.attributes.items()))


def _limit_failures(rule: Rule, resource: Resource) -> list[Reason]:
    out = []
    for attr, maximum in rule.limits.items():
        value = resource.attributes.get(attr)
        if value is None or isinstance(value, str):
            out.append(Reason("LIMIT_ATTRIBUTE_MISSING",
                              f"rule {rule.rule_id} limits {attr!r} but the resource has no numeric {attr!r}",
                              rule_id=rule.rule_id))
        elif value > maximum:
            out.append(Reason("LIMIT_EXCEEDED", f"{attr} {value:g} exceeds the limit {maximum:g} of rule "
                              f"{rule.rule_id}", rule_id=rule.rule_id))
    return out


def authorize(principal: PrincipalInfo, action: str, resource: Resource, evidence_ids: Sequence[str],
              policy: ActionPolicy) -> AuthorizationDecision:
    """Decide ``action`` on ``resource`` for ``principal`` from ``policy`` alone (module docstring).

    ``evidence_ids`` are the memory ids that informed the request (UUIDs); they are echoed in the
    decision for audit and never read. Raises ``ValidationError`` for a malformed argument (an empty
    action, wrong types, an evidence entry that is not a UUID) — a refusal is a decision, not an error."""
    for name, value, cls in (("principal", principal, PrincipalInfo), ("resource", resource, Resource),
                             ("policy", policy, ActionPolicy)):
        if not isinstance(value, cls):
            raise ValidationError(name, f"must be a {cls.__name__}, got {type(value).__name__}")
    check_name("action", action)
    evidence = _evidence(evidence_ids)

    def decide(allowed: bool, reasons: list[Reason]) -> AuthorizationDecision:
        return AuthorizationDecision(allowed, tuple(reasons), policy.policy_id, policy.version, principal.principal,
                                     action, resource.type, resource.id, evidence)

    if not principal.authenticated:
        return decide(False, [Reason("UNAUTHENTICATED", f"{principal.principal} is not authenticated")])
    if action not in policy.actions:
        return decide(False, [Reason("UNKNOWN_ACTION", f"policy {policy.policy_id} v{policy.version} "
                                                       f"does not name the action {action!r}")])
    matching = [r for r in policy.rules if _matches(r, principal, action, resource)]
    denies = [r for r in matching if r.effect is Effect.DENY]
    if denies:
        return decide(False, [Reason("DENIED_BY_RULE", f"rule {r.rule_id} denies {action} on {resource.type}",
                                     rule_id=r.rule_id) for r in denies])
    failures: list[Reason] = []
    for rule in (r for r in matching if r.effect is Effect.ALLOW):
        failed = _limit_failures(rule, resource)
        if not failed:
            return decide(True, [Reason("ALLOWED_BY_RULE", f"rule {rule.rule_id} allows {action} on "
                                                           f"{resource.type}", rule_id=rule.rule_id)])
        failures.extend(failed)
    if failures:
        return decide(False, failures)
    return decide(False, [Reason("NO_MATCHING_RULE", f"no rule of policy {policy.policy_id} v{policy.version} "
                                                     f"allows {principal.principal} to {action} {resource.type} "
                                                     f"in {resource.scope}")])
