"""Scoring of the chaos evaluation (issue 13 part 4), pure: what the load saw, what the ledger holds and
what the probes answered, cut by fault window. No I/O; times are wall-clock seconds (``time.time()``).

Per fault (its :class:`Window`):

* ``lost`` — acknowledged writes whose ledger position holds nothing (the broker acknowledged and then
  lost them);
* ``duplicated`` — commands with more than one distinct gate decision;
* ``undecided_after_recovery`` — acknowledged commands on the ledger still without a decision once the
  run has recovered;
* ``unrecallable`` — memories the ledger's decisions leave live whose current text a recall does not
  find within a minute after every command was decided (the projector may still be catching up);
* ``down_s`` / ``restart_s`` — from the kill / the restart until the component answered again;
* ``recovery_s`` — from the restart to the first command decided after it (broker, PostgreSQL, gate);
  for the projector, whose loss stops reads and not decisions, to the first successful recall;
* ``health_false_ok_s`` — seconds a ``/ready`` of a worker that depends on the component answered
  ready while the component was down (a call sent after the kill and answered before the last probe
  that still found the component down started: a probe takes up to a second, so a ready answer
  between that probe and the first one finding it back may be right);
* ``read_error_rate`` — failed recalls over recalls sent while it was down.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memwarden.evals.chaos_load import Ack, Outcome

#: The readiness probes that must say "not ready" while a component is down: both workers need the
#: broker and the database; a worker's own probe answers for the worker.
DEPENDENTS: Mapping[str, tuple[str, ...]] = {
    "broker": ("gate", "projector"), "postgres": ("gate", "projector"), "gate": ("gate",),
    "projector": ("projector",),
}


@dataclass(frozen=True)
class Window:
    """One fault of the run: its slice of the load ``[start, end)``, when the component was killed,
    when its restart was issued, when a probe first found it answering again (``back``) and when the
    last probe that found it down started (``down_until``, default ``back``: surely down until then;
    it came back somewhere in between)."""

    component: str
    start: float
    killed: float
    restarted: float
    back: float
    end: float
    down_until: float | None = None

    @property
    def surely_down_until(self) -> float:
        """The end of the time the component was certainly down."""
        return self.back if self.down_until is None else min(self.down_until, self.back)


@dataclass(frozen=True)
class Decided:
    """One gate decision on the decisions topic: its id, outcome and broker timestamp (seconds)."""

    decision_id: str
    outcome: str
    at: float


def live_memories(acks: Sequence[Ack], decided: Mapping[str, Sequence[Decided]]) -> dict[str, Ack]:
    """Memory id -> the acknowledged write that holds its current text, replaying the accepted writes
    in the order they were acknowledged (one writer, one subject: one partition, decided in order):
    a record or supersession accepted makes it current, a forget accepted removes the memory."""
    live: dict[str, Ack] = {}
    for ack in sorted(acks, key=lambda a: a.at):
        outcomes = {d.outcome for d in decided.get(ack.command_id, ())}
        if "ACCEPTED" not in outcomes:
            continue
        if ack.kind == "forget":
            live.pop(ack.memory_id, None)
        else:
            live[ack.memory_id] = ack
    return live


def health_false_ok_s(probes: Iterable[Outcome], down_from: float, down_to: float) -> float:
    """Seconds during which the last readiness answer said ready while the component was down: an
    answer counts when its whole call ran inside ``[down_from, down_to)`` (sent after the kill,
    answered before the component answered again; a call that straddles the restart may have seen
    it back), from its answer until the next answer or ``down_to``."""
    ordered = sorted(probes, key=lambda o: o.done)
    total = 0.0
    for i, o in enumerate(ordered):
        if o.ok and o.at >= down_from and o.done < down_to:
            nxt = ordered[i + 1].done if i + 1 < len(ordered) else down_to
            total += max(0.0, min(nxt, down_to) - o.done)
    return total


def score_fault(w: Window, acks: Sequence[Ack], on_ledger: set[tuple[int, int]],
                decided: Mapping[str, Sequence[Decided]], unrecallable: set[str],
                reads: Sequence[Outcome], probes: Mapping[str, Sequence[Outcome]],
                write_errors: Sequence[Outcome]) -> dict[str, Any]:
    """The figures of one fault (module docstring). ``on_ledger``: ``(partition, offset)`` of every
    record on the commands topic; ``unrecallable``: command ids of live memories a recall missed."""
    mine = [a for a in acks if w.start <= a.at < w.end]
    present = [a for a in mine if (a.partition, a.offset) in on_ledger]
    during = [r for r in reads if w.killed <= r.at < w.back]
    if w.component == "projector":
        after = [r.at for r in reads if r.ok and r.at >= w.restarted]
    else:
        after = [d.at for ds in decided.values() for d in ds if d.at >= w.restarted]
    false_ok = sum(health_false_ok_s(probes.get(name, ()), w.killed, w.surely_down_until)
                   for name in DEPENDENTS[w.component])
    return {
        "acknowledged": len(mine),
        "lost": len(mine) - len(present),
        "duplicated": sum(1 for a in mine if len({d.decision_id for d in decided.get(a.command_id, ())}) > 1),
        "undecided_after_recovery": sum(1 for a in present if not decided.get(a.command_id)),
        "unrecallable": sum(1 for a in mine if a.command_id in unrecallable),
        "down_s": round(w.back - w.killed, 2),
        "restart_s": round(w.back - w.restarted, 2),
        "recovery_s": round(min(after) - w.restarted, 2) if after else None,
        "health_false_ok_s": round(false_ok, 2),
        "reads_while_down": len(during),
        "read_error_rate": round(sum(1 for r in during if not r.ok) / len(during), 3) if during else None,
        "write_errors_while_down": sum(1 for e in write_errors if w.killed <= e.at < w.back),
    }


#: The figures that must be 0 for every fault.
ZERO_GOALS = ("lost", "duplicated", "undecided_after_recovery", "unrecallable", "health_false_ok_s")


def passed(faults: Mapping[str, Mapping[str, Any]]) -> bool:
    """Every :data:`ZERO_GOALS` figure is 0 and every fault recovered (``recovery_s`` known)."""
    return all(f[g] == 0 for f in faults.values() for g in ZERO_GOALS) and all(
        f["recovery_s"] is not None for f in faults.values())
