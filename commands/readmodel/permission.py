"""Read and write permission (ABAC with relationship grants): the ``ACL(mu, u_id)`` of SSGM Eq. 5.

SSGM Principle 3 ("Access-Scoped Retrieval") and seed 004 "Shared memory needs principal-aware
isolation": the permission is decided from the principal, its roles, the grants known at ``now_ms``
and the requested purpose, and it is injected *into* every query (vector filter here, SQL predicate
in :mod:`memwarden.commands.readmodel.sql`) so that candidate generation only ever sees permitted
records. Nothing here does I/O.

Rules:

- Purpose limitation applies to every read: a record with purpose tags is readable only for one of
  them (own records included). No tags = any purpose.
- A principal reads what it owns (``owner``) or what is about it (``subject``).
- Otherwise only through an applicable grant: grantee is the principal or ``role:<r>`` for one of
  its roles, READ in rights, valid at now (``valid_from_ms <= now < valid_to_ms`` and ``now <
  revoked_at_ms``: a revocation holds from the next read on), requested purpose covered, and the
  record's scope, subject, store kind and sensitivity (``<= ceiling``) within the grant.

Wildcards: ``"*"`` in a grant's ``scopes``, ``subjects`` or ``purposes`` means "any" (like ``()`` for
subjects and purposes); ``"*"`` among a record's purpose tags means "any purpose" — it is the payload
form of "no tags" (:mod:`memwarden.commands.readmodel.payload`).

Three equivalent forms: :func:`may_read` (the oracle), :func:`read_permission_filter` (the filter
tree) and :func:`memwarden.commands.readmodel.sql.read_permission_sql` (a WHERE fragment over
``memory_versions``); :func:`memwarden.commands.readmodel.filters.evaluate` proves them equal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from memwarden.commands.model import Right, Sensitivity, StoreKind
from memwarden.commands.readmodel import checks
from memwarden.commands.readmodel.filters import FieldIn, Filter
from memwarden.commands.readmodel.payload import ANY, RecordAttrs
from memwarden.errors import ValidationError

ROLE_PREFIX = "role:"
#: Sensitivity levels from least to most sensitive.
SENSITIVITY_ORDER: tuple[Sensitivity, ...] = (
    Sensitivity.PUBLIC, Sensitivity.INTERNAL, Sensitivity.CONFIDENTIAL, Sensitivity.RESTRICTED,
)


def allowed_levels(ceiling: Sensitivity) -> tuple[str, ...]:
    """The sensitivity values at or below ``ceiling``, least sensitive first."""
    return tuple(s.value for s in SENSITIVITY_ORDER[: SENSITIVITY_ORDER.index(ceiling) + 1])


@dataclass(frozen=True)
class Grant:
    """An ABAC grant (command ``GrantAccess``); times are epoch ms, ``valid_to_ms`` exclusive.

    ``grantee`` is a principal id (``"user:bob"``) or a role (``"role:clinician"``). ``scopes`` are
    exact scope names or ``("*",)``; ``subjects``/``purposes``/``store_kinds`` empty = any. A grant
    with ``revoked_at_ms = t`` no longer applies to reads or writes at ``now >= t``.
    Raises ``ValidationError`` (a ``ValueError`` naming the field) for an empty id, grantee, rights
    or scopes, an unknown right, store kind or sensitivity, or ``valid_to_ms <= valid_from_ms``.
    Strings are accepted for the enum fields and lists for the tuple fields (normalised)."""

    grant_id: str
    grantee: str
    rights: frozenset[Right]
    scopes: tuple[str, ...]
    subjects: tuple[str, ...] = ()
    purposes: tuple[str, ...] = ()
    store_kinds: tuple[StoreKind, ...] = ()
    sensitivity_ceiling: Sensitivity = Sensitivity.INTERNAL
    valid_from_ms: int = 0
    valid_to_ms: int | None = None
    revoked_at_ms: int | None = None
    granted_by: str = ""
    relationship: str | None = None

    def __post_init__(self) -> None:
        checks.name("grant_id", self.grant_id)
        checks.name("grantee", self.grantee)
        if self.grantee.startswith(ROLE_PREFIX) and not self.grantee[len(ROLE_PREFIX):].strip():
            raise ValidationError("grantee", "role grantee needs a role name after 'role:'")
        if isinstance(self.rights, str) or not isinstance(self.rights, Iterable):
            raise ValidationError("rights", "must be a set of rights")
        rights = frozenset(checks.enum(f"rights[{i}]", Right, r) for i, r in enumerate(self.rights))
        if not rights:
            raise ValidationError("rights", "must not be empty")
        set_ = object.__setattr__
        set_(self, "rights", rights)
        set_(self, "scopes", checks.names("scopes", self.scopes, nonempty=True))
        set_(self, "subjects", checks.names("subjects", self.subjects))
        set_(self, "purposes", checks.names("purposes", self.purposes))
        if isinstance(self.store_kinds, str) or not isinstance(self.store_kinds, Iterable):
            raise ValidationError("store_kinds", "must be a sequence of store kinds")
        set_(self, "store_kinds",
             tuple(checks.enum(f"store_kinds[{i}]", StoreKind, k) for i, k in enumerate(self.store_kinds)))
        set_(self, "sensitivity_ceiling", checks.enum("sensitivity_ceiling", Sensitivity, self.sensitivity_ceiling))
        checks.epoch_ms("valid_from_ms", self.valid_from_ms)
        checks.epoch_ms("valid_to_ms", self.valid_to_ms, optional=True)
        checks.epoch_ms("revoked_at_ms", self.revoked_at_ms, optional=True)
        if self.valid_to_ms is not None and self.valid_to_ms <= self.valid_from_ms:
            raise ValidationError("valid_to_ms", "must be later than valid_from_ms")

    def valid_at(self, now_ms: int) -> bool:
        """True when ``valid_from_ms <= now_ms < valid_to_ms`` and not revoked at or before ``now_ms``."""
        return (self.valid_from_ms <= now_ms
                and (self.valid_to_ms is None or now_ms < self.valid_to_ms)
                and (self.revoked_at_ms is None or now_ms < self.revoked_at_ms))


@dataclass(frozen=True)
class ReadContext:
    """Who reads, for what purpose, when (epoch ms), and every grant known at that time.

    ``roles`` are bare role names (``"clinician"``; grantee ``"role:clinician"`` matches). Raises
    ``ValidationError`` for an empty principal or purpose, a principal or role written as
    ``"role:..."`` (a principal cannot be a role; roles are bare), or ``purpose == "*"`` (a read
    names one purpose)."""

    principal: str
    roles: frozenset[str]
    purpose: str
    now_ms: int
    grants: tuple[Grant, ...]

    def __post_init__(self) -> None:
        checks.name("principal", self.principal)
        if self.principal.startswith(ROLE_PREFIX):
            raise ValidationError("principal", f"a principal id cannot be a role: {self.principal!r}")
        roles = checks.names("roles", self.roles)
        for i, role in enumerate(roles):
            if role.startswith(ROLE_PREFIX):
                raise ValidationError(f"roles[{i}]", f"bare role names only, got {role!r}")
        checks.name("purpose", self.purpose)
        if self.purpose == ANY:
            raise ValidationError("purpose", "a read names one purpose, not '*'")
        checks.epoch_ms("now_ms", self.now_ms)
        grants = tuple(self.grants)
        for i, g in enumerate(grants):
            if not isinstance(g, Grant):
                raise ValidationError(f"grants[{i}]", f"must be a Grant, got {type(g).__name__}")
        object.__setattr__(self, "roles", frozenset(roles))
        object.__setattr__(self, "grants", grants)


# -- decisions -------------------------------------------------------------------------------------


def _is_grantee(grant: Grant, principal: str, roles: frozenset[str]) -> bool:
    if grant.grantee.startswith(ROLE_PREFIX):
        return grant.grantee[len(ROLE_PREFIX):] in roles
    return grant.grantee == principal


def _covers(values: tuple[str, ...], value: str) -> bool:
    return not values or ANY in values or value in values


def _grant_covers(grant: Grant, subject: str, scope: str, store_kind: StoreKind) -> bool:
    return (ANY in grant.scopes or scope in grant.scopes) and _covers(grant.subjects, subject) \
        and (not grant.store_kinds or store_kind in grant.store_kinds)


def applicable_grants(ctx: ReadContext, right: Right = Right.READ) -> tuple[Grant, ...]:
    """The grants of ``ctx`` that apply to this principal now, for ``right`` and ``ctx.purpose``:
    grantee match (principal or one of its roles), ``right`` held, valid at ``ctx.now_ms`` (revoked
    grants drop out from ``revoked_at_ms`` on), purpose covered. Order as in ``ctx.grants``."""
    right = checks.enum("right", Right, right)
    return tuple(
        g for g in ctx.grants
        if right in g.rights and _is_grantee(g, ctx.principal, ctx.roles) and g.valid_at(ctx.now_ms)
        and _covers(g.purposes, ctx.purpose)
    )


def _purpose_ok(record: RecordAttrs, purpose: str) -> bool:
    return _covers(record.purposes, purpose)


def _grant_reads(grant: Grant, record: RecordAttrs) -> bool:
    """Whether ``grant`` covers ``record``'s subject, scope and store kind, up to its sensitivity ceiling."""
    return _grant_covers(grant, record.subject, record.scope, record.store_kind) \
        and SENSITIVITY_ORDER.index(record.sensitivity) <= SENSITIVITY_ORDER.index(grant.sensitivity_ceiling)


def may_read(ctx: ReadContext, record: RecordAttrs) -> bool:
    """The read-permission oracle ``ACL(record, ctx.principal)`` for ``ctx.purpose`` at ``ctx.now_ms``."""
    if not _purpose_ok(record, ctx.purpose):
        return False
    if ctx.principal in (record.owner, record.subject):
        return True
    return any(_grant_reads(g, record) for g in applicable_grants(ctx))


def may_read_for_a_purpose(principal: str, roles: Iterable[str], now_ms: int, grants: Iterable[Grant],
                           record: RecordAttrs) -> bool:
    """Whether ``principal`` (with bare ``roles``) may read ``record`` at ``now_ms`` for at least one purpose:
    :func:`may_read` without a named purpose (its owner or subject; or a ``READ`` grant valid now covering its
    subject, scope, store kind and sensitivity whose purposes meet the record's). What a derived write may
    cite (W7): a span quoted from a source the writer may not read would tell it what that source says."""
    if principal in (record.owner, record.subject):
        return True
    held = frozenset(roles)
    for g in grants:
        if Right.READ not in g.rights or not _is_grantee(g, principal, held) or not g.valid_at(now_ms):
            continue
        purposes = not g.purposes or ANY in g.purposes or not record.purposes or ANY in record.purposes \
            or bool(set(g.purposes) & set(record.purposes))
        if purposes and _grant_reads(g, record):
            return True
    return False


def may_write(principal: str, roles: Iterable[str], now_ms: int, grants: Iterable[Grant], subject: str, scope: str,
              store_kind: StoreKind, sensitivity: Sensitivity | None = None,
              right: Right = Right.WRITE) -> Grant | None:
    """The first grant (in ``grants`` order) that lets ``principal`` write (``right`` WRITE) or forget
    (``right`` FORGET) a ``store_kind`` record about ``subject`` in ``scope`` at ``now_ms``: grantee
    match, the right, valid at now, scope,
    subject and store kind covered, and (when ``sensitivity`` is given) ``sensitivity <= ceiling``.
    ``None`` when no grant does. Purposes do not restrict writes. A principal writing about itself
    needs no grant; that is the gate's rule, not this function's (it only looks up grants).
    Raises ``ValidationError`` for empty names, a non-integer ``now_ms`` or a non-``Grant`` entry;
    a principal id written like a role (``"role:x"``) matches no grant (grantee ``role:`` is a role)."""
    checks.name("principal", principal)
    checks.name("subject", subject)
    checks.name("scope", scope)
    checks.epoch_ms("now_ms", now_ms)
    role_set = frozenset(checks.names("roles", roles))
    store_kind = checks.enum("store_kind", StoreKind, store_kind)
    level = (None if sensitivity is None
             else SENSITIVITY_ORDER.index(checks.enum("sensitivity", Sensitivity, sensitivity)))
    for i, g in enumerate(grants):
        if not isinstance(g, Grant):
            raise ValidationError(f"grants[{i}]", f"must be a Grant, got {type(g).__name__}")
        if (right in g.rights and _is_grantee(g, principal, role_set) and g.valid_at(now_ms)
                and _grant_covers(g, subject, scope, store_kind)
                and (level is None or level <= SENSITIVITY_ORDER.index(g.sensitivity_ceiling))):
            return g
    return None


# -- the same predicate for the vector index and for SQL -------------------------------------------


def grant_filter(g: Grant) -> Filter:
    """The records one grant covers, as a conjunctive filter over the payload: its scopes (unless
    ``"*"``), subjects (unless any), store kinds (unless any) and the sensitivity levels up to its
    ceiling. Purpose and validity are checked by :func:`applicable_grants`, not here."""
    must: list[FieldIn] = []
    if ANY not in g.scopes:
        must.append(FieldIn("scope", tuple(dict.fromkeys(g.scopes))))
    if g.subjects and ANY not in g.subjects:
        must.append(FieldIn("subject", tuple(dict.fromkeys(g.subjects))))
    if g.store_kinds:
        must.append(FieldIn("store_kind", tuple(dict.fromkeys(k.value for k in g.store_kinds))))
    must.append(FieldIn("sensitivity", allowed_levels(g.sensitivity_ceiling)))
    return Filter(must=tuple(must))


def read_permission_filter(ctx: ReadContext) -> Filter:
    """The read permission as a ``VectorIndex`` filter over the point payload (keys ``owner``,
    ``subject``, ``scope``, ``store_kind``, ``sensitivity``, ``purposes``; ``purposes == ["*"]``
    when the record has no tags). Shape: ``Filter(must=(FieldIn("purposes", ("*", purpose)),),
    should=(owner, subject, one conjunctive sub-filter per applicable grant))``; identical grant
    sub-filters are emitted once. Combine it with other conditions by nesting it in ``must``."""
    ways: list[FieldIn | Filter] = [FieldIn("owner", (ctx.principal,)), FieldIn("subject", (ctx.principal,))]
    ways.extend(dict.fromkeys(grant_filter(g) for g in applicable_grants(ctx)))
    return Filter(must=(FieldIn("purposes", (ANY, ctx.purpose)),), should=tuple(ways))
