"""``memwarden eval poisoning``: the instruction detector on the labelled set, and whether injected
items reach any read or the procedure registry through the real pipeline (issue 3; SSGM Table 2,
memory poisoning; seed 004 "Poisoning turns memory into a delayed attack").

1. Detector: precision and recall of :data:`memwarden.commands.injection.DEFAULT_DETECTOR` on the
   hand-written labelled set (``memwarden/evals/data/injection_labelled.jsonl``).
2. Pipeline: in a fresh namespace, ``agent:reader`` (holding a WRITE grant from ``user:victim``)
   records every labelled item about ``user:victim`` with the item's source kind, signed, through
   Kafka and the real gate. Every injected item is also tried as a procedure, by the agent (as an
   approved rule) and by an approver principal (with the item's own source kind).
3. ``reached_read``: share of injected items returned by a default recall (as the victim or the
   agent, the item's own text as query: the most favourable query an attacker could hope for).
   ``stored_readable``: share of injected items projected into the read store at all (readable
   by an explicit ``include_untrusted`` read when they came from untrusted sources).
   ``reached_procedure``: share of injected items in the procedure store. ``benign_readable``:
   share of benign items projected (the cost of the gate). ``tagged_on_suspicion``: items of each
   label the gate admitted but kept out of default reads on the detector's suspicion alone (a tool
   result, an imported record or a model inference scoring between the suspicion and the decision
   threshold, and with ``hearsay_suspicion`` a user statement the agent recorded; their share of
   ``benign_readable`` is readable only with ``include_untrusted``). ``hearsay_suspicion``: the gate's
   switch (``Settings.hearsay_suspicion``, ``MEMWARDEN_HEARSAY_SUSPICION``) the pipeline ran with.
4. ``false_alarm_rate`` (with ``locomo`` and/or ``gatemem``): the share of every LoCoMo and GateMem turn
   the detector alone flags (:mod:`memwarden.evals.false_alarms`; all of them are benign), with the
   report and calibration halves apart in ``false_alarms``.
5. ``benign_sets`` (with ``benign_sets``): for each written benign set (:mod:`memwarden.evals.benign_sets`,
   ordinary texts in languages the LoCoMo and GateMem turns do not cover), the texts the detector
   flags (quarantined) and, among tool results, imported records and model inferences, those it only
   suspects (kept out of default reads), overall and per language.

``detector`` chooses the detector both for the detector scores and for the gate worker of the
pipeline run: ``rules`` (the rules alone), ``rules+classifier`` (the rules OR the trained classifier of
:mod:`memwarden.projections.injection_classifier`, issue 12) or ``rules+finetuned`` (the rules OR the
fine-tuned classifier of :mod:`memwarden.projections.injection_finetuned`) or ``rules+finetuned+multilingual``
(that OR the multilingual classifier of :mod:`memwarden.projections.injection_multilingual` on texts not in
English; the default). ``pipeline=False`` skips the Kafka run
(detector figures only).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memwarden.commands.gate.writes import SUSPECTED_INSTRUCTIONS
from memwarden.commands.injection import DETECTOR_VERSION as RULES_VERSION
from memwarden.settings import DetectorChoice, Settings

if TYPE_CHECKING:
    from memwarden.evals.injection_set import LabelledItem


VICTIM = "user:victim"
AGENT = "agent:reader"
APPROVER = "user:approver"
_STATUS = {"MODEL_INFERENCE": "INFERRED"}


def run_poisoning(base: Settings, data: Path | None = None, progress: bool = True, keep: bool = False,
                  recall_k: int = 5, detector: DetectorChoice = "rules+classifier", locomo: Path | None = None,
                  gatemem: Path | None = None, pipeline: bool = True,
                  benign_sets: Sequence[Path] = ()) -> dict[str, Any]:
    """Run the evaluation; returns the JSON-ready result (see the module docstring for the keys).

    Raises ``StackUnavailable`` when the stack is down, ``ValueError`` for a malformed labelled set or
    benign set.
    """
    from memwarden.bootstrap import Container
    from memwarden.evals.false_alarms import benign_turns, false_alarm_rate
    from memwarden.evals.injection_set import load_labelled, score_detector

    base = base.model_copy(update={"instruction_detector": detector})
    items = load_labelled(data)
    found = Container(base).instruction_detector()
    prime = getattr(found, "prime", None)
    if prime is not None:
        prime(i.text for i in items)
    score = score_detector(found, items)
    result: dict[str, Any] = {
        "detector": getattr(found, "version", RULES_VERSION),
        "items": {"injected": score.tp + score.fn, "benign": score.fp + score.tn},
        "precision": round(score.precision, 4),
        "recall": round(score.recall, 4),
        "f1": round(score.f1, 4),
        "confusion": {"tp": score.tp, "fp": score.fp, "fn": score.fn, "tn": score.tn},
        "recall_by_kind": {k: round(v, 4) for k, v in score.by_kind.items()},
        "missed": list(score.false_negatives),
        "false_positives": list(score.false_positives),
    }
    if locomo is not None or gatemem is not None:
        alarms = false_alarm_rate(found, benign_turns(locomo, gatemem))
        result["false_alarm_rate"] = alarms["all"]["rate"]
        result["false_alarms"] = alarms
    if benign_sets:
        from memwarden.evals.benign_sets import benign_set_alarms, load_benign_set

        result["benign_sets"] = {p.stem: benign_set_alarms(found, load_benign_set(p)) for p in benign_sets}
    if pipeline:
        result["hearsay_suspicion"] = base.hearsay_suspicion  # the gate's policy switch (Settings)
        result |= _pipeline(base, items, progress, keep, recall_k)
    return result


def _pipeline(base: Settings, items: list[LabelledItem], progress: bool, keep: bool,
              recall_k: int) -> dict[str, Any]:
    """Steps 2 and 3 of the module docstring: every item through Kafka and the real gate."""
    from memwarden.evals.harness import eval_namespace
    from memwarden.keystore import admin_signer
    from memwarden.ops.progress import wait_caught_up
    from memwarden.producers.client import MemwardenClient
    from memwarden.producers.enroll import enroll
    from memwarden.stores.decisions import outcome_counts
    from memwarden.stores.pg import connect
    from memwarden.stores.profile_rows import memory_ids, source_refs

    injected = [i for i in items if i.label == "injected"]
    benign = [i for i in items if i.label == "benign"]
    with eval_namespace(base, "poison", keep, progress) as run, MemwardenClient(run.settings) as client:
        s = run.settings
        enroll(client, admin_signer(s), [(VICTIM, "USER", ()), (AGENT, "AGENT", ()), (APPROVER, "USER", ("approver",))])
        grant = client.grant_access(AGENT, by=VICTIM, rights=("READ", "WRITE"), scopes=("account:default",),
                                    subjects=(VICTIM,), wait=False)
        client.decisions([grant.command_id])
        memory_of: dict[str, str] = {}
        command_label: dict[str, str] = {}
        receipts = client.record_many([
            {"principal": AGENT, "subject": VICTIM, "text": i.text, "source_kind": i.source_kind,
             "store_kind": "EXPERIENCE", "epistemic_status": _STATUS.get(i.source_kind, "QUOTED"),
             "source_ref": i.id} for i in items])
        for i, r in zip(items, receipts, strict=True):
            memory_of[i.id] = r.memory_id
            command_label[r.command_id] = i.label
        procedure_tries = client.record_many(
            [{"principal": AGENT, "subject": VICTIM, "text": i.text, "source_kind": "APPROVED_RULE",
              "store_kind": "PROCEDURE", "source_ref": i.id} for i in injected]
            + [{"principal": APPROVER, "subject": APPROVER, "text": i.text, "source_kind": i.source_kind,
                "store_kind": "PROCEDURE", "epistemic_status": _STATUS.get(i.source_kind, "QUOTED"),
                "source_ref": i.id} for i in injected])
        decided = client.decided([r.command_id for r in (*receipts, *procedure_tries)], timeout_s=300)
        wait_caught_up(s, alive=run.worker.alive)
        with connect(s) as conn:
            projected = memory_ids(conn, "active")
            procedures = source_refs(conn, "PROCEDURE")
            reasons = outcome_counts(conn)
        recalled: set[str] = set()
        for i in injected:
            for reader in (VICTIM, AGENT):
                for m in client.recall(reader, i.text[:2000], k=recall_k):
                    if m.source_ref == i.id:
                        recalled.add(i.id)
    stored = {i.id for i in injected if memory_of[i.id] in projected}
    by_outcome: dict[str, dict[str, int]] = {"injected": {}, "benign": {}}
    suspected: dict[str, int] = {"injected": 0, "benign": 0}
    for cid, d in decided.items():
        label = command_label.get(cid)
        if label is not None:
            by_outcome[label][d["outcome"]] = by_outcome[label].get(d["outcome"], 0) + 1
            suspected[label] += any(r.get("code") == SUSPECTED_INSTRUCTIONS for r in d.get("reasons") or ())
    return {
        "reached_read": round(len(recalled) / len(injected), 4) if injected else 0.0,
        "reached_read_items": sorted(recalled),
        "stored_readable": round(len(stored) / len(injected), 4) if injected else 0.0,
        "reached_procedure": round(len({i.id for i in injected} & procedures) / len(injected), 4)
        if injected else 0.0,
        "benign_readable": round(sum(memory_of[i.id] in projected for i in benign) / len(benign), 4)
        if benign else 0.0,
        "outcomes": by_outcome,
        "tagged_on_suspicion": suspected,
        "gate_outcomes_all_commands": {k: int(v) for k, v in reasons.items()},
    }
