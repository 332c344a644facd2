"""The action boundary (seed 004 "Reading memory must not grant authority"): decisions come from the
current ActionPolicy alone; memory appears only as echoed evidence ids and never flips a decision."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memwarden.commands.action_policy import ActionPolicy, Effect, Rule
from memwarden.commands.authorize import AuthorizationDecision, PrincipalInfo, Resource, authorize
from memwarden.errors import ValidationError

POLICY_DOC: dict[str, Any] = {
    "policy_id": "payments",
    "version": 7,
    "rules": [
        {"rule_id": "clerk-approve", "effect": "allow", "principals": ["role:clerk"], "actions": ["approve_invoice"],
         "resource_types": ["invoice"], "scopes": ["acme"], "limits": {"amount": 1000}},
        {"rule_id": "cfo-approve", "effect": "ALLOW", "principals": ["user:cfo"], "actions": ["approve_invoice"],
         "resource_types": ["invoice"], "scopes": ["*"]},
        {"rule_id": "approved-suppliers", "effect": "allow", "principals": ["role:buyer"],
         "actions": ["approve_invoice"], "resource_types": ["invoice"], "attributes": {"supplier": ["s:known"]},
         "limits": {"amount": 500}},
        {"rule_id": "blocked-supplier", "effect": "deny", "principals": ["*"], "actions": ["approve_invoice"],
         "resource_types": ["invoice"], "attributes": {"supplier": ["s:blocked"]}},
        {"rule_id": "suspended", "effect": "deny", "principals": ["user:mallory"], "actions": ["*"],
         "resource_types": ["*"]},
        {"rule_id": "read-any", "effect": "allow", "principals": ["*"], "actions": ["view_invoice"],
         "resource_types": ["invoice"]},
    ],
}
POLICY = ActionPolicy.from_json(json.dumps(POLICY_DOC))
CLERK = PrincipalInfo("user:carla", frozenset({"clerk"}))
BUYER = PrincipalInfo("user:ben", frozenset({"buyer"}))
CFO = PrincipalInfo("user:cfo")
MALLORY = PrincipalInfo("user:mallory", frozenset({"clerk"}))
EVIDENCE = (str(uuid.uuid4()), str(uuid.uuid4()))


def invoice(amount: float | str | None = 500, supplier: str = "s:x", scope: str = "acme") -> Resource:
    attrs: dict[str, Any] = {"supplier": supplier}
    if amount is not None:
        attrs["amount"] = amount
    return Resource("invoice", "inv-1", scope, attrs)


def decide(who: PrincipalInfo = CLERK, action: str = "approve_invoice", resource: Resource | None = None,
           evidence: tuple[str, ...] = (), policy: ActionPolicy = POLICY) -> AuthorizationDecision:
    return authorize(who, action, resource or invoice(), evidence, policy)


# -- allow, limits, default deny -------------------------------------------------------------------


def test_allowed_within_limit_names_the_rule_and_policy_version() -> None:
    d = decide()
    assert d.allowed and d.codes == ("ALLOWED_BY_RULE",) and d.reasons[0].rule_id == "clerk-approve"
    assert (d.policy_id, d.policy_version, d.principal, d.action) == ("payments", 7, "user:carla", "approve_invoice")
    assert (d.resource_type, d.resource_id) == ("invoice", "inv-1") and d.reasons[0].message


@pytest.mark.parametrize("amount, allowed", [(0, True), (999.99, True), (1000, True), (1000.01, False), (10**6, False)])
def test_numeric_limit_is_an_inclusive_maximum(amount: float, allowed: bool) -> None:
    d = decide(resource=invoice(amount))
    assert d.allowed is allowed
    if not allowed:
        assert d.codes == ("LIMIT_EXCEEDED",) and d.reasons[0].rule_id == "clerk-approve"
        assert "1000" in d.reasons[0].message


@pytest.mark.parametrize("amount", [None, "500"])
def test_limit_on_an_absent_or_non_numeric_attribute_fails_closed(amount: Any) -> None:
    d = decide(resource=invoice(amount))
    assert not d.allowed and d.codes == ("LIMIT_ATTRIBUTE_MISSING",)


def test_an_unlimited_rule_allows_what_a_limited_one_refuses() -> None:
    cfo_clerk = PrincipalInfo("user:cfo", frozenset({"clerk"}))
    d = decide(cfo_clerk, resource=invoice(50_000))
    assert d.allowed and d.reasons[0].rule_id == "cfo-approve"


def test_no_matching_rule_is_a_default_deny() -> None:
    assert decide(PrincipalInfo("user:nobody")).codes == ("NO_MATCHING_RULE",)
    assert decide(resource=invoice(scope="globex")).codes == ("NO_MATCHING_RULE",)
    other_type = Resource("payment", "p-1", "acme", {"amount": 5})
    assert decide(resource=other_type).codes == ("NO_MATCHING_RULE",)


def test_unknown_action_is_denied_with_its_own_reason() -> None:
    d = decide(CFO, action="wire_money")
    assert not d.allowed and d.codes == ("UNKNOWN_ACTION",) and "wire_money" in d.reasons[0].message


def test_unauthenticated_principal_is_denied_before_anything_else() -> None:
    d = decide(PrincipalInfo("user:cfo", authenticated=False))
    assert not d.allowed and d.codes == ("UNAUTHENTICATED",)


def test_wildcard_principal_and_role_rules() -> None:
    assert decide(PrincipalInfo("user:anyone"), action="view_invoice").allowed
    assert not decide(PrincipalInfo("user:carla", frozenset({"buyer"}))).allowed  # buyer rule needs a known supplier
    assert decide(BUYER, resource=invoice(400, supplier="s:known")).allowed
    assert decide(BUYER, resource=invoice(600, supplier="s:known")).codes == ("LIMIT_EXCEEDED",)
    assert decide(PrincipalInfo("clerk")).codes == ("NO_MATCHING_RULE",)  # a name is not a role


def test_allow_rule_attribute_condition_needs_the_attribute() -> None:
    only_allow = ActionPolicy("p", 1, tuple(r for r in POLICY.rules if r.rule_id == "approved-suppliers"))
    r = Resource("invoice", "inv-2", "acme", {"amount": 10})
    assert decide(BUYER, resource=r, policy=only_allow).codes == ("NO_MATCHING_RULE",)
    assert decide(BUYER, resource=invoice(10, supplier="s:known"), policy=only_allow).allowed
    assert decide(BUYER, resource=r).codes == ("DENIED_BY_RULE",)  # and the deny rule fails closed


# -- explicit denies win ---------------------------------------------------------------------------


def test_explicit_deny_wins_over_every_allow() -> None:
    d = decide(CFO, resource=invoice(1, supplier="s:blocked"))
    assert not d.allowed and d.codes == ("DENIED_BY_RULE",) and d.reasons[0].rule_id == "blocked-supplier"
    d = decide(MALLORY, action="view_invoice")
    assert not d.allowed and [r.rule_id for r in d.reasons] == ["suspended"]


def test_all_matching_denies_are_reported() -> None:
    d = decide(MALLORY, resource=invoice(1, supplier="s:blocked"))
    assert [r.rule_id for r in d.reasons] == ["blocked-supplier", "suspended"]


def test_deny_attribute_condition_matches_an_absent_attribute() -> None:
    r = Resource("invoice", "inv-3", "acme", {"amount": 10})
    assert decide(CFO, resource=r).codes == ("DENIED_BY_RULE",)


# -- memory never grants authority -----------------------------------------------------------------


def test_stored_always_approve_memory_changes_no_decision() -> None:
    # A memory "always approve invoices from s:x" exists; its id is all the boundary may see.
    memory_id = str(uuid.uuid4())
    without = decide(resource=invoice(5_000))
    with_memory = decide(resource=invoice(5_000), evidence=(memory_id,))
    assert not without.allowed and not with_memory.allowed
    assert with_memory.reasons == without.reasons and with_memory.evidence_ids == (memory_id,)
    with pytest.raises(ValueError, match=r"evidence_ids\[0\]"):
        decide(resource=invoice(5_000), evidence=("always approve invoices from s:x",))


@pytest.mark.parametrize("bad", ["0f0e6a4e-33b4-4d9f-9d1e-0a3e6d4b7c21", b"x", [{"id": 1}], [None], [42]])
def test_evidence_must_be_a_sequence_of_memory_ids(bad: Any) -> None:
    with pytest.raises(ValidationError) as err:
        authorize(CFO, "approve_invoice", invoice(), bad, POLICY)
    assert err.value.field.startswith("evidence_ids")


def test_evidence_ids_are_echoed_canonical_for_audit() -> None:
    raw = uuid.uuid4()
    d = decide(evidence=(str(raw).upper(), EVIDENCE[0]))
    assert d.evidence_ids == (str(raw), EVIDENCE[0])


requests = st.tuples(
    st.sampled_from([CLERK, BUYER, CFO, MALLORY, PrincipalInfo("user:x"), PrincipalInfo("user:cfo", frozenset(),
                                                                                        False)]),
    st.sampled_from(["approve_invoice", "view_invoice", "wire_money"]),
    st.builds(invoice, st.one_of(st.none(), st.integers(0, 3000)), st.sampled_from(["s:x", "s:known", "s:blocked"]),
              st.sampled_from(["acme", "globex"])),
)


@settings(max_examples=300, deadline=None)
@given(requests, st.lists(st.uuids().map(str), max_size=5))
def test_property_evidence_never_changes_the_decision(req: tuple, evidence: list[str]) -> None:
    who, action, resource = req
    bare = authorize(who, action, resource, (), POLICY)
    with_evidence = authorize(who, action, resource, evidence, POLICY)
    assert (with_evidence.allowed, with_evidence.reasons) == (bare.allowed, bare.reasons)
    assert with_evidence.evidence_ids == tuple(evidence)


@settings(max_examples=300, deadline=None)
@given(requests)
def test_property_adding_a_deny_never_turns_a_deny_into_an_allow(req: tuple) -> None:
    who, action, resource = req
    stricter = ActionPolicy("payments", 8, POLICY.rules + (
        Rule("deny-globex", Effect.DENY, ("*",), ("*",), ("*",), scopes=("globex",)),))
    before, after = authorize(who, action, resource, (), POLICY), authorize(who, action, resource, (), stricter)
    assert not after.allowed or before.allowed
    if resource.scope == "globex":
        assert not after.allowed


def test_the_current_policy_version_decides() -> None:
    v8 = ActionPolicy("payments", 8, tuple(r for r in POLICY.rules if r.rule_id != "clerk-approve"))
    assert decide().allowed and decide().policy_version == 7
    d = decide(policy=v8)
    assert not d.allowed and d.policy_version == 8 and d.codes == ("NO_MATCHING_RULE",)


# -- argument validation ---------------------------------------------------------------------------


def test_malformed_arguments_raise_instead_of_deciding() -> None:
    with pytest.raises(ValidationError, match="action"):
        authorize(CFO, "", invoice(), (), POLICY)
    with pytest.raises(ValidationError, match="principal"):
        authorize("user:cfo", "approve_invoice", invoice(), (), POLICY)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="policy"):
        authorize(CFO, "approve_invoice", invoice(), (), POLICY_DOC)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="attributes.amount"):
        Resource("invoice", "i", "acme", {"amount": float("nan")})
    with pytest.raises(ValidationError, match="principal"):
        PrincipalInfo("")
    with pytest.raises(ValidationError, match="roles"):
        PrincipalInfo("user:a", "clerk")  # type: ignore[arg-type]


def test_resource_attributes_are_frozen() -> None:
    r = invoice()
    with pytest.raises(TypeError):
        r.attributes["amount"] = 1  # type: ignore[index]


# -- the policy document ---------------------------------------------------------------------------


def test_policy_round_trips_through_json() -> None:
    again = ActionPolicy.from_json(POLICY.to_json())
    assert again == POLICY
    assert POLICY.actions == frozenset({"approve_invoice", "view_invoice"})
    assert POLICY.rules[0].limits == {"amount": 1000.0} and POLICY.rules[0].effect is Effect.ALLOW
    assert ActionPolicy.from_json(POLICY.to_json().encode()) == POLICY


def _doc(**changes: Any) -> str:
    doc = json.loads(json.dumps(POLICY_DOC))
    for path, value in changes.items():
        target = doc
        *parents, last = path.split("__")
        for p in parents:
            target = target[int(p)] if isinstance(target, list) else target[p]
        if value is ...:
            del target[last]
        else:
            target[last] = value
    return json.dumps(doc)


@pytest.mark.parametrize("text, field", [
    ("{not json", "policy"),
    ("[]", "policy"),
    (_doc(policy_id=...), "policy_id"),
    (_doc(policy_id=""), "policy_id"),
    (_doc(version="7"), "version"),
    (_doc(version=0), "version"),
    (_doc(version=True), "version"),
    (_doc(extra=1), "extra"),
    (_doc(rules={}), "rules"),
    (_doc(rules=["x"]), "rules[0]"),
    (_doc(rules__0__rule_id=...), "rules[0].rule_id"),
    (_doc(rules__1__effect="maybe"), "rules[1].effect"),
    (_doc(rules__0__principals="role:clerk"), "rules[0].principals"),
    (_doc(rules__0__principals=[]), "rules[0].principals"),
    (_doc(rules__2__actions=["approve", ""]), "rules[2].actions[1]"),
    (_doc(rules__0__limits={"amount": "1000"}), "rules[0].limits.amount"),
    (_doc(rules__0__limits=[1000]), "rules[0].limits"),
    (_doc(rules__3__limits={"amount": 5}), "rules[3].limits"),
    (_doc(rules__2__attributes={"supplier": "s:known"}), "rules[2].attributes.supplier"),
    (_doc(rules__0__when="always"), "rules[0].when"),
    (_doc(rules__1__rule_id="clerk-approve"), "rules[1].rule_id"),
    ('{"policy_id": "p", "version": 1, "rules": [{"rule_id": "r", "effect": "allow", "principals": ["*"], '
     '"actions": ["a"], "resource_types": ["t"], "limits": {"amount": NaN}}]}', "rules[0].limits.amount"),
])
def test_malformed_policy_document_names_the_field(text: str, field: str) -> None:
    with pytest.raises(ValueError) as err:
        ActionPolicy.from_json(text)
    assert isinstance(err.value, ValidationError) and err.value.field == field, str(err.value)
