"""The pure parts of selective repair (:mod:`memwarden.repair`): what a repair target means, that an
empty one is refused, that quarantine is refused with its reason, and how affected reads are found in
audit records. The end-to-end paths are in ``tests/integration/test_repair.py``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memwarden.commands.gate.forgetting import selects
from memwarden.commands.gate.state import MemoryState
from memwarden.errors import ValidationError
from memwarden.repair import NO_QUARANTINE, AffectedRead, RepairReport, RepairTarget, check_action, reads_returning

T0 = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)


def _memory(memory_id: str, **kw: object) -> MemoryState:
    return MemoryState(memory_id, "user:ana", "service:importer", 1, **kw)  # type: ignore[arg-type]


def test_an_empty_target_is_refused_never_everything() -> None:
    with pytest.raises(ValidationError) as caught:
        RepairTarget()
    assert caught.value.field == "target" and "never means everything" in caught.value.reason
    with pytest.raises(ValidationError) as window_only:
        RepairTarget(admitted_from=T0)
    assert window_only.value.field == "target"


@pytest.mark.parametrize(("kw", "field"), [
    ({"source_refs": (" ",)}, "source_refs"),
    ({"key_ids": "k1"}, "key_ids"),
    ({"principals": ("agent:x",), "admitted_from": datetime(2026, 7, 1)}, "admitted_from"),
    ({"principals": ("agent:x",), "admitted_from": T0, "admitted_to": T0}, "admitted_to"),
])
def test_bad_targets_name_their_field(kw: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        RepairTarget(**kw)  # type: ignore[arg-type]
    assert caught.value.field == field


def test_the_target_becomes_the_gate_selector() -> None:
    east = datetime(2026, 7, 1, 11, 0, tzinfo=timezone(timedelta(hours=2)))
    target = RepairTarget(source_refs=("feed-7", "feed-7"), principals=("agent:x",), admitted_from=east)
    sel = target.selector()
    assert sel.source_references == ("feed-7",) and sel.writers == ("agent:x",) and sel.key_ids == ()
    assert sel.admitted_from == datetime(2026, 7, 1, 9, 0, tzinfo=UTC) and sel.admitted_to is None
    assert target.describe() == "source_ref=feed-7 principal=agent:x admitted=[2026-07-01T09:00:00+00:00, -)"
    assert target.to_json()["admitted_from"] == "2026-07-01T09:00:00+00:00"
    observed = int(T0.timestamp() * 1000) + 1
    root = _memory("a", sources=("feed-7",), writers=("agent:x",), admitted_ms=observed)
    child = _memory("b", sources=("summaries",), writers=("agent:y",), admitted_ms=observed, derived_from=("a",))
    early = _memory("c", sources=("feed-7",), writers=("agent:x",), admitted_ms=observed - 3_600_000)
    assert [selects(sel, m) for m in (root, child, early)] == [True, False, False]  # child: through lineage only


def test_quarantine_is_refused_with_its_reason() -> None:
    assert check_action("forget") == "forget"
    with pytest.raises(ValidationError) as caught:
        check_action("quarantine")
    assert caught.value.field == "action" and caught.value.reason == NO_QUARANTINE
    with pytest.raises(ValidationError):
        check_action("delete-everything")


def test_affected_reads_are_the_audited_reads_that_returned_a_repaired_id() -> None:
    def read(rid: str, who: str, returned: list[str], minutes: int) -> dict[str, object]:
        return {"read_id": rid, "principal": who, "purpose": "general", "returned": returned,
                "read_at": T0 + timedelta(minutes=minutes)}

    records = [("audit:1:4", read("r2", "agent:a", ["x", "b", "y", "a"], 2)),
               ("audit:0:7", read("r1", "user:ana", ["a"], 1)),
               ("audit:2:0", read("r3", "agent:p", ["x", "y"], 3))]
    found = reads_returning(records, {"a", "b"})
    assert [(r.position, r.read_id, r.principal, r.memory_ids) for r in found] == [
        ("audit:0:7", "r1", "user:ana", ("a",)), ("audit:1:4", "r2", "agent:a", ("b", "a"))]
    assert found[0].read_at == "2026-07-01T09:01:00+00:00"
    assert reads_returning(records, set()) == []


def test_the_report_counts_affected_principals() -> None:
    report = RepairReport(RepairTarget(key_ids=("k1",)), False, "c", "commands:0:1", "ACCEPTED", [], ["a", "b"],
                          matched=["a"], derived=["b"], affected_reads=[
                              AffectedRead("audit:0:1", "r1", "agent:b", "general", "t1", ("a",)),
                              AffectedRead("audit:0:2", "r2", "agent:a", "general", "t2", ("a",)),
                              AffectedRead("audit:0:3", "r3", "agent:b", "general", "t3", ("b",))])
    assert report.affected_principals() == {"agent:b": 2, "agent:a": 1}
    out = report.to_json()
    assert out["action"] == "forget" and out["target"]["key_ids"] == ["k1"] and out["derived"] == ["b"]
    assert [r["position"] for r in out["affected_reads"]] == ["audit:0:1", "audit:0:2", "audit:0:3"]
    assert not report.refused
