"""ABAC read/write permission (SSGM Principle 3, Eq. 5 ACL; seed 004 principal-aware isolation).

Every rule is checked on the oracle ``may_read`` *and* on the vector filter through the reference
evaluator, so that a rule the filter forgets fails here; a hypothesis property then compares the two
on random principals, grants and records. The SQL form is checked against Postgres in
tests/integration/test_access_sql.py.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memwarden.commands.model import Right, Sensitivity, StoreKind
from memwarden.commands.readmodel.access_keys import reader_keys
from memwarden.commands.readmodel.filters import FieldIn, FieldRange, Filter, evaluate
from memwarden.commands.readmodel.payload import RecordAttrs, point_keys, with_access_keys
from memwarden.commands.readmodel.payload import attrs_payload as payload_of
from memwarden.commands.readmodel.permission import (
    Grant,
    ReadContext,
    applicable_grants,
    may_read,
    may_read_for_a_purpose,
    may_write,
    read_permission_filter,
)
from memwarden.commands.readmodel.read_filter import read_filter
from memwarden.commands.readmodel.sql import read_permission_sql
from memwarden.errors import ValidationError

NOW = 1_000_000
NOW_DT = datetime.fromtimestamp(NOW / 1000, UTC)
LEVELS = list(Sensitivity)


def grant(**over: Any) -> Grant:
    data: dict[str, Any] = {"grant_id": "g1", "grantee": "user:bob", "rights": frozenset({Right.READ}),
                            "scopes": ("team-a",)}
    data.update(over)
    return Grant(**data)


def ctx(*grants: Grant, principal: str = "user:bob", roles: frozenset[str] = frozenset(), purpose: str = "support",
        now_ms: int = NOW) -> ReadContext:
    return ReadContext(principal, roles, purpose, now_ms, grants)


def rec(**over: Any) -> RecordAttrs:
    data: dict[str, Any] = {"owner": "user:alice", "subject": "user:alice", "scope": "team-a",
                            "store_kind": StoreKind.PROFILE, "sensitivity": Sensitivity.INTERNAL, "purposes": ()}
    data.update(over)
    return RecordAttrs(**data)


def readable(c: ReadContext, r: RecordAttrs) -> bool:
    """The oracle, asserted equal to the vector filter on the record's payload, in both of its forms:
    the filter tree and the access keys (for trusted content; untrusted content only with
    ``include_untrusted``)."""
    oracle = may_read(c, r)
    assert evaluate(read_permission_filter(c), payload_of(r)) is oracle
    assert keys_admit(c, r, "trusted") is oracle
    assert keys_admit(c, r, "untrusted", include_untrusted=True) is oracle
    assert not keys_admit(c, r, "untrusted")
    return oracle


def keys_admit(c: ReadContext, r: RecordAttrs, trust: str, include_untrusted: bool = False) -> bool:
    """Whether the reader's access keys meet the keys of ``r``'s point (status active, ``trust``)."""
    keys = reader_keys(c, include_untrusted)
    assert keys is not None
    point = with_access_keys({**payload_of(r), "status": "active", "trust": trust})
    return evaluate(Filter(must=(FieldIn("acl", keys),)), point)


# -- own records, records about oneself, strangers -------------------------------------------------


def test_owner_reads_own_record_and_subject_reads_records_about_it() -> None:
    assert readable(ctx(principal="user:alice"), rec())
    assert readable(ctx(principal="user:carol"), rec(owner="agent:notes", subject="user:carol"))
    assert readable(ctx(principal="agent:notes"), rec(owner="agent:notes", subject="user:carol"))


def test_a_stranger_without_grant_reads_nothing() -> None:
    assert not readable(ctx(), rec())
    assert not readable(ctx(principal="user:alicex"), rec())


def test_field_case_r1_bob_never_sees_alices_note_about_sam() -> None:
    alices = rec(owner="user:alice", subject="user:alice", scope="personal:alice")
    bobs = rec(owner="user:bob", subject="user:bob", scope="personal:bob")
    c = ctx(principal="user:bob")
    assert readable(c, bobs) and not readable(c, alices)


def test_field_case_r2_team_a_agent_never_sees_team_b() -> None:
    g = grant(grantee="role:team-a", scopes=("team-a",))
    c = ctx(g, principal="agent:planner", roles=frozenset({"team-a"}))
    assert readable(c, rec(scope="team-a", owner="user:ann", subject="project:orion"))
    assert not readable(c, rec(scope="team-b", owner="user:ben", subject="project:orion"))


# -- grants: grantee, right, roles -----------------------------------------------------------------


def test_grant_to_the_principal_opens_the_scope() -> None:
    assert readable(ctx(grant()), rec())
    assert not readable(ctx(grant(grantee="user:carol")), rec())


def test_role_grant_applies_to_holders_of_the_role_only() -> None:
    g = grant(grantee="role:clinician")
    assert readable(ctx(g, roles=frozenset({"clinician"})), rec())
    assert readable(ctx(g, roles=frozenset({"nurse", "clinician"})), rec())
    assert not readable(ctx(g, roles=frozenset({"nurse"})), rec())
    assert not readable(ctx(g), rec())


def test_a_principal_named_like_a_role_does_not_hold_the_role() -> None:
    assert not readable(ctx(grant(grantee="role:clinician"), principal="clinician"), rec())
    assert not readable(ctx(grant(grantee="clinician"), roles=frozenset({"clinician"})), rec())


def test_write_only_grant_gives_no_read() -> None:
    assert not readable(ctx(grant(rights=frozenset({Right.WRITE}))), rec())
    assert readable(ctx(grant(rights=frozenset({Right.WRITE, Right.READ}))), rec())


def test_relationship_is_recorded_but_decides_nothing_on_its_own() -> None:
    parent = grant(grantee="user:pat", scopes=("household",), subjects=("user:kid",), relationship="parent_of")
    c = ctx(parent, principal="user:pat")
    assert readable(c, rec(scope="household", owner="user:kid", subject="user:kid"))
    assert not readable(c, rec(scope="household", owner="user:sib", subject="user:sib"))
    assert readable(c, rec(scope="household", owner="user:sib", subject="user:kid"))


# -- validity interval and revocation --------------------------------------------------------------


@pytest.mark.parametrize("now, expected", [(99, False), (100, True), (199, True), (200, False), (10**9, False)])
def test_validity_interval_is_inclusive_at_start_and_exclusive_at_end(now: int, expected: bool) -> None:
    g = grant(valid_from_ms=100, valid_to_ms=200)
    assert readable(ctx(g, now_ms=now), rec()) is expected


def test_open_ended_grant_holds_forever() -> None:
    assert readable(ctx(grant(valid_from_ms=5), now_ms=10**13), rec())


@pytest.mark.parametrize("now, expected", [(NOW - 1, True), (NOW, False), (NOW + 1, False)])
def test_revocation_holds_from_the_revocation_time_on(now: int, expected: bool) -> None:
    assert readable(ctx(grant(revoked_at_ms=NOW), now_ms=now), rec()) is expected


def test_revocation_holds_from_the_next_read() -> None:
    g = grant()
    assert readable(ctx(g, now_ms=NOW), rec())
    revoked = Grant(**{**g.__dict__, "revoked_at_ms": NOW + 1})
    assert not readable(ctx(revoked, now_ms=NOW + 1), rec())
    assert not readable(ctx(revoked, now_ms=NOW + 2), rec())
    assert applicable_grants(ctx(revoked, now_ms=NOW + 1)) == ()


def test_one_expired_grant_does_not_hide_another_valid_one() -> None:
    old = grant(grant_id="old", valid_to_ms=NOW)
    new = grant(grant_id="new", valid_from_ms=NOW)
    assert readable(ctx(old, new), rec())
    assert [g.grant_id for g in applicable_grants(ctx(old, new))] == ["new"]


# -- purpose limitation ----------------------------------------------------------------------------


def test_grant_purposes_limit_the_requested_purpose() -> None:
    g = grant(purposes=("support",))
    assert readable(ctx(g, purpose="support"), rec())
    assert not readable(ctx(g, purpose="marketing"), rec())
    assert readable(ctx(grant(purposes=()), purpose="marketing"), rec())
    assert readable(ctx(grant(purposes=("*",)), purpose="marketing"), rec())


def test_record_purpose_tags_bind_every_reader_the_owner_included() -> None:
    tagged = rec(purposes=("personalization", "billing"))
    assert readable(ctx(principal="user:alice", purpose="billing"), tagged)
    assert not readable(ctx(principal="user:alice", purpose="support"), tagged)
    assert not readable(ctx(grant(), purpose="support"), tagged)
    assert readable(ctx(grant(), purpose="personalization"), tagged)


def test_untagged_record_and_star_tag_mean_any_purpose() -> None:
    for r in (rec(purposes=()), rec(purposes=("*",))):
        assert readable(ctx(principal="user:alice", purpose="anything"), r)
        assert readable(ctx(grant(), purpose="anything"), r)


def test_payload_convention_marks_untagged_records_with_star() -> None:
    assert payload_of(rec())["purposes"] == ["*"]
    assert payload_of(rec(purposes=("a", "b")))["purposes"] == ["a", "b"]
    assert payload_of(rec(sensitivity="RESTRICTED"))["sensitivity"] == "RESTRICTED"


# -- what the grant covers: scope, subject, store kind, sensitivity --------------------------------


def test_scopes_are_exact_names_and_star_is_any() -> None:
    g = grant(scopes=("team-a", "team-c"))
    assert readable(ctx(g), rec(scope="team-c"))
    assert not readable(ctx(g), rec(scope="team-b"))
    assert not readable(ctx(g), rec(scope="team-a:sub"))
    assert readable(ctx(grant(scopes=("*",))), rec(scope="anything"))


def test_subjects_restrict_the_grant_when_given() -> None:
    g = grant(subjects=("user:alice",))
    assert readable(ctx(g), rec(subject="user:alice"))
    assert not readable(ctx(g), rec(subject="user:dan", owner="user:dan"))
    assert readable(ctx(grant(subjects=())), rec(subject="user:dan", owner="user:dan"))


@pytest.mark.parametrize("kind", list(StoreKind))
def test_store_kinds_restrict_the_grant_when_given(kind: StoreKind) -> None:
    g = grant(store_kinds=(StoreKind.PROFILE, StoreKind.EVENT))
    assert readable(ctx(g), rec(store_kind=kind)) is (kind in (StoreKind.PROFILE, StoreKind.EVENT))
    assert readable(ctx(grant()), rec(store_kind=kind))


@pytest.mark.parametrize("ceiling", LEVELS)
@pytest.mark.parametrize("level", LEVELS)
def test_sensitivity_ceiling_is_inclusive(ceiling: Sensitivity, level: Sensitivity) -> None:
    c = ctx(grant(sensitivity_ceiling=ceiling))
    assert readable(c, rec(sensitivity=level)) is (LEVELS.index(level) <= LEVELS.index(ceiling))


def test_default_ceiling_is_internal_and_own_records_have_no_ceiling() -> None:
    assert not readable(ctx(grant()), rec(sensitivity=Sensitivity.CONFIDENTIAL))
    assert readable(ctx(principal="user:alice"), rec(sensitivity=Sensitivity.RESTRICTED))


def test_grants_add_up_but_each_is_applied_whole() -> None:
    narrow_scope = grant(grant_id="a", scopes=("team-b",), sensitivity_ceiling=Sensitivity.RESTRICTED)
    narrow_level = grant(grant_id="b", scopes=("team-a",), sensitivity_ceiling=Sensitivity.PUBLIC)
    c = ctx(narrow_scope, narrow_level)
    assert readable(c, rec(scope="team-b", sensitivity=Sensitivity.RESTRICTED))
    assert readable(c, rec(scope="team-a", sensitivity=Sensitivity.PUBLIC))
    assert not readable(c, rec(scope="team-a", sensitivity=Sensitivity.RESTRICTED))


# -- applicable_grants and may_write ---------------------------------------------------------------


def test_applicable_grants_keeps_order_and_filters_by_right_grantee_time_and_purpose() -> None:
    gs = [grant(grant_id="w", rights=frozenset({Right.WRITE})), grant(grant_id="r1"),
          grant(grant_id="other", grantee="user:zed"), grant(grant_id="late", valid_from_ms=NOW + 1),
          grant(grant_id="purp", purposes=("billing",)), grant(grant_id="r2", grantee="role:ops")]
    c = ctx(*gs, roles=frozenset({"ops"}))
    assert [g.grant_id for g in applicable_grants(c)] == ["r1", "r2"]
    assert [g.grant_id for g in applicable_grants(c, Right.WRITE)] == ["w"]
    assert [g.grant_id for g in applicable_grants(c, "WRITE")] == ["w"]
    with pytest.raises(ValueError, match="right"):
        applicable_grants(c, "DELETE")


def test_may_write_returns_the_first_covering_write_grant() -> None:
    w1 = grant(grant_id="w1", rights=frozenset({Right.WRITE}), scopes=("team-b",))
    w2 = grant(grant_id="w2", rights=frozenset({Right.WRITE, Right.READ}), subjects=("user:alice",),
               store_kinds=(StoreKind.EXPERIENCE,))
    w3 = grant(grant_id="w3", grantee="role:ops", rights=frozenset({Right.WRITE}), scopes=("*",))
    args = dict(now_ms=NOW, subject="user:alice", scope="team-a", store_kind=StoreKind.EXPERIENCE)
    assert may_write("user:bob", frozenset(), grants=(w1, w2), **args) is w2
    assert may_write("user:bob", frozenset(), grants=(w1,), **args) is None
    assert may_write("user:bob", frozenset({"ops"}), grants=(w1, w3, w2), **args) is w3
    assert may_write("user:bob", frozenset(), grants=(w2,), **{**args, "store_kind": StoreKind.PROFILE}) is None
    assert may_write("user:bob", frozenset(), grants=(w2,), **{**args, "subject": "user:dan"}) is None


def test_may_write_needs_the_write_right_validity_and_ceiling() -> None:
    args = dict(now_ms=NOW, subject="user:alice", scope="team-a", store_kind=StoreKind.PROFILE)
    assert may_write("user:bob", frozenset(), grants=(grant(),), **args) is None
    w = grant(rights=frozenset({Right.WRITE}), valid_to_ms=NOW)
    assert may_write("user:bob", frozenset(), grants=(w,), **args) is None
    w = grant(rights=frozenset({Right.WRITE}), revoked_at_ms=NOW)
    assert may_write("user:bob", frozenset(), grants=(w,), **args) is None
    w = grant(rights=frozenset({Right.WRITE}), sensitivity_ceiling=Sensitivity.INTERNAL)
    assert may_write("user:bob", frozenset(), grants=(w,), sensitivity=Sensitivity.INTERNAL, **args) is w
    assert may_write("user:bob", frozenset(), grants=(w,), sensitivity=Sensitivity.CONFIDENTIAL, **args) is None
    assert may_write("user:bob", frozenset(), grants=(w,), **args) is w


def test_purposes_do_not_restrict_writes() -> None:
    w = grant(rights=frozenset({Right.WRITE}), purposes=("billing",))
    assert may_write("user:bob", frozenset(), NOW, (w,), "user:alice", "team-a", StoreKind.PROFILE) is w


# -- validation ------------------------------------------------------------------------------------


@pytest.mark.parametrize("over, field", [
    ({"scopes": ()}, "scopes"),
    ({"scopes": "team-a"}, "scopes"),
    ({"scopes": ("",)}, "scopes[0]"),
    ({"rights": frozenset()}, "rights"),
    ({"rights": frozenset({"DELETE"})}, "rights[0]"),
    ({"rights": "READ"}, "rights"),
    ({"grant_id": ""}, "grant_id"),
    ({"grantee": " "}, "grantee"),
    ({"grantee": "role:"}, "grantee"),
    ({"store_kinds": ("ARCHIVE",)}, "store_kinds[0]"),
    ({"sensitivity_ceiling": "SECRET"}, "sensitivity_ceiling"),
    ({"valid_from_ms": 10, "valid_to_ms": 10}, "valid_to_ms"),
    ({"valid_from_ms": 1.5}, "valid_from_ms"),
    ({"revoked_at_ms": True}, "revoked_at_ms"),
    ({"subjects": ("user:a", "")}, "subjects[1]"),
])
def test_malformed_grant_raises_value_error_naming_the_field(over: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError) as err:
        grant(**over)
    assert isinstance(err.value, ValidationError) and err.value.field == field


def test_grant_accepts_strings_and_lists_and_normalises_them() -> None:
    g = grant(rights=["READ", "WRITE"], scopes=["team-a"], store_kinds=["EVENT"], sensitivity_ceiling="PUBLIC")
    assert g.rights == frozenset({Right.READ, Right.WRITE}) and g.scopes == ("team-a",)
    assert g.store_kinds == (StoreKind.EVENT,) and g.sensitivity_ceiling is Sensitivity.PUBLIC
    assert hash(g) == hash(grant(rights=["WRITE", "READ"], scopes=["team-a"], store_kinds=["EVENT"],
                                 sensitivity_ceiling="PUBLIC"))


@pytest.mark.parametrize("kwargs, field", [
    ({"principal": ""}, "principal"),
    ({"principal": "role:admin"}, "principal"),
    ({"roles": frozenset({"role:admin"})}, "roles[0]"),
    ({"roles": "admin"}, "roles"),
    ({"purpose": ""}, "purpose"),
    ({"purpose": "*"}, "purpose"),
    ({"now_ms": 1.0}, "now_ms"),
])
def test_malformed_read_context_raises_naming_the_field(kwargs: dict[str, Any], field: str) -> None:
    base: dict[str, Any] = {"principal": "user:bob", "roles": frozenset(), "purpose": "support", "now_ms": NOW,
                            "grants": ()}
    with pytest.raises(ValidationError) as err:
        ReadContext(**{**base, **kwargs})
    assert err.value.field == field


def test_read_context_rejects_non_grants() -> None:
    with pytest.raises(ValidationError, match=r"grants\[0\]"):
        ReadContext("user:bob", frozenset(), "support", NOW, ({"grant_id": "g"},))  # type: ignore[arg-type]


@pytest.mark.parametrize("over, field", [
    ({"owner": ""}, "owner"), ({"subject": ""}, "subject"), ({"scope": ""}, "scope"),
    ({"store_kind": "X"}, "store_kind"), ({"sensitivity": "TOP"}, "sensitivity"), ({"purposes": "a"}, "purposes"),
])
def test_malformed_record_attrs_raise_naming_the_field(over: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        rec(**over)
    assert err.value.field == field


# -- the filter and SQL forms ----------------------------------------------------------------------


def test_filter_has_purpose_in_must_and_one_way_in_per_applicable_grant() -> None:
    g = grant(scopes=("team-a",), subjects=("user:alice",), store_kinds=(StoreKind.EVENT,),
              sensitivity_ceiling=Sensitivity.CONFIDENTIAL)
    dup = grant(grant_id="dup", scopes=("team-a",), subjects=("user:alice",), store_kinds=(StoreKind.EVENT,),
                sensitivity_ceiling=Sensitivity.CONFIDENTIAL)
    f = read_permission_filter(ctx(g, dup, grant(grant_id="gone", revoked_at_ms=1)))
    assert f.must == (FieldIn("purposes", ("*", "support")),)
    assert f.should == (
        FieldIn("owner", ("user:bob",)), FieldIn("subject", ("user:bob",)),
        Filter(must=(FieldIn("scope", ("team-a",)), FieldIn("subject", ("user:alice",)),
                     FieldIn("store_kind", ("EVENT",)),
                     FieldIn("sensitivity", ("PUBLIC", "INTERNAL", "CONFIDENTIAL")))),
    )


def test_wildcard_grant_still_carries_its_sensitivity_condition() -> None:
    f = read_permission_filter(ctx(grant(scopes=("*",), sensitivity_ceiling=Sensitivity.RESTRICTED)))
    assert f.should[2] == Filter(must=(FieldIn("sensitivity", tuple(s.value for s in LEVELS)),))


def test_sql_predicate_names_its_parameters_and_qualifies_columns() -> None:
    g = grant(scopes=("team-a", "team-b"), store_kinds=(StoreKind.PROFILE,))
    sql, params = read_permission_sql(ctx(g), alias="mv")
    assert sql.startswith("(") and sql.endswith(")")
    assert "mv.principal = %(acl_principal)s" in sql and "mv.subject = %(acl_principal)s" in sql
    assert "mv.scope = ANY(%(acl_g0_scope)s::text[])" in sql
    assert params["acl_g0_scope"] == ["team-a", "team-b"] and params["acl_g0_store_kind"] == ["PROFILE"]
    assert params["acl_g0_sensitivity"] == ["PUBLIC", "INTERNAL"] and params["acl_purpose"] == "support"
    assert all(f"%({k})s" in sql for k in params)
    sql2, params2 = read_permission_sql(ctx(g), param_prefix="p_")
    assert "mv." not in sql2 and set(params2) == {k.replace("acl_", "p_", 1) for k in params}


@pytest.mark.parametrize("kwargs, field", [({"alias": "mv; DROP"}, "alias"), ({"param_prefix": "a-b"}, "param_prefix")])
def test_sql_rejects_unsafe_identifiers(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        read_permission_sql(ctx(), **kwargs)
    assert err.value.field == field


# -- the reference evaluator -----------------------------------------------------------------------


def test_evaluate_follows_engine_semantics() -> None:
    p = {"owner": "u", "purposes": ["a", "b"], "valid_from_ms": 100, "n": None}
    assert evaluate(Filter(), p)
    assert evaluate(Filter(must=(FieldIn("purposes", ("b",)),)), p)
    assert not evaluate(Filter(must=(FieldIn("owner", ()),)), p)
    assert not evaluate(Filter(must=(FieldIn("missing", ("u",)),)), p)
    assert not evaluate(Filter(must=(FieldIn("n", ("u",)),)), p)
    assert evaluate(Filter(must_not=(FieldIn("missing", ("u",)),)), p)
    assert not evaluate(Filter(must_not=(FieldIn("owner", ("u",)),)), p)
    assert evaluate(Filter(should=(FieldIn("owner", ("x",)), FieldIn("owner", ("u",)))), p)
    assert not evaluate(Filter(should=(FieldIn("owner", ("x",)),)), p)
    assert evaluate(Filter(must=(FieldRange("valid_from_ms", gte=100, lt=101),)), p)
    assert not evaluate(Filter(must=(FieldRange("valid_from_ms", gt=100),)), p)
    assert not evaluate(Filter(must=(FieldRange("owner", gte=0),)), p)
    assert not evaluate(Filter(must=(FieldIn("valid_from_ms", ("100",)),)), p)
    assert evaluate(Filter(must=(FieldIn("valid_from_ms", (100,)),)), p)
    nested = Filter(must=(Filter(should=(Filter(must=(FieldIn("owner", ("u",)), FieldIn("purposes", ("a",)))),)),))
    assert evaluate(nested, p)
    assert not evaluate(Filter(must_not=(nested,)), p)


def test_evaluate_rejects_unknown_entries() -> None:
    with pytest.raises(ValidationError):
        evaluate(Filter(must=("owner",)), {"owner": "u"})  # type: ignore[arg-type]


# -- property: the filter is the oracle ------------------------------------------------------------

PRINCIPALS = ["user:a", "user:b", "user:c"]
ROLES = ["r1", "r2"]
PURPOSES = ["p1", "p2"]
SCOPES = ["s1", "s2"]

grants_st = st.builds(
    Grant,
    grant_id=st.sampled_from(["g1", "g2", "g3"]),
    grantee=st.sampled_from(PRINCIPALS + [f"role:{r}" for r in ROLES]),
    rights=st.frozensets(st.sampled_from(list(Right)), min_size=1),
    scopes=st.lists(st.sampled_from(SCOPES + ["*"]), min_size=1, max_size=2).map(tuple),
    subjects=st.lists(st.sampled_from(PRINCIPALS + ["*"]), max_size=2).map(tuple),
    purposes=st.lists(st.sampled_from(PURPOSES + ["*"]), max_size=2).map(tuple),
    store_kinds=st.lists(st.sampled_from(list(StoreKind)), max_size=2).map(tuple),
    sensitivity_ceiling=st.sampled_from(LEVELS),
    valid_from_ms=st.integers(0, 10),
    valid_to_ms=st.one_of(st.none(), st.integers(11, 20)),
    revoked_at_ms=st.one_of(st.none(), st.integers(0, 20)),
)
contexts_st = st.builds(
    ReadContext,
    principal=st.sampled_from(PRINCIPALS),
    roles=st.frozensets(st.sampled_from(ROLES)),
    purpose=st.sampled_from(PURPOSES),
    now_ms=st.integers(0, 21),
    grants=st.lists(grants_st, max_size=4).map(tuple),
)
records_st = st.builds(
    RecordAttrs,
    owner=st.sampled_from(PRINCIPALS),
    subject=st.sampled_from(PRINCIPALS),
    scope=st.sampled_from(SCOPES),
    store_kind=st.sampled_from(list(StoreKind)),
    sensitivity=st.sampled_from(LEVELS),
    purposes=st.lists(st.sampled_from(PURPOSES + ["*"]), max_size=2).map(tuple),
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contexts_st, st.lists(records_st, min_size=1, max_size=8))
def test_property_filter_equals_oracle(c: ReadContext, records: list[RecordAttrs]) -> None:
    f = read_permission_filter(c)
    for r in records:
        assert evaluate(f, payload_of(r)) == may_read(c, r)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contexts_st, st.lists(records_st, min_size=1, max_size=8), st.sampled_from(["trusted", "untrusted"]),
       st.booleans(), st.sampled_from(["active", "superseded", "forgotten", "quarantined"]))
def test_property_access_keys_equal_the_filter_tree(c: ReadContext, records: list[RecordAttrs], trust: str,
                                                    include_untrusted: bool, status: str) -> None:
    """The access keys admit a point exactly when the tree of permission, purpose, status and trust does
    (:mod:`memwarden.commands.readmodel.access_keys`), for every reader, record, trust class and status."""
    keys = reader_keys(c, include_untrusted)
    assert keys is not None and len(keys) == len(set(keys))
    tree = Filter(must=(read_permission_filter(c), FieldIn("status", ("active", "superseded")),
                        *(() if include_untrusted else (FieldIn("trust", ("trusted",)),))))
    for r in records:
        point = with_access_keys({**payload_of(r), "status": status, "trust": trust})
        assert evaluate(Filter(must=(FieldIn("acl", keys),)), point) == evaluate(tree, point)


def test_access_keys_cannot_be_joined_across_names_that_contain_separators() -> None:
    """Names holding the characters a joined string would use as separators never make two tuples meet."""
    a = with_access_keys({**payload_of(rec(owner="user:x", subject="user:x", scope="a|b")),
                          "status": "active", "trust": "trusted"})
    b = with_access_keys({**payload_of(rec(owner="user:x", subject="user:x", scope="a")),
                          "status": "active", "trust": "trusted"})
    assert not set(a["acl"]) & set(b["acl"]) - set(point_keys("user:x", "user:x", "zzz", "PROFILE", "INTERNAL",
                                                                 ["*"], "trusted"))
    reader = ctx(grant(scopes=("a",), subjects=("user:x|a",)))
    assert not keys_admit(reader, rec(owner="user:o", subject="user:x", scope="a|user:x"), "trusted")


def test_a_reader_needing_more_keys_than_the_cap_keeps_the_filter_tree() -> None:
    wide = grant(scopes=tuple(f"s{i}" for i in range(40)), subjects=tuple(f"user:{i}" for i in range(40)),
                 sensitivity_ceiling=Sensitivity.RESTRICTED)
    assert reader_keys(ctx(wide)) is None
    f = read_filter("user:bob", NOW_DT, NOW_DT, purpose="support", grants=(wide,))
    assert any(isinstance(e, Filter) and e.should for e in f.must)  # the tree: one sub-filter per grant
    assert reader_keys(ctx(grant())) is not None


@settings(max_examples=300, deadline=None)
@given(contexts_st, records_st, st.integers(0, 3))
def test_property_revoking_a_grant_never_widens_access(c: ReadContext, r: RecordAttrs, i: int) -> None:
    if not c.grants:
        return
    i %= len(c.grants)
    revoked = Grant(**{**c.grants[i].__dict__, "revoked_at_ms": c.now_ms})
    after = ReadContext(c.principal, c.roles, c.purpose, c.now_ms, c.grants[:i] + (revoked,) + c.grants[i + 1:])
    assert not may_read(after, r) or may_read(c, r)
    assert revoked not in applicable_grants(after)


@settings(max_examples=300, deadline=None)
@given(contexts_st, records_st, grants_st)
def test_property_adding_a_grant_never_narrows_access(c: ReadContext, r: RecordAttrs, g: Grant) -> None:
    more = ReadContext(c.principal, c.roles, c.purpose, c.now_ms, c.grants + (g,))
    assert may_read(more, r) or not may_read(c, r)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contexts_st, st.lists(records_st, min_size=1, max_size=8))
def test_property_citable_is_readable_for_some_purpose(c: ReadContext, records: list[RecordAttrs]) -> None:
    """What a derived write may cite (W7) is what :func:`may_read` lets its writer read for at least one purpose
    (every purpose any grant or record names, and one no one names)."""
    purposes = {p for g in c.grants for p in g.purposes} | {p for r in records for p in r.purposes} | {"other"}
    purposes.discard("*")
    for r in records:
        some = any(may_read(ReadContext(c.principal, c.roles, p, c.now_ms, c.grants), r) for p in purposes)
        assert may_read_for_a_purpose(c.principal, c.roles, c.now_ms, c.grants, r) == some


def test_may_write_never_lets_a_principal_named_like_a_role_borrow_the_role() -> None:
    w = grant(grantee="role:admin", rights=frozenset({Right.WRITE}), scopes=("*",))
    assert may_write("role:admin", (), NOW, (w,), "user:alice", "team-a", StoreKind.PROFILE) is None
    assert may_write("user:bob", ("admin",), NOW, [w], "user:alice", "team-a", "PROFILE") is w
    with pytest.raises(ValidationError, match="subject"):
        may_write("user:bob", (), NOW, (w,), "", "team-a", StoreKind.PROFILE)
    with pytest.raises(ValidationError, match=r"grants\[0\]"):
        may_write("user:bob", (), NOW, ({"grant_id": "x"},), "user:alice", "team-a", StoreKind.PROFILE)  # type: ignore[arg-type]
