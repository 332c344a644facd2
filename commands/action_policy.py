"""The policy document of the action boundary: :class:`ActionPolicy` (versioned, its :class:`Rule`
list with unique ids), its JSON form (:meth:`ActionPolicy.from_json` / :meth:`ActionPolicy.to_json`)
and the field validators that the boundary's own types share. Pure: no I/O.
:mod:`memwarden.commands.authorize` decides from it (its docstring says how a rule matches)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from memwarden.errors import ValidationError

#: The wildcard of every rule list (principals, actions, resource types, scopes).
ANY = "*"


class Effect(StrEnum):
    """What a matching rule does: allow (within its limits) or deny outright."""

    ALLOW = "ALLOW"
    DENY = "DENY"


def check_name(where: str, value: Any) -> str:
    """``value`` itself if it is a non-empty (not blank) string; else ``ValidationError`` on ``where``."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(where, f"must be a non-empty string, got {value!r}")
    return value


def check_names(where: str, value: Any, *, nonempty: bool = True) -> tuple[str, ...]:
    """``value`` (an iterable of non-empty strings, not a string or mapping) as a tuple; empty only if
    ``nonempty`` is false. Raises ``ValidationError`` naming ``where`` or ``where[i]``."""
    if isinstance(value, str) or not isinstance(value, Iterable) or isinstance(value, Mapping):
        raise ValidationError(where, f"must be a list of strings, got {type(value).__name__}")
    out = tuple(check_name(f"{where}[{i}]", v) for i, v in enumerate(value))
    if nonempty and not out:
        raise ValidationError(where, "must not be empty")
    return out


def check_number(where: str, value: Any) -> float:
    """``value`` (an int or float, not a bool, finite) as a float; else ``ValidationError`` on ``where``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(where, f"must be a finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Rule:
    """One policy rule (matching: see :mod:`memwarden.commands.authorize`). Raises ``ValidationError``
    naming the field for empty lists, an unknown effect, non-numeric limits or limits on a DENY rule."""

    rule_id: str
    effect: Effect
    principals: tuple[str, ...]
    actions: tuple[str, ...]
    resource_types: tuple[str, ...]
    scopes: tuple[str, ...] = (ANY,)
    limits: Mapping[str, float] = field(default_factory=dict)
    attributes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        check_name("rule_id", self.rule_id)
        try:
            set_(self, "effect", Effect(str(self.effect).upper()))
        except ValueError:
            raise ValidationError("effect", f"must be ALLOW or DENY, got {self.effect!r}") from None
        for f in ("principals", "actions", "resource_types", "scopes"):
            set_(self, f, check_names(f, getattr(self, f)))
        if not isinstance(self.limits, Mapping):
            raise ValidationError("limits", "must be a mapping of attribute to maximum")
        if not isinstance(self.attributes, Mapping):
            raise ValidationError("attributes", "must be a mapping of attribute to allowed values")
        if self.limits and self.effect is Effect.DENY:
            raise ValidationError("limits", "only ALLOW rules carry limits (a DENY rule denies outright)")
        set_(self, "limits", MappingProxyType(
            {check_name("limits", k): check_number(f"limits.{k}", v) for k, v in self.limits.items()}))
        set_(self, "attributes", MappingProxyType(
            {check_name("attributes", k): check_names(f"attributes.{k}", v) for k, v in self.attributes.items()}))


_RULE_KEYS = {"rule_id", "effect", "principals", "actions", "resource_types", "scopes", "limits", "attributes"}


@dataclass(frozen=True)
class ActionPolicy:
    """Versioned action policy: ``policy_id``, ``version`` (int >= 1) and its rules (unique ids)."""

    policy_id: str
    version: int
    rules: tuple[Rule, ...]

    def __post_init__(self) -> None:
        check_name("policy_id", self.policy_id)
        if isinstance(self.version, bool) or not isinstance(self.version, int) or self.version < 1:
            raise ValidationError("version", f"must be an integer >= 1, got {self.version!r}")
        rules = tuple(self.rules)
        seen: set[str] = set()
        for i, r in enumerate(rules):
            if not isinstance(r, Rule):
                raise ValidationError(f"rules[{i}]", f"must be a Rule, got {type(r).__name__}")
            if r.rule_id in seen:
                raise ValidationError(f"rules[{i}].rule_id", f"duplicate rule id {r.rule_id!r}")
            seen.add(r.rule_id)
        object.__setattr__(self, "rules", rules)

    @property
    def actions(self) -> frozenset[str]:
        """The actions the policy names (wildcards excluded)."""
        return frozenset(a for r in self.rules for a in r.actions if a != ANY)

    @classmethod
    def from_json(cls, text: str | bytes) -> ActionPolicy:
        """Parse a JSON document ``{"policy_id", "version", "rules": [{"rule_id", "effect",
        "principals", "actions", "resource_types", "scopes"?, "limits"?, "attributes"?}]}``.
        Raises ``ValidationError`` (a ``ValueError``) whose ``field`` names the bad field, e.g.
        ``rules[2].limits.amount``, for bad JSON, missing/unknown keys or wrong types."""
        try:
            doc = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as exc:
            raise ValidationError("policy", f"not a JSON document: {exc}") from None
        if not isinstance(doc, dict):
            raise ValidationError("policy", "must be a JSON object")
        _keys("", doc, {"policy_id", "version", "rules"}, {"policy_id", "version", "rules"})
        if not isinstance(doc["rules"], list):
            raise ValidationError("rules", "must be a list")
        rules = []
        for i, raw in enumerate(doc["rules"]):
            where = f"rules[{i}]"
            if not isinstance(raw, dict):
                raise ValidationError(where, "must be an object")
            _keys(where + ".", raw, _RULE_KEYS, {"rule_id", "effect", "principals", "actions", "resource_types"})
            try:
                rules.append(Rule(**raw))
            except ValidationError as exc:
                raise ValidationError(f"{where}.{exc.field}", exc.reason) from None
        return cls(policy_id=doc["policy_id"], version=doc["version"], rules=tuple(rules))

    def to_json(self) -> str:
        """The policy as a JSON document that :meth:`from_json` reads back to an equal policy."""
        return json.dumps({"policy_id": self.policy_id, "version": self.version, "rules": [
            {"rule_id": r.rule_id, "effect": r.effect.value, "principals": list(r.principals),
             "actions": list(r.actions), "resource_types": list(r.resource_types), "scopes": list(r.scopes),
             "limits": dict(r.limits), "attributes": {k: list(v) for k, v in r.attributes.items()}}
            for r in self.rules]}, sort_keys=True)


def _keys(prefix: str, obj: dict[str, Any], allowed: set[str], required: set[str]) -> None:
    """Refuse the first missing ``required`` key, then the first key outside ``allowed`` (sorted)."""
    missing = sorted(required - obj.keys())
    if missing:
        raise ValidationError(prefix + missing[0], "required")
    unknown = sorted(str(k) for k in obj.keys() - allowed)
    if unknown:
        raise ValidationError(prefix + unknown[0], "unknown field")
