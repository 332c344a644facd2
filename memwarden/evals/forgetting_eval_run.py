"""One run of ``memwarden eval forgetting`` in its namespace (:mod:`memwarden.evals.forgetting_eval`):
:class:`Run` records the workload, forgets it by every path, one forget at a time, each timed until its
memories are unreadable, plants the scan's canaries, waits for the erasure receipts and for the
shredded keys to leave the keys topic's files; :func:`receipt_complete` checks one memory's receipt."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from memwarden.evals.forgetting_eval_plan import (
    EXPIRY,
    EXPIRY_S,
    HOLD,
    ID,
    LINEAGE,
    MODES,
    PRUNING,
    QUERY,
    REPAIR,
    REQUIRED_STORES,
    SCOPE,
    SOURCE,
    SUBJECT,
    TAGS,
    Cast,
    ForgetRun,
    Mem,
    new_marker,
    prune_command,
    repair_command,
)
from memwarden.evals.forgetting_eval_probes import modes_returning, published_ms, still_readable, until_unreadable
from memwarden.evals.forgetting_scan import erasure_receipts, keys_on_disk
from memwarden.settings import Settings


@dataclass(frozen=True)
class _Receipt:
    command_id: str


class Run:
    """One evaluation in its namespace (see :func:`run_forgetting`)."""

    def __init__(self, run: Any, client: Any, mems: list[Mem], cast: Cast) -> None:
        self.r = run
        self.s: Settings = run.settings
        self.client = client
        self.mems = mems
        self.cast = cast
        self.forgets: list[ForgetRun] = []
        self.expiry: dict[str, Any] = {}
        self.expiry_late: list[Mem] = []
        self.hold: dict[str, Any] = {}
        self.how: dict[str, str] = {}
        self.last_forget = 0.0

    def say(self, text: str) -> None:
        self.r.console.print(text)

    def of(self, path: str) -> list[Mem]:
        return [m for m in self.mems if m.path == path]

    # recording ------------------------------------------------------------------------------------
    def record(self, mems: Sequence[Mem]) -> None:
        from memwarden.errors import MemwardenError

        for m in mems:
            if m.parent is not None:
                m.args["derived_from"] = [m.parent.memory_id]
                m.args["scope"] = m.parent.args.get("scope", "account:default")
        receipts = self.client.record_many([m.args for m in mems])
        for m, r in zip(mems, receipts, strict=True):
            m.memory_id = r.memory_id
        outcomes = self.client.decided([r.command_id for r in receipts], timeout_s=300)
        refused = [(m.path, outcomes[r.command_id]["outcome"], [x["code"] for x in outcomes[r.command_id]["reasons"]])
                   for m, r in zip(mems, receipts, strict=True)
                   if not outcomes[r.command_id]["outcome"].startswith("ACCEPTED")]
        if refused:
            raise MemwardenError(f"the workload was not accepted as planned: {refused[:5]}")

    def record_all(self) -> None:
        from memwarden.ops.progress import wait_caught_up
        from memwarden.stores.pg import connect

        self.record([m for m in self.mems if m.parent is None and m.path != EXPIRY])
        self.record([m for m in self.mems if m.parent is not None])
        expires = datetime.now(UTC) + timedelta(seconds=EXPIRY_S)
        for m in self.of(EXPIRY):
            m.args["expires_at"] = expires
        self.record(self.of(EXPIRY))
        wait_caught_up(self.s, alive=self.r.worker.alive)
        with connect(self.s) as conn:
            rows = conn.execute("SELECT memory_id::text, content_key_id::text FROM memory_versions"
                                " WHERE memory_id = ANY(%s::uuid[])", ([m.memory_id for m in self.mems],)).fetchall()
        keys: dict[str, list[str]] = {}
        for mid, kid in rows:
            keys.setdefault(mid, []).append(kid)
        for m in self.mems:
            m.key_ids = tuple(sorted(keys.get(m.memory_id, ())))

    def check_readable(self, mems: Sequence[Mem]) -> None:
        """Each memory readable in every mode, by its owner with its own text, before it is forgotten
        (else the unreadable checks would pass vacuously)."""
        for m in mems:
            m.readable_before = len(modes_returning(self.client, m)) == len(MODES)

    # forgetting -----------------------------------------------------------------------------------
    def forget(self, path: str, expected: list[Mem], publish: Callable[[], Any], blocking: bool = False) -> Any:
        """Publish a forget (``publish`` returns what has its ``command_id``; ``blocking``: a command
        that waits for the gate itself, run in a thread while the probes run) and time it until
        ``expected`` is unreadable; returns what ``publish`` returned."""
        started, called, error = time.monotonic(), time.time() * 1000.0, "NOT_PUBLISHED"
        if blocking:
            with ThreadPoolExecutor(1) as pool:
                future = pool.submit(publish)
                gone_at, late = until_unreadable(self.client, expected, started)
                try:
                    receipt = future.result(timeout=300)
                except Exception as exc:  # the command failed, maybe after its forget was decided
                    receipt, error = None, f"ERROR {type(exc).__name__}: {exc}"[:300]
        else:
            receipt = publish()
            gone_at, late = until_unreadable(self.client, expected, started)
        self.last_forget = started
        call_ms = None if gone_at is None else gone_at - called
        if receipt is None or not receipt.command_id:  # failed, or found nothing and published nothing
            self.forgets.append(ForgetRun(path, "", expected, None, call_ms, error, [], late))
            return receipt
        decision = self.client.decided([receipt.command_id], timeout_s=60)[receipt.command_id]
        at = published_ms(self.s, decision["position"])
        for m in expected:
            m.forget_id = receipt.command_id
        self.forgets.append(ForgetRun(path, receipt.command_id, expected,
                                      None if gone_at is None or at is None else gone_at - at, call_ms,
                                      decision["outcome"], list(decision.get("memory_ids") or []), late))
        return receipt

    def expire(self) -> None:
        """The expiring memories (one ``expires_at``): readable just before it, then probed from it on
        until none is readable (milliseconds past ``expires_at``); the retention sweep forgets them."""
        mems = self.of(EXPIRY)
        expires: datetime = mems[0].args["expires_at"]
        time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds() - 0.5))
        self.expiry["readable_just_before"] = (len(still_readable(self.client, mems)) == len(mems)
                                               and datetime.now(UTC) < expires)
        time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()))
        gone_at, self.expiry_late = until_unreadable(self.client, mems, time.monotonic())
        if gone_at is not None:
            self.expiry["unreadable_after_expires_at_ms"] = round(gone_at - expires.timestamp() * 1000.0, 1)

    def forget_every_path(self) -> None:
        c, cast = self.client, self.cast
        # named functions, not lambdas: mypy cannot type a lambda with a default argument as a Callable[[], Any]
        for m in self.of(ID):
            def by_id(m: Mem = m) -> Any:
                return c.forget(m.memory_id, principal=m.owner, subject=m.owner, reason="user request", wait=False)
            self.forget(ID, [m], by_id)
        for m in self.of(QUERY):
            def by_query(m: Mem = m) -> Any:
                return c.forget_matching(principal=m.owner, query=m.marker, wait=False)
            self.forget(QUERY, [m], by_query)
        lineage = self.of(LINEAGE)
        ana, cleo = cast.who("ana"), cast.who("cleo")
        self.forget(TAGS, self.of(TAGS) + lineage[:1],
                    lambda: c.forget_matching(principal=ana, tags=[cast.tag], reason="trip cancelled", wait=False))
        self.forget(SCOPE, self.of(SCOPE), lambda: c.forget_matching(principal=cleo, scopes=[cast.scope], wait=False))
        self.forget(SOURCE, self.of(SOURCE),
                    lambda: c.forget_matching(principal=cleo, source_references=[cast.chat_ref], wait=False))
        ben = cast.who("ben")
        self.forget(SUBJECT, self.of(SUBJECT), lambda: c.forget_subject(ben, principal=ben,
                                                                        reason="right to erasure", wait=False))
        self.legal_hold()
        self.repair(self.of(REPAIR) + lineage[1:])
        self.prune()

    def repair(self, expected: list[Mem]) -> None:
        """``memwarden repair --source-ref <the tainted import>`` when it exists (run in a thread while
        the probes run: it returns after its audit scan), else the same selector signed by the root
        admin."""
        run, ref = repair_command(), self.cast.tainted_ref
        if run is None:
            admin = self.admin()
            self.how[REPAIR] = ("ForgetMatching(source_references=[the tainted import]) signed by the root admin:"
                                " no memwarden.repair here, so the selector a repair issues")
            self.forget(REPAIR, expected, lambda: self.client.forget_matching(
                principal=admin, source_references=[ref], reason="repair: tainted import", wait=False))
            return
        from memwarden.repair import RepairTarget

        report = self.forget(REPAIR, expected, lambda: run(self.s, RepairTarget(source_refs=(ref,)),
                                                           reason="eval: tainted import"), blocking=True)
        if report is None:
            self.how[REPAIR] = "memwarden.repair.repair failed (see decisions_not_as_expected)"
            return
        self.how[REPAIR] = (f"memwarden.repair.repair(RepairTarget(source_refs=[the tainted import])):"
                            f" {len(report.matched)} matched, {len(report.derived)} derived,"
                            f" {len(report.affected_reads)} affected reads")

    def prune(self) -> None:
        """``memwarden prune --theta 1 --grace-days 0 --store-kind EVENT`` when it exists: theta 1 makes
        every EVENT memory prunable at once (the freshness decay itself is not what is measured here;
        PROFILE memories, every other one of the workload, are archived, never forgotten)."""
        run, expected = prune_command(), self.of(PRUNING)
        if run is None:
            self.how[PRUNING] = "not built: no memwarden.pruning here"
            return
        self.how[PRUNING] = "memwarden.pruning.prune failed (see decisions_not_as_expected)"

        def call() -> Any:
            out = run(self.s, 1.0, 0.0, ["EVENT"])
            self.how[PRUNING] = (f"memwarden.pruning.prune(theta=1.0, grace_s=0, kinds=[EVENT]): forget"
                                 f" {len(out['forget'])}, archive {len(out['archive'])}")
            return _Receipt(out["command_id"] or "")

        self.forget(PRUNING, expected, call, blocking=True)

    def admin(self) -> str:
        from memwarden.keystore import admin_signer

        signer = admin_signer(self.s)
        self.client.add_signer(signer)
        return signer.principal_id

    def legal_hold(self) -> None:
        """A hold on dev: dev's forget waits (``DEFERRED``) and the memory stays readable; the lift
        forgets it (measured from the lift; its receipt names the waiting forget)."""
        c, admin, (held,) = self.client, self.admin(), self.of(HOLD)
        placed = c.decided([c.place_hold(self.cast.hold_id, by=admin, subjects=[held.owner],
                                         reason="litigation", wait=False).command_id], timeout_s=60)
        waiting = c.forget(held.memory_id, principal=held.owner, subject=held.owner, reason="please forget", wait=False)
        outcome = c.decided([waiting.command_id], timeout_s=60)[waiting.command_id]["outcome"]
        self.hold = {"placed": next(iter(placed.values()))["outcome"], "forget_outcome": outcome,
                     "readable_while_held": len(modes_returning(c, held)) == len(MODES)}
        self.forget(HOLD, [held], lambda: c.lift_hold(self.cast.hold_id, by=admin, reason="case closed", wait=False))
        held.forget_id = waiting.command_id

    # checks ---------------------------------------------------------------------------------------
    def plant_canaries(self) -> dict[str, str]:
        """A marker in clear in the namespace's commands topic (then its dead letters) and in a table
        of its Postgres schema: the scan must find both."""
        from memwarden.stores.pg import connect

        kafka, pg = new_marker(), new_marker()
        self.client.publish_raw(b"eval-forgetting-canary", f"canary {kafka}".encode())
        with connect(self.s) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS eval_forgetting_canary (marker text)")
            conn.execute("INSERT INTO eval_forgetting_canary VALUES (%s)", (pg,))
            conn.commit()
        return {"kafka": kafka, "postgres": pg}

    def receipts(self, forgotten: list[Mem], timeout_s: float = 60.0) -> tuple[int, list[dict[str, Any]]]:
        """How many forgotten memories have a complete receipt (waits up to ``timeout_s``)."""
        markers = [x for m in self.mems for x in m.markers]
        deadline = time.monotonic() + timeout_s
        while True:
            found = erasure_receipts(self.s)
            complete = sum(receipt_complete(m, found, markers) for m in forgotten)
            if complete == len(forgotten) or time.monotonic() > deadline:
                return complete, found
            time.sleep(1.0)

    def keys_leave_disk(self, forgotten: list[Mem], kept: list[Mem], wrapped: dict[str, bytes]) -> dict[str, Any]:
        """Wait for the forgotten memories' wrapped keys to leave the keys topic's files (bound: 2 ×
        lag + 15 s after the last forget); the kept ones must still be there."""
        gone = {k: wrapped[k] for m in forgotten for k in m.key_ids if k in wrapped}
        live = {k: wrapped[k] for m in kept for k in m.key_ids if k in wrapped}
        bound_s = 2 * self.s.keys_compaction_lag_s + 15
        left = keys_on_disk(self.s, gone)
        while left and time.monotonic() - self.last_forget < bound_s:
            time.sleep(0.5)
            left = keys_on_disk(self.s, gone)
        after_s = round(time.monotonic() - self.last_forget, 1)
        return {"compaction_lag_s": self.s.keys_compaction_lag_s, "bound_s": bound_s,
                "forgotten_keys": len(gone), "forgotten_keys_on_disk": len(left),
                "left_disk_s_after_last_forget": after_s if not left else None,
                "kept_keys": len(live), "kept_keys_on_disk": len(keys_on_disk(self.s, live))}


def receipt_complete(m: Mem, receipts: list[dict[str, Any]], markers: list[str]) -> bool:
    """Whether ``receipts`` hold a complete receipt of ``m``'s forget (of its forget command, when
    known): verified, listing every store of :data:`REQUIRED_STORES`, its data keys and as many key
    tombstones, and none of ``markers``."""
    for r in receipts:
        if r["memory_id"] != m.memory_id or (m.forget_id and r["command_id"] != m.forget_id):
            continue
        text = str(r)
        if (r["verified"] and set(r["stores"]) >= REQUIRED_STORES and sorted(r["key_ids"]) == list(m.key_ids)
                and len(r["key_tombstones"]) == len(m.key_ids) and not any(x in text for x in markers)):
            return True
    return False
