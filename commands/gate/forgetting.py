"""Forgets through the gate: ``ForgetMemory``, ``ForgetMatching``, ``ForgetSubject`` and the legal
hold (``PlaceHold`` / ``LiftHold``). Pure functions of the command and the governed state.

Seed 004 "Forgetting is an end-to-end operation", steps 1-2: lineage finds the record and every
derivative, and the record is blocked from every read from the moment the gate decides (the
decision marks it forgotten and shreds every data key of every version: no projector needs to have
caught up for its content to be unreadable). Issue 14 part 3:

* **Selection** (:func:`selects`): a memory matches a selector when every criterion given matches
  (AND across criteria, OR within one list). An empty selector is refused (``EMPTY_SELECTOR``): it
  never means "everything".
* **Who may forget** (:func:`may_forget`): the memory's owner, its subject, an admin, or the holder
  of a ``FORGET`` grant covering its subject, scope and store kind. A ``ForgetSubject`` is the
  subject's own or an admin's (``NOT_SUBJECT`` otherwise). Matches the issuer may not forget are
  left alone and invisible: never listed, and counted (``NOT_PERMITTED``) only when the selector named them
  by id (a count by tags, writers or sources would tell the issuer what others hold).
* **Lineage** (:func:`lineage`): every memory that cites a forgotten one in ``derived_from``,
  transitively, is forgotten with it (``cascade``; always for ``ForgetMemory`` and ``ForgetSubject``):
  a derivative can repeat what was forgotten, whoever wrote it.
* **Legal hold precedence**: a hold beats a forget (GDPR Art. 17(3)(e): erasure yields to legal
  claims). A forget whose memories a hold in force covers forgets the others now and waits for the
  held ones (outcome ``DEFERRED``, reason ``LEGAL_HOLD`` naming the holds); ``LiftHold`` carries the
  waiting forgets out for memories no other hold covers. Retention expiry and pruning are forgets
  too, so a hold keeps them waiting the same way.
* **Held commands**: a write held for review is no memory yet, but its content is on the ledger under
  its own data key, and an approval would admit it. A ``ForgetSubject``, and a ``ForgetMatching``
  whose criteria a held command answers (subjects, writers, memory ids: :func:`held_selected`),
  discard the held commands it selects that the issuer may discard (:func:`may_discard`): the review
  closes as rejected and the data key is shredded (``QUARANTINE_DISCARDED``), as a ``ForgetMemory``
  of a held id does. Erasure of a subject leaves nothing to approve back.
* **Ids alone**: a ``ForgetMatching`` that names only memory ids, none of which the issuer may forget
  (or none known), is refused (``NOT_OWNER`` / ``UNKNOWN_MEMORY``), as a ``ForgetMemory`` of each would be;
  with other criteria, or with some id forgotten, held or already forgotten, the refused ones are
  counted in an accepted decision (``NOT_PERMITTED``, ``UNKNOWN_MEMORY``). An already forgotten id is
  ``ALREADY_FORGOTTEN`` only to whoever may forget it; to anyone else it is refused like a live one.
* **Dry run**: the same decision, with the ids in ``listed`` and no effect.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from memwarden.commands.forget_commands import (
    NO_MATCH_ID,
    ForgetMatching,
    ForgetSelector,
    ForgetSubject,
    LiftHold,
    PlaceHold,
)
from memwarden.commands.gate.effects import (
    Decision,
    DeferredSet,
    Effect,
    Forgotten,
    HoldSet,
    MemoryCleared,
    accept,
    reject,
)
from memwarden.commands.gate.review import review_closed
from memwarden.commands.gate.state import (
    DeferredForget,
    GateState,
    HoldState,
    MemoryState,
    Outcome,
    QuarantineState,
)
from memwarden.commands.model import ForgetMemory, Sensitivity, StoreKind
from memwarden.commands.principals import ADMIN_ROLE, PrincipalRecord
from memwarden.commands.readmodel.permission import may_write
from memwarden.commands.reasons import Reason
from memwarden.commands.vocabulary import Right
from memwarden.epoch import to_ms

#: Reason code of a forget a legal hold keeps waiting.
LEGAL_HOLD = "LEGAL_HOLD"
#: Most ids a reason message names before it says "and N more".
_NAMED = 20


def selects(selector: ForgetSelector, memory: MemoryState) -> bool:
    """Whether ``memory`` matches every criterion ``selector`` gives (see the module doc). An empty
    selector matches nothing."""
    if selector.empty:
        return False

    def any_of(wanted: Sequence[str], have: Iterable[str]) -> bool:
        return not wanted or any(h in wanted for h in have)

    checks = (
        any_of(selector.subjects, (memory.subject,)),
        any_of(selector.scopes, (memory.scope,)),
        any_of(selector.source_references, memory.sources),
        any_of(selector.writers, memory.writers or (memory.owner,)),
        any_of(selector.key_ids, memory.signer_keys),
        any_of(selector.tags, memory.tags),
        any_of(selector.memory_ids, (memory.memory_id,)),
        selector.observed_from is None or memory.observed_ms >= to_ms(selector.observed_from),
        selector.observed_to is None or memory.observed_ms < to_ms(selector.observed_to),
        selector.admitted_from is None or memory.admitted_ms >= to_ms(selector.admitted_from),
        selector.admitted_to is None or memory.admitted_ms < to_ms(selector.admitted_to),
        selector.expired_before is None or (memory.expires_ms is not None
                                            and memory.expires_ms <= to_ms(selector.expired_before)),
    )
    return all(checks)


def held_selected(selector: ForgetSelector, held: QuarantineState) -> bool:
    """Whether the pending held command ``held`` falls under ``selector``: every criterion given is one
    a held command answers (``subjects``, ``writers``, ``memory_ids``) and matches. A selector with any
    other criterion (scopes, tags, sources, keys, times, expiry) leaves held commands alone: what they
    carry is known only to their review."""
    if selector.empty or held.status != "pending":
        return False
    if not selector.model_copy(update={"subjects": (), "writers": (), "memory_ids": ()}).empty:
        return False  # a criterion a held command does not answer
    return ((not selector.subjects or held.subject in selector.subjects)
            and (not selector.writers or held.principal in selector.writers)
            and (not selector.memory_ids or held.memory_id in selector.memory_ids))


def may_discard(issuer: PrincipalRecord, held: QuarantineState) -> bool:
    """Whether ``issuer`` may discard the held command ``held``: its writer, its subject or an admin."""
    return issuer.principal_id in (held.principal, held.subject) or issuer.has_role(ADMIN_ROLE)


def may_forget(issuer: PrincipalRecord, memory: MemoryState, state: GateState, now: datetime) -> bool:
    """Owner, subject, admin, or a ``FORGET`` grant valid at ``now`` covering the memory: its subject,
    scope and store kind, and its sensitivity up to the grant's ceiling (as a READ grant)."""
    if issuer.principal_id in (memory.owner, memory.subject) or issuer.has_role(ADMIN_ROLE):
        return True
    kind = StoreKind(memory.store_kind) if memory.store_kind in StoreKind.__members__ else StoreKind.PROFILE
    level = Sensitivity(memory.sensitivity) if memory.sensitivity in Sensitivity.__members__ else Sensitivity.RESTRICTED
    return may_write(issuer.principal_id, issuer.roles, to_ms(now), state.grants, memory.subject, memory.scope or "-",
                     kind, sensitivity=level, right=Right.FORGET) is not None


def lineage(roots: Iterable[str], memories: Iterable[MemoryState]) -> tuple[str, ...]:
    """``roots`` and every live memory deriving from one of them, transitively (``derived_from``),
    in a stable order: roots first, then derivatives breadth first."""
    children: dict[str, list[str]] = {}
    for m in memories:
        if not m.forgotten:
            for parent in m.derived_from:
                children.setdefault(parent, []).append(m.memory_id)
    seen: dict[str, None] = dict.fromkeys(roots)
    queue = list(seen)
    while queue:
        for child in sorted(children.get(queue.pop(0), ())):
            if child not in seen:
                seen[child] = None
                queue.append(child)
    return tuple(seen)


def _holds_over(memory: MemoryState, state: GateState) -> tuple[str, ...]:
    return tuple(sorted(h.hold_id for h in state.holds.values() if h.covers(memory)))


def _subject_held(subject: str, state: GateState) -> bool:
    """Whether a legal hold in force names ``subject`` (what a command held for review can be matched on: it
    has no scope the gate knows until it is admitted)."""
    return any(h.active and subject in h.subjects for h in state.holds.values())


def _named(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_NAMED])
    return shown + (f" and {len(ids) - _NAMED} more" if len(ids) > _NAMED else "")


def _forget(targets: Sequence[str], command_id: str, principal: str, why: str, state: GateState,
            dry_run: bool, extra: tuple[Reason, ...] = (), discard: Sequence[QuarantineState] = ()) -> Decision:
    """The decision that forgets ``targets`` (live memory ids, lineage already added): held ones wait,
    the others are forgotten now, every data key of theirs is shredded. The commands held for review
    in ``discard`` close as rejected and their data keys are shredded too, but for those about a subject a
    legal hold in force names (kept pending, ``LEGAL_HOLD``: a hold beats every forget)."""
    now_ids = [m for m in targets if not _holds_over(state.memories[m], state)]
    held = [m for m in targets if m not in now_ids]
    hold_ids = sorted({h for m in held for h in _holds_over(state.memories[m], state)})
    reasons: list[Reason] = list(extra)
    if held:
        reasons.insert(0, Reason(LEGAL_HOLD, f"{len(held)} memories wait for legal holds {', '.join(hold_ids)}: "
                                 f"{_named(held)}"))
    kept = [q for q in discard if _subject_held(q.subject, state)]
    if kept:  # a hold beats every forget: a held write about a held subject stays for its review
        discard = [q for q in discard if q not in kept]
        reasons.append(Reason(LEGAL_HOLD, f"{len(kept)} commands held for review are about a subject under a legal "
                              f"hold and were kept: {_named([q.command_id for q in kept])}"))
    if dry_run:
        listed = tuple(targets)
        if discard:
            reasons.append(Reason("QUARANTINE_DISCARDED", f"would discard {len(discard)} commands held for review"))
        return Decision(Outcome.ACCEPTED, (Reason("DRY_RUN", f"would forget {len(now_ids)} memories now"
                                                  + (f" and {len(held)} after their holds" if held else "")),
                                           *reasons), listed=listed, deferred=tuple(held))
    closed = [review_closed(q) for q in discard]
    closed_effects, closed_keys = [e for c in closed for e in c.effects], tuple(k for c in closed for k in c.shred)
    if discard:
        reasons.append(Reason("QUARANTINE_DISCARDED", f"discarded {len(discard)} commands held for review and "
                              f"shredded their data keys: {_named([q.command_id for q in discard])}"))
    if not targets:
        return Decision(Outcome.ACCEPTED, (Reason("NOTHING_TO_FORGET", "no live memory matched"), *reasons),
                        effects=tuple(closed_effects), shred=closed_keys)
    forgets = tuple(Forgotten(replace(state.memories[m], forgotten=True), command_id, principal, why) for m in now_ids)
    effects: list[Effect] = [MemoryCleared(m) for m in now_ids]
    if held:
        effects.append(DeferredSet(DeferredForget(command_id, principal, why, tuple(held))))
    effects += closed_effects
    if now_ids:
        reasons.append(Reason("OK", f"forgot {len(now_ids)} memories"))
    return Decision(Outcome.DEFERRED if held else Outcome.ACCEPTED, tuple(reasons), effects=tuple(effects),
                    forgets=forgets, listed=tuple(now_ids), deferred=tuple(held),
                    shred=(*closed_keys, *(k for f in forgets for k in f.memory.key_ids)))


def decide_forget(command: ForgetMemory, issuer: PrincipalRecord, state: GateState) -> Decision:
    """``ForgetMemory``: the owner, the subject or an admin forgets every version and every derivative.
    Forgetting a forgotten memory is accepted again and changes nothing (``ALREADY_FORGOTTEN``), for those
    only: anyone else is refused as for a live memory (``NOT_OWNER``, ``SUBJECT_MISMATCH``)."""
    from memwarden.commands.gate.writes import live_target, not_owners  # the same ownership rule as a supersede

    target = state.memories.get(command.memory_id)
    if target is not None and target.forgotten:
        refused = not_owners(target, command, issuer)
        return refused or Decision(Outcome.ACCEPTED, (Reason("ALREADY_FORGOTTEN", "memory was already forgotten"),))
    held = next((q for q in state.quarantine.values() if q.memory_id == command.memory_id and q.status == "pending"),
                None)
    if target is None and held is not None:
        return _discard_quarantined(command, issuer, held, state)
    live = live_target(command.memory_id, command, issuer, state)
    if isinstance(live, Decision):
        return live
    env = command.envelope
    targets = lineage([live.memory_id], state.memories.values())
    return _forget(targets, env.command_id, env.principal, command.reason, state, False)


def _discard_quarantined(command: ForgetMemory, issuer: PrincipalRecord, held: QuarantineState,
                         state: GateState) -> Decision:
    """A forget of a memory that exists only as a command held for review: the review closes as
    rejected and the held content's data key is shredded (it was never admitted, so nothing else
    holds it). Its writer, its subject or an admin only; refused (``LEGAL_HOLD``) while a legal hold in
    force names its subject (a hold beats every forget; a reviewer may still reject it)."""
    if not may_discard(issuer, held):
        return reject("NOT_OWNER", "only the writer, the subject or an admin may discard this held command",
                      "envelope.principal")
    if _subject_held(held.subject, state):
        return reject(LEGAL_HOLD, f"command {held.command_id} is held for review about {held.subject}, whom a legal "
                      "hold names: it is kept (a reviewer may still reject it)", "memory_id")
    closed = review_closed(held)
    return replace(closed, reasons=(Reason("QUARANTINE_DISCARDED", f"command {held.command_id} was held for review;"
                                           " discarded and its data key shredded"),))


def decide_forget_many(command: ForgetMatching | ForgetSubject, issuer: PrincipalRecord, state: GateState,
                       now: datetime) -> Decision:
    """``ForgetMatching`` / ``ForgetSubject`` (see the module doc for selection, permission, lineage,
    holds and dry runs). ``GateDecided.memory_ids`` lists what was forgotten (or would be)."""
    env = command.envelope
    if isinstance(command, ForgetSubject):
        if env.principal != env.subject and not issuer.has_role(ADMIN_ROLE):
            return reject("NOT_SUBJECT", "only the subject or an admin may forget everything about a subject",
                          "envelope.principal")
        selector, cascade = ForgetSelector(subjects=(env.subject,)), True
    else:
        if command.selector.empty:
            return reject("EMPTY_SELECTOR", "a forget must name what it forgets; an empty selector never means"
                          " everything", "selector")
        selector, cascade = command.selector, command.cascade
    matched = [m for m in sorted(state.memories.values(), key=lambda m: m.memory_id)
               if not m.forgotten and selects(selector, m)]
    allowed = [m.memory_id for m in matched if may_forget(issuer, m, state, now)]
    named = set(selector.memory_ids)
    # what the issuer may not forget is invisible to it: never counted, unless it named it by id (whoever holds
    # an id knows its memory exists); a count by tags, writers or sources would tell what others hold
    refused_ids = {m.memory_id for m in matched if m.memory_id in named and m.memory_id not in allowed}
    extra: tuple[Reason, ...] = ()
    if refused_ids:
        extra = (Reason("NOT_PERMITTED", f"{len(refused_ids)} of the memories named are not {env.principal}'s to "
                        "forget and were left alone", "envelope.principal"),)
    selected = [q for q in sorted(state.quarantine.values(), key=lambda q: q.command_id) if held_selected(selector, q)]
    discard = [q for q in selected if may_discard(issuer, q)]
    refused_held = {q.memory_id for q in selected if q.memory_id in named and not may_discard(issuer, q)}
    if refused_held:
        extra = (*extra, Reason("NOT_PERMITTED", f"{len(refused_held)} of the memories named are held for review "
                                f"and not {env.principal}'s to discard; left alone", "envelope.principal"))
    pending_ids = {q.memory_id for q in selected}
    forgotten = [state.memories[m] for m in selector.memory_ids if m in state.memories and state.memories[m].forgotten]
    gone = [m.memory_id for m in forgotten if may_forget(issuer, m, state, now)]
    refused_ids |= {m.memory_id for m in forgotten if m.memory_id not in gone}
    if gone:
        extra = (*extra, Reason("ALREADY_FORGOTTEN", f"already forgotten: {_named(gone)}", "selector.memory_ids"))
    if NO_MATCH_ID in selector.memory_ids:  # the client's query matched nothing the issuer can read
        extra = (*extra, Reason("QUERY_MATCHED_NOTHING", f"no memory {env.principal} can read contains the query as a"
                                " phrase: a forget by query takes the memories whose text holds its words in that"
                                " order (case and spacing folded), so ask for the value itself (\"4471\", not"
                                " \"locker combination 4471\" when the text says \"the locker code is 4471\"); a"
                                " recall shows what is similar, a forget only what holds it (resolved by a read as the"
                                " issuer, for the default purpose and the purposes it names)", "query"))
    unknown = [m for m in selector.memory_ids if m not in state.memories and m not in pending_ids
               and m != NO_MATCH_ID]
    if unknown:
        extra = (*extra, Reason("UNKNOWN_MEMORY", f"no memory {_named(unknown)}", "selector.memory_ids"))
    refused = len(refused_ids | refused_held)
    if (not allowed and not discard and not gone and (refused or unknown) and NO_MATCH_ID not in selector.memory_ids
            and selector.model_copy(update={"memory_ids": ()}).empty):
        # ids alone, and none of them the issuer's to forget: a refusal, as a ForgetMemory of each would be
        return Decision(Outcome.REJECTED, (
            *((Reason("NOT_OWNER", f"none of the {refused} memories named is {env.principal}'s to forget (its owner,"
                      " its subject, an admin or a FORGET grant covering it may)", "selector.memory_ids"),)
              if refused else ()),
            *((Reason("UNKNOWN_MEMORY", f"no memory {_named(unknown)}", "selector.memory_ids"),) if unknown else ())))
    targets = lineage(allowed, state.memories.values()) if cascade else tuple(allowed)
    return _forget(targets, env.command_id, env.principal, command.reason, state, command.dry_run, extra, discard)


def decide_hold(command: PlaceHold | LiftHold, issuer: PrincipalRecord, state: GateState) -> Decision:
    """``PlaceHold`` / ``LiftHold`` (admin only). Placing an existing hold again replaces its cover;
    lifting an unknown hold is refused (``UNKNOWN_HOLD``), lifting a lifted one changes nothing.
    A lift carries out the forgets it released: each waiting memory that no other hold in force
    covers is forgotten now, under the waiting forget's command id."""
    if not issuer.has_role(ADMIN_ROLE):
        return reject("NOT_ADMIN", "only an admin places or lifts a legal hold", "envelope.principal")
    if isinstance(command, PlaceHold):
        placed = HoldSet(HoldState(command.hold_id, tuple(command.subjects), tuple(command.scopes)))
        before = state.holds.get(command.hold_id)
        if before is not None and before.active:  # say so: it answered a bare OK, as for a new hold
            return Decision(Outcome.ACCEPTED, (Reason("HOLD_REPLACED", f"legal hold {command.hold_id} was in force; "
                                                      "its cover is replaced by this one"),), effects=(placed,))
        return accept(placed)
    hold = state.holds.get(command.hold_id)
    if hold is None:
        return reject("UNKNOWN_HOLD", f"no legal hold {command.hold_id}", "hold_id")
    if not hold.active:
        return Decision(Outcome.ACCEPTED, (Reason("ALREADY_LIFTED", f"hold {command.hold_id} was lifted before"),))
    return released_forgets(replace(hold, active=False), state)


def released_forgets(lifted: HoldState, state: GateState) -> Decision:
    """The ``LiftHold`` decision: the hold out of force, and the waiting forgets carried out where no
    other hold covers the memory."""
    after = replace(state, holds={**state.holds, lifted.hold_id: lifted})
    effects: list[Effect] = [HoldSet(lifted)]
    forgets: list[Forgotten] = []
    done: set[str] = set()  # a memory two waiting forgets name goes once, under the first (by command id)
    for waiting in sorted(state.deferred.values(), key=lambda d: d.command_id):
        live = [m for m in waiting.memory_ids
                if m in state.memories and not state.memories[m].forgotten and m not in done]
        free = [m for m in live if not _holds_over(state.memories[m], after)]
        if not free and len(live) == len(waiting.memory_ids):
            continue
        forgets += [Forgotten(replace(state.memories[m], forgotten=True), waiting.command_id, waiting.principal,
                              waiting.reason) for m in free]
        effects += [MemoryCleared(m) for m in free]
        done.update(free)
        effects.append(DeferredSet(replace(waiting, memory_ids=tuple(m for m in live if m not in free))))
    ids = tuple(f.memory.memory_id for f in forgets)
    message = f"hold {lifted.hold_id} lifted" + (f"; forgot {len(ids)} waiting memories" if ids else "")
    return Decision(Outcome.ACCEPTED, (Reason("OK", message),), effects=tuple(effects), forgets=tuple(forgets),
                    listed=ids, shred=tuple(k for f in forgets for k in f.memory.key_ids))


__all__ = ["LEGAL_HOLD", "decide_forget", "decide_forget_many", "decide_hold", "lineage", "may_forget",
           "released_forgets", "selects"]
