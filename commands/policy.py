"""Write authority as versioned policy data (issue 3 part 2; seed 004 "The write boundary is the
first safety boundary": write authority is explicit).

A policy is a JSON document published on the ledger with ``PublishPolicy``; the gate uses the
latest admitted version and records ``<policy_id>/<version>`` on every decision. It declares:

* ``scopes`` — the known scopes, by exact ``name`` or fnmatch ``pattern``; ``open`` scopes accept
  writes from any principal with authority, closed ones need a WRITE grant (``GrantAccess``).
  A write to an undeclared scope is rejected (``UNKNOWN_SCOPE``).
* ``write_rules`` — who may write which store kinds: a rule matches a principal by ``principals``
  (ids), ``roles`` or ``principal_kinds`` (any listed matcher must hold; an empty matcher list
  matches everyone), for ``store_kinds``; ``subjects`` is ``self`` (the principal writes about
  itself), ``granted`` (itself, or another subject with a WRITE grant; without one the write goes to
  review) or ``any``.

Pure: :func:`parse_policy` validates a document (``PolicyError`` naming the field);
:func:`write_rule` finds the first rule that authorises a write.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from typing import Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, model_validator

from memwarden.commands.model import PrincipalKind, StoreKind
from memwarden.commands.principals import PrincipalRecord


class PolicyError(ValueError):
    """A policy document that does not parse or validate; ``field`` names where."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ScopeRule(_Strict):
    """A declared scope: exact ``name`` or fnmatch ``pattern``; ``open`` = no grant needed to write."""

    name: str | None = None
    pattern: str | None = None
    open: bool = False

    @model_validator(mode="after")
    def _one_of(self) -> ScopeRule:
        if (self.name is None) == (self.pattern is None):
            raise ValueError("give exactly one of name or pattern")
        return self

    def matches(self, scope: str) -> bool:
        """Whether this declaration covers ``scope`` (exact name or fnmatch pattern)."""
        return scope == self.name if self.name is not None else fnmatch.fnmatchcase(scope, self.pattern or "")


class WriteRule(_Strict):
    """Who (principal ids, roles, kinds) may write which ``store_kinds`` about which ``subjects``."""

    id: str = Field(min_length=1)
    principals: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    principal_kinds: tuple[PrincipalKind, ...] = ()
    store_kinds: tuple[StoreKind, ...] = Field(min_length=1)
    subjects: Literal["self", "granted", "any"] = "self"

    def applies_to(self, principal: PrincipalRecord) -> bool:
        """Whether every non-empty matcher (ids, roles, kinds) holds for ``principal``."""
        if self.principals and principal.principal_id not in self.principals:
            return False
        if self.roles and not principal.has_role(*self.roles):
            return False
        return not (self.principal_kinds and principal.kind not in self.principal_kinds)


class WritePolicy(_Strict):
    """One version of the write-authority policy."""

    policy_id: str = Field(min_length=1)
    version: int = Field(ge=1)
    scopes: tuple[ScopeRule, ...] = Field(min_length=1)
    write_rules: tuple[WriteRule, ...] = Field(min_length=1)

    @property
    def label(self) -> str:
        """``<policy_id>/<version>``, recorded on every decision."""
        return f"{self.policy_id}/{self.version}"

    def scope(self, scope: str) -> ScopeRule | None:
        """The first declaration matching ``scope`` (exact names before patterns), or ``None``."""
        exact = [s for s in self.scopes if s.name is not None and s.matches(scope)]
        found = exact or [s for s in self.scopes if s.pattern is not None and s.matches(scope)]
        return found[0] if found else None


def parse_policy(document: str | bytes, policy_id: str | None = None, version: int | None = None) -> WritePolicy:
    """Parse and validate a JSON policy document.

    ``policy_id`` / ``version``, when given (from the ``PublishPolicy`` command), must equal the
    document's. Raises ``PolicyError`` naming the field.
    """
    try:
        data = json.loads(document)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PolicyError("document", f"not valid JSON: {exc}") from None
    try:
        policy = WritePolicy.model_validate(data)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        raise PolicyError("document." + ".".join(str(p) for p in first["loc"]), first["msg"]) from None
    if policy_id is not None and policy.policy_id != policy_id:
        raise PolicyError("document.policy_id", f"{policy.policy_id!r} differs from the command's {policy_id!r}")
    if version is not None and policy.version != version:
        raise PolicyError("document.version", f"{policy.version} differs from the command's {version}")
    return policy


def write_rule(policy: WritePolicy, principal: PrincipalRecord, store_kind: StoreKind,
               rules: Sequence[WriteRule] | None = None) -> WriteRule | None:
    """The first rule of ``policy`` that lets ``principal`` write ``store_kind``, or ``None``."""
    for rule in rules if rules is not None else policy.write_rules:
        if store_kind in rule.store_kinds and rule.applies_to(principal):
            return rule
    return None


DEFAULT_POLICY_TEXT = resources.files("memwarden.commands").joinpath("default_policy.json")


@lru_cache(maxsize=1)
def default_policy() -> WritePolicy:
    """The policy in force until the first ``PublishPolicy`` is admitted (``default_policy.json``)."""
    return parse_policy(DEFAULT_POLICY_TEXT.read_text())
