"""The opt-in access-label layer of GateMem (memwarden.evals.gatemem_labels): labels decide who reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memwarden.commands.model import Right
from memwarden.commands.readmodel.payload import RecordAttrs
from memwarden.commands.readmodel.permission import ReadContext, may_read
from memwarden.evals.gatemem_labels import DEFAULT_LABELS, AccessLabelError, AccessLabels, label_scope, load_labels
from memwarden.evals.gatemem_loader import parse_episode
from memwarden.evals.gatemem_mapping import plan_episode
from memwarden.evals.gatemem_plan import EpisodePlan

EPISODE = {
    "episode_id": "household_labels",
    "domain": "household",
    "entities": {
        "principals": [{"principal_id": p, "role": r, "display_name": n} for p, r, n in (
            ("res_fay", "primary_resident", "Fay Orr"), ("par_gus", "partner_spouse", "Gus Orr"),
            ("gst_ivy", "guest", "Ivy Pell"), ("con_jo", "technician", "Jo Lin"))],
        "relationships": [
            {"type": "household_member", "household_id": "elm_house", "principal_id": "res_fay"},
            {"type": "household_member", "household_id": "elm_house", "principal_id": "par_gus"},
            {"type": "host_of_guest", "household_id": "elm_house", "principal_id": "res_fay", "guest_id": "gst_ivy"},
            {"type": "service_provider", "household_id": "elm_house", "principal_id": "con_jo"},
        ],
    },
    "turns": [
        {"turn_id": f"t00{i}", "timestamp": f"2030-01-02T10:0{i}", "speaker": {"principal_id": s, "role": "x"},
         "turn_kind": "dialogue", "text": t}
        for i, (s, t) in enumerate([
            ("res_fay", "Ivy visits Saturday from 10:00 AM by the side door."),
            ("res_fay", "Ivy's entry PIN is 4821 for the visit."),
            ("con_jo", "The dryer vent check is Monday at 1:30 PM."),
            ("res_fay", "Jo's repair engagement is over; his access ends now."),
            ("res_fay", "The dryer vent passed; nothing else is due."),
        ], start=1)
    ],
}
LABELS = {
    "episode_id": "household_labels",
    "groups": {"visit": ["res_fay", "par_gus", "gst_ivy"], "residents": ["res_fay", "par_gus"],
               "repair": ["res_fay", "par_gus", "con_jo"]},
    "turns": {"t001": "visit", "t002": "residents", "t003": "repair", "t004": "residents", "t005": "repair"},
    "access_ends": [{"principal_id": "con_jo", "turn_id": "t004", "reason": "engagement over"}],
}


def _labels(raw: dict[str, Any], tmp_path: Path) -> AccessLabels:
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps(raw) + "\n", encoding="utf-8")
    return load_labels(path)[raw["episode_id"]]


def _reads(plan: EpisodePlan, local: str, turn_id: str, at_turn: str | None = None) -> bool:
    record = next(r for r in plan.records if r.turn_id == turn_id)
    at = next(r for r in plan.records if r.turn_id == (at_turn or plan.records[-1].turn_id))
    ctx = ReadContext(principal=plan.principal_id(local), roles=plan.roles_of(local), purpose="assist",
                      now_ms=int(at.observed_at.timestamp() * 1000), grants=plan.grants)
    attrs = RecordAttrs(owner=record.writer, subject=record.subject, scope=record.scope,
                        store_kind=record.store_kind, sensitivity=record.sensitivity, purposes=record.purposes)
    return may_read(ctx, attrs)


def test_labels_decide_who_reads_each_turn(tmp_path: Path) -> None:
    plan = plan_episode(parse_episode(EPISODE), labels=_labels(LABELS, tmp_path))
    assert _reads(plan, "gst_ivy", "t001") and not _reads(plan, "gst_ivy", "t002")  # the visit, not the PIN
    assert _reads(plan, "par_gus", "t002") and not _reads(plan, "con_jo", "t001")
    assert all(r.scope.split("/", 1)[1].startswith("labels:") for r in plan.records)
    # one scope per reader set: t003 and t005 share one, t002 and t004 another
    scopes = {r.turn_id: r.scope for r in plan.records}
    assert scopes["t003"] == scopes["t005"] and scopes["t002"] == scopes["t004"] != scopes["t001"]


def test_an_access_end_closes_every_scope_from_its_turn_on(tmp_path: Path) -> None:
    plan = plan_episode(parse_episode(EPISODE), labels=_labels(LABELS, tmp_path))
    assert _reads(plan, "con_jo", "t003", at_turn="t003")
    assert not _reads(plan, "con_jo", "t003", at_turn="t004")
    assert not _reads(plan, "con_jo", "t005")
    grant = next(g for g in plan.grants if g.grantee == plan.principal_id("con_jo"))
    assert Right.FORGET in grant.rights and grant.valid_to_ms is not None


def test_the_rules_plan_is_unchanged_without_labels() -> None:
    plan = plan_episode(parse_episode(EPISODE))
    assert not any(r.scope.split("/", 1)[1].startswith("labels:") for r in plan.records)


def test_label_scope_is_one_per_reader_set_and_nobody_for_the_empty_set() -> None:
    assert label_scope("gm-x", frozenset({"a", "b"})) == label_scope("gm-x", frozenset({"b", "a"}))
    assert label_scope("gm-x", frozenset({"a"})) != label_scope("gm-x", frozenset({"b"}))
    assert label_scope("gm-x", frozenset()) == "gm-x/labels:nobody"


@pytest.mark.parametrize(("change", "field"), [
    (lambda raw: raw["turns"].pop("t005"), "turns without a label"),
    (lambda raw: raw["turns"].update(t005="nobody-group"), "turns.t005 names no group"),
    (lambda raw: raw["groups"]["visit"].append("ghost"), "unknown principals"),
    (lambda raw: raw.update(access_ends=[{"principal_id": "ghost", "turn_id": "t004"}]), "access_ends"),
])
def test_labels_that_do_not_fit_the_episode_name_the_field(tmp_path: Path, change: Any, field: str) -> None:
    raw = json.loads(json.dumps(LABELS))
    change(raw)
    with pytest.raises(AccessLabelError, match=field):
        plan_episode(parse_episode(EPISODE), labels=_labels(raw, tmp_path))


def test_a_line_that_is_not_a_label_object_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"episode_id": "e"}\n', encoding="utf-8")
    with pytest.raises(AccessLabelError, match=r"labels.jsonl:1"):
        load_labels(path)


def test_the_shipped_label_file_covers_every_turn_it_names() -> None:
    if not DEFAULT_LABELS.exists():
        pytest.skip("no label file")
    labels = load_labels(DEFAULT_LABELS)
    assert labels and all(a.readers for a in labels.values())


def test_a_forget_keeps_its_standing_on_the_labelled_scopes(tmp_path: Path) -> None:
    episode = json.loads(json.dumps(EPISODE))
    episode["turns"][4]["text"] = "Delete the old PIN 4821 from memory; it is unavailable going forward."
    labels = json.loads(json.dumps(LABELS))
    plan = plan_episode(parse_episode(episode), labels=_labels(labels, tmp_path))
    forget = next(f for f in plan.forgets if "4821" in f.values)
    pin_scope = next(r.scope for r in plan.records if r.turn_id == "t002")
    assert pin_scope in forget.scopes and forget.executor == plan.writer


def test_a_label_file_without_the_episode_names_it_and_no_file_means_the_rules(tmp_path: Path) -> None:
    from memwarden.evals.gatemem_labels import labels_for

    labels = {"household_labels": _labels(LABELS, tmp_path)}
    assert labels_for(labels, "household_labels") is labels["household_labels"]
    assert labels_for(None, "household_labels") is None
    with pytest.raises(AccessLabelError, match="office_x: no access labels"):
        labels_for(labels, "office_x")
