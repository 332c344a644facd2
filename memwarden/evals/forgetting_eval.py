"""``memwarden eval forgetting`` (issue 14 "done when"): every way a memory is forgotten, through the
real pipeline, and whether anything of it is left anywhere.

In a fresh namespace whose keys topic compacts within :data:`LAG_S` seconds and whose gate worker
sweeps retention every :data:`RETENTION_S` second, five users record a mixed workload. Every text
carries a unique random marker (``qx`` + 20 characters + ``zq``); scopes, tags and source references
are shared between owners, so a selector also matches memories its issuer may not forget (they must
stay); two derived records (model inferences whose ``quoted_span`` quotes their source's marker, as
attribution requires of a derivative) hang below memories forgotten by selector and by repair. Then
every path forgets, one forget at a time:

* ``expiry``: memories whose ``expires_at`` passes (a few seconds after they are recorded): the read
  filter hides them from then on, the gate worker's retention sweep forgets them;
* ``id``: ``ForgetMemory`` by the owner;
* ``selector:query``: ``ForgetMatching(query=<marker>)`` (resolved by the client into ids);
* ``selector:tags`` / ``selector:scope`` / ``selector:source_ref``: ``ForgetMatching`` by the owner;
* ``subject``: ``ForgetSubject`` (the right to erasure);
* ``legal_hold``: a forget of a held memory waits (``DEFERRED``, still readable); the lift carries it out;
* ``repair``: :func:`memwarden.repair.repair` of the tainted source reference, across owners (where
  that module is absent: the same ``ForgetMatching(source_references=...)`` signed by the root admin);
* ``lineage``: the derived records, forgotten with their sources (cascade);
* ``pruning``: :func:`memwarden.pruning.prune` with theta 1 and no grace over the EVENT store kind:
  every EVENT memory of the workload is prunable at once (the freshness decay is not what is measured
  here); every other memory is PROFILE, which pruning archives and never forgets. Where that module
  is absent the path is reported "not built", with no memory.

Measured and checked:

* ``forget_to_unreadable_ms``: from the moment the forget is published (the broker timestamp of the
  command, which the producer sets when it sends it) to the first moment no recall in any mode
  (hybrid, dense, lexical), queried by the owner with the memories' own words, returns any memory it
  forgets (probed in rounds from the call on, :func:`still_readable`; for the hold, from the lift).
  ``call_to_unreadable_ms`` counts from the call instead (for ``selector:query`` it includes the
  client's recalls that resolve the query; for repair and pruning, the command's own start-up). A
  forget whose memories are still readable after :data:`UNREADABLE_TIMEOUT_S`, or that failed, is
  ``unmeasured``;
* ``readable_after_forget``: forgotten memories any mode still returns, each queried alone with its
  own text, at the end (and those that never became unreadable within the timeout);
* ``receipts_complete``: share of forgotten memories with an ``ErasureReceipted`` event of their
  forget, verified, listing every store (:data:`REQUIRED_STORES`), their data keys and tombstones,
  and no marker;
* ``legitimate_kept``: share of never-forgotten memories every mode still returns to their owner;
* then the documented maintenance: the forgotten memories' wrapped data keys must leave the keys
  topic's segment files within about 2 × the compaction lag (README "When the key leaves the broker's
  disk"), while the kept memories' wrapped keys must still be found there (the key scan works). The
  README documents no Postgres maintenance (Postgres only ever receives sealed text), so none is run:
  no CHECKPOINT, VACUUM or ``pg_switch_wal``;
* ``plaintext_survivals``: markers of forgotten AND of kept memories found in any file of the Kafka
  data folder (every topic of the namespace, dead letters included), the Kafka logs, the Postgres
  data folder (heap and WAL) and log, the index shard, the worker's log and the worker's state
  folder, byte for byte (holes of sparse files skipped: they read as zeros); also in every Kafka
  record decompressed (lz4 can split a marker inside a batch) and in every row of the namespace's
  schema read through SQL (TOAST can compress one). A survival found in a command's
  ``source.quoted_span`` names that command. Canaries prove the scan is not vacuous: a marker in a
  plain file under a temporary folder, a marker published raw to the namespace's commands topic
  (dead-lettered, so in two topics) and a marker inserted in a table of the namespace's schema (in
  the WAL at commit) must each be found, raw and decoded.
"""

from __future__ import annotations

import secrets
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from memwarden.evals.forgetting_scan import (
    erasure_receipts,
    keys_on_disk,
    namespace_topic_dirs,
    quoted_in_commands,
    scan,
    scan_areas,
    scan_records,
    scan_rows,
    wrapped_keys,
)
from memwarden.settings import Settings

#: Keys compaction lag of the evaluation namespace, in seconds (the README's bound scales with it).
LAG_S = 3.0
#: Retention sweep interval of the evaluation's gate worker, in seconds.
RETENTION_S = 1.0
#: How far ahead ``expires_at`` is set for the memories forgotten by expiry, in seconds.
EXPIRY_S = 8.0
#: A forget that has not made its memories unreadable by then counts as readable after forget.
UNREADABLE_TIMEOUT_S = 15.0
#: Pause between two rounds of probes, in seconds: the recalls run on the worker that also decides the
#: forget, and back-to-back probes would keep its event loop busy (the goal is at light load).
PROBE_PAUSE_S = 0.02
#: Goal for the p99 of ``forget_to_unreadable_ms`` at light load.
GOAL_P99_MS = 1000.0
#: Stores every erasure receipt must list.
REQUIRED_STORES = frozenset({"keys", "profile", "vector_cache", "index"})
#: Smallest and largest workload (below: too few memories for every path; above: a user's memories
#: no longer fit in one recall of ``MAX_K``, so a probe could miss a readable memory).
MIN_MEMORIES, MAX_MEMORIES = 20, 200
MODES = ("hybrid", "dense", "lexical")
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
_TOPICS = ("garden log", "reading list", "travel diary", "kitchen notes", "workout plan", "music practice",
           "budget sheet", "pet care", "language lessons", "bird sightings", "recipe box", "film notes")
_NAMES = ("ana", "ben", "cleo", "dev", "eli")

ID, QUERY, TAGS, SCOPE, SOURCE = "id", "selector:query", "selector:tags", "selector:scope", "selector:source_ref"
SUBJECT, HOLD, REPAIR, LINEAGE, EXPIRY, PRUNING = "subject", "legal_hold", "repair", "lineage", "expiry", "pruning"
KEPT = "kept"
#: Every forgetting path, in the order of the report.
PATHS = (ID, QUERY, TAGS, SCOPE, SOURCE, SUBJECT, HOLD, REPAIR, LINEAGE, EXPIRY, PRUNING)


def new_marker() -> str:
    """A unique marker: ``qx`` + 20 random lowercase letters and digits + ``zq`` (what the scan looks for)."""
    return "qx" + "".join(secrets.choice(_ALPHABET) for _ in range(20)) + "zq"


@dataclass
class Mem:
    """One memory of the workload: who owns it, which path forgets it (or ``kept``), its text."""

    owner: str
    path: str
    text: str
    marker: str
    args: dict[str, Any]
    parent: Mem | None = None
    memory_id: str = ""
    key_ids: tuple[str, ...] = ()
    forget_id: str = ""  # the forget command its receipt names ("" = the retention sweep's, not known ahead)
    readable_before: bool = False
    fact_marker: str = ""  # the marker in its typed fact's value, if it has one

    @property
    def markers(self) -> dict[str, str]:
        """``marker -> what carries it`` (the text, the typed fact's value)."""
        return {self.marker: "text", **({self.fact_marker: "fact value"} if self.fact_marker else {})}


@dataclass
class ForgetRun:
    """One forget command: what it should forget, how long from its publication until unreadable
    (``ms``) and from the call (``call_ms``), what the gate decided."""

    path: str
    command_id: str
    expected: list[Mem]
    ms: float | None
    call_ms: float | None = None
    outcome: str = ""
    forgotten_ids: list[str] = field(default_factory=list)
    late: list[Mem] = field(default_factory=list)


@dataclass(frozen=True)
class _Receipt:
    command_id: str


@dataclass(frozen=True)
class Cast:
    """The principals and the shared labels of one run."""

    run: str

    def who(self, name: str) -> str:
        return f"user:{name}-{self.run}"

    @property
    def scope(self) -> str:
        return f"personal:shared-{self.run}"

    @property
    def tag(self) -> str:
        return f"trip-{self.run}"

    @property
    def chat_ref(self) -> str:
        return f"chat:{self.run}-7"

    @property
    def tainted_ref(self) -> str:
        return f"import:{self.run}-tainted"

    @property
    def hold_id(self) -> str:
        return f"case-{self.run}"


def repair_command() -> Callable[..., Any] | None:
    """``memwarden.repair.repair`` when that module is installed, else ``None`` (the evaluation then
    issues the selector a repair would, itself)."""
    try:
        from memwarden.repair import repair
    except ImportError:
        return None
    return repair


def prune_command() -> Callable[..., Any] | None:
    """``memwarden.pruning.prune`` when that module is installed, else ``None`` (pruning: not built)."""
    try:
        from memwarden.pruning import prune
    except ImportError:
        return None
    return prune


def path_counts(n: int, pruning: bool = True) -> dict[str, int]:
    """How many memories each path forgets in a workload of ``n`` (two of them are the derived
    records of ``lineage``; the rest are kept). ``pruning``: a pruning command exists."""
    return {ID: max(2, n // 10), QUERY: max(1, n // 20), TAGS: max(1, n // 15), SCOPE: max(1, n // 15),
            SOURCE: max(1, n // 15), SUBJECT: max(2, n // 10), HOLD: 1, REPAIR: max(2, n // 12),
            EXPIRY: max(1, n // 15), PRUNING: max(1, n // 20) if pruning else 0}


def plan(n: int, cast: Cast, pruning: bool = True) -> list[Mem]:
    """The workload of ``n`` memories (see the module doc); ``pruning``: include the memories pruning
    forgets (EVENT store kind; every other memory is PROFILE, which pruning archives, never forgets)."""
    if not MIN_MEMORIES <= n <= MAX_MEMORIES:
        raise ValueError(f"memories: between {MIN_MEMORIES} and {MAX_MEMORIES}")
    mems: list[Mem] = []

    def add(name: str, path: str, **extra: Any) -> Mem:
        marker = new_marker()
        i = len(mems)
        text = f"{name.title()}'s {_TOPICS[i % len(_TOPICS)]} entry {i}. The reference written on it reads {marker}."
        owner = cast.who(name)
        m = Mem(owner, path, text, marker, {"principal": owner, "subject": owner, "text": text, **extra})
        if i % 3 == 0 and path != LINEAGE:  # a typed fact whose value is sealed like the text
            m.fact_marker = new_marker()
            m.args["fact"] = {"entity": "profile", "attribute": f"reference_{i}", "value": f"code {m.fact_marker}"}
        mems.append(m)
        return m

    def derive(parent: Mem) -> None:
        m = add(parent.owner.split(":")[1].split("-")[0], LINEAGE, source_kind="MODEL_INFERENCE",
                quoted_span=f"reads {parent.marker}", epistemic_status="INFERRED")
        m.text = m.args["text"] = f"Summary inferred from entry {mems.index(parent)}: {m.text}"
        m.parent = parent

    counts = path_counts(n, pruning)
    for path, name, extra in ((ID, "ana", {}), (QUERY, "ana", {}), (TAGS, "ana", {"tags": [cast.tag]}),
                              (SCOPE, "cleo", {"scope": cast.scope}), (SOURCE, "cleo", {"source_ref": cast.chat_ref}),
                              (SUBJECT, "ben", {}), (HOLD, "dev", {}), (EXPIRY, "eli", {}),
                              (PRUNING, "eli", {"store_kind": "EVENT"})):
        for _ in range(counts[path]):
            add(name, path, **extra)
    derive(next(m for m in mems if m.path == TAGS))
    repair = [add(("ana", "cleo", "eli")[i % 3], REPAIR, source_ref=cast.tainted_ref) for i in range(counts[REPAIR])]
    derive(repair[0])
    kept_extras: tuple[dict[str, Any], ...] = ({"scope": cast.scope}, {"tags": [cast.tag]},
                                               {"source_ref": cast.chat_ref})
    for i in range(n - len(mems)):
        add(("ana", "cleo", "dev", "eli")[i % 4], KEPT, **(kept_extras[i] if i < len(kept_extras) else {}))
    return mems


# -- probes -------------------------------------------------------------------------------------------
def modes_returning(client: Any, m: Mem) -> list[str]:
    """The retrieval modes in which a recall by the owner, with the memory's own text, returns it."""
    return [mode for mode in MODES if _returned(client, m, mode)]


def _returned(client: Any, m: Mem, mode: str) -> bool:
    from memwarden.commands.readmodel.query import MAX_K

    found = client.recall(m.owner, m.text, k=MAX_K, mode=mode, freshness=False, include_untrusted=True)
    return any(x.memory_id == m.memory_id for x in found)


def _probes(mems: Sequence[Mem]) -> list[tuple[str, str, list[Mem]]]:
    """``(owner, query, memories)``: the memories grouped by owner, each group's query their own
    texts joined (at most ``MAX_QUERY_CHARS``). An owner's readable memories are fewer than ``MAX_K``,
    so a dense or hybrid recall returns every one of them that is readable, and a lexical one every
    one sharing a term with the query: one probe per group per mode says whether any is readable."""
    from memwarden.commands.readmodel.query import MAX_QUERY_CHARS

    out: list[tuple[str, str, list[Mem]]] = []
    for owner in dict.fromkeys(m.owner for m in mems):
        group: list[Mem] = []
        for m in (x for x in mems if x.owner == owner):
            if group and sum(len(x.text) + 1 for x in group) + len(m.text) > MAX_QUERY_CHARS:
                out.append((owner, " ".join(x.text for x in group), group))
                group = []
            group.append(m)
        out.append((owner, " ".join(x.text for x in group), group))
    return out


def still_readable(client: Any, mems: Sequence[Mem]) -> list[Mem]:
    """The memories of ``mems`` that some mode still returns to their owner, queried with their own
    words (:func:`_probes`; a mode is skipped once every memory of a group is known readable)."""
    from memwarden.commands.readmodel.query import MAX_K

    out: list[Mem] = []
    for owner, query, group in _probes(mems):
        unseen = {m.memory_id: m for m in group}
        for mode in MODES:
            found = client.recall(owner, query, k=MAX_K, mode=mode, freshness=False, include_untrusted=True)
            for x in found:
                if unseen.pop(x.memory_id, None) is not None:
                    out.append(next(m for m in group if m.memory_id == x.memory_id))
            if not unseen:
                break
    return out


def until_unreadable(client: Any, mems: Sequence[Mem], started: float,
                     timeout_s: float = UNREADABLE_TIMEOUT_S) -> tuple[float | None, list[Mem]]:
    """Probe ``mems`` in rounds (:func:`still_readable`) until no mode returns any of them; returns
    the wall clock (epoch ms) at the end of the round that found the last one gone, or ``None`` and
    the memories still readable ``timeout_s`` after ``started`` (monotonic)."""
    pending = list(mems)
    while True:
        pending = still_readable(client, pending)
        if not pending:
            return time.time() * 1000.0, []
        if time.monotonic() - started > timeout_s:
            return None, pending
        time.sleep(PROBE_PAUSE_S)


def published_ms(settings: Settings, position: dict[str, Any]) -> float | None:
    """The broker timestamp (the producer's create time: when it was published) of the command at
    ``position`` (``{topic, partition, offset}``, as a decision gives it), epoch ms."""
    from memwarden.stores.ledger import read

    p, o = int(position["partition"]), int(position["offset"])
    for rec in read(settings, "commands", {p: o + 1}, {p: o}):
        return float(rec.timestamp_ms)
    return None


def percentiles(values: Sequence[float]) -> dict[str, float | int | None]:
    """p50 / p99 (nearest rank), max and n of ``values`` in ms."""
    if not values:
        return {"p50": None, "p99": None, "max": None, "n": 0}
    ordered = sorted(values)

    def rank(q: float) -> float:
        return round(ordered[max(0, -(-int(q * 100) * len(ordered) // 100) - 1)], 1)

    return {"p50": rank(0.50), "p99": rank(0.99), "max": round(ordered[-1], 1), "n": len(ordered)}


# -- the run ------------------------------------------------------------------------------------------
class _Run:
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
        for m in self.of(ID):
            self.forget(ID, [m], lambda m=m: c.forget(m.memory_id, principal=m.owner, subject=m.owner,
                                                       reason="user request", wait=False))
        for m in self.of(QUERY):
            self.forget(QUERY, [m], lambda m=m: c.forget_matching(principal=m.owner, query=m.marker, wait=False))
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
            complete = sum(_receipt_complete(m, found, markers) for m in forgotten)
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


def _receipt_complete(m: Mem, receipts: list[dict[str, Any]], markers: list[str]) -> bool:
    for r in receipts:
        if r["memory_id"] != m.memory_id or (m.forget_id and r["command_id"] != m.forget_id):
            continue
        text = str(r)
        if (r["verified"] and set(r["stores"]) >= REQUIRED_STORES and sorted(r["key_ids"]) == list(m.key_ids)
                and len(r["key_tombstones"]) == len(m.key_ids) and not any(x in text for x in markers)):
            return True
    return False


def _ms(value: Any) -> float:
    if isinstance(value, datetime):
        return value.timestamp() * 1000.0
    return float(value)


def _path_table(ev: _Run, forgotten_now: set[str], readable_after: set[str], receipted: set[str],
                kept_readable: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path in PATHS:
        mems = ev.of(path)
        out[path] = {"forgets": sum(f.path == path for f in ev.forgets), "memories": len(mems),
                     "forgotten": sum(m.memory_id in forgotten_now for m in mems),
                     "readable_at_end": sum(m.memory_id in readable_after for m in mems),
                     "receipts": sum(m.memory_id in receipted for m in mems)}
        timed = [f.ms for f in ev.forgets if f.path == path and f.ms is not None]
        if timed:
            out[path]["unreadable_ms_max"] = round(max(timed), 1)
            out[path]["from_call_ms_max"] = round(max(f.call_ms or 0.0 for f in ev.forgets if f.path == path), 1)
    out[LINEAGE]["via"] = [TAGS, REPAIR]
    for path, how in ev.how.items():
        out[path]["how"] = how
    kept = ev.of(KEPT)
    out[KEPT] = {"forgets": 0, "memories": len(kept), "forgotten": sum(m.memory_id in forgotten_now for m in kept),
                 "readable_at_end": sum(m.memory_id in kept_readable for m in kept), "receipts": 0}
    return out


def _scan_all(ev: _Run, canaries: dict[str, str]) -> dict[str, Any]:
    """Scan every area (files raw, Kafka records decompressed, the schema's rows) and a temporary
    canary file; survivals of forgotten and kept markers."""
    from memwarden.ops.kafka_files import kafka_paths

    found: dict[str, set[str]] = {}
    stats: dict[str, dict[str, int]] = {}

    def note(area: str, hits: dict[str, set[str]]) -> None:
        for token, where in hits.items():
            found.setdefault(token, set()).update(f"{area}:{w}" for w in where)

    for area, roots in scan_areas(ev.s, ev.r.worker.log_path).items():
        hits, files, size = scan(roots)
        stats[area] = {"files": files, "bytes": size}
        note(area, hits)
    hits, decoded, failed = scan_records(kafka_paths(ev.s).data)
    stats["kafka_records"] = {"segments": decoded, "unparsed": failed}
    note("kafka_records", hits)
    hits, tables, rows = scan_rows(ev.s)
    stats["postgres_rows"] = {"tables": tables, "rows": rows}
    note("postgres_rows", hits)
    with tempfile.TemporaryDirectory(prefix="mw-eval-canary-") as tmp:
        plain = new_marker()
        (Path(tmp) / "canary.txt").write_text(f"kept on purpose: {plain}\n")
        temp_hits, _, _ = scan([Path(tmp)])
    by_marker = {x: m for m in ev.mems for x in m.markers}
    survivals = {t: sorted(w)[:6] for t, w in found.items() if t in by_marker}  # not another run's tokens
    topic_dirs = namespace_topic_dirs(ev.s)
    return {
        "areas": stats, "namespace_topic_dirs": len(topic_dirs),
        "dead_letter_dirs": sum(d.startswith(ev.s.topic("deadletter") + "-") for d in topic_dirs),
        "markers": {"forgotten": sum(len(m.markers) for m in ev.mems if m.path != KEPT),
                    "kept": sum(len(m.markers) for m in ev.mems if m.path == KEPT),
                    "in_fact_values": sum(bool(m.fact_marker) for m in ev.mems)},
        "found": {"forgotten": sum(by_marker[t].path != KEPT for t in survivals),
                  "kept": sum(by_marker[t].path == KEPT for t in survivals)},
        "survivals": [{"marker": t, "of": by_marker[t].markers[t], "path": by_marker[t].path, "where": w}
                      for t, w in survivals.items()],
        "canaries": _canaries(ev.s, found, canaries, plain in temp_hits),
        "_survived_markers": set(survivals),
    }


def _canaries(settings: Settings, found: dict[str, set[str]], canaries: dict[str, str], temp: bool) -> dict[str, bool]:
    """Where each canary was found: each must be, or the scan of that area proves nothing."""
    kafka, pg = found.get(canaries["kafka"], set()), found.get(canaries["postgres"], set())

    def topic(area: str, logical: str) -> bool:
        return any(w.startswith(f"{area}:{settings.topic(logical)}-") for w in kafka)

    return {"temp_file": temp, "kafka_commands_raw": topic("kafka_segments", "commands"),
            "kafka_deadletter_raw": topic("kafka_segments", "deadletter"),
            "kafka_commands_records": topic("kafka_records", "commands"),
            "kafka_deadletter_records": topic("kafka_records", "deadletter"),
            "postgres_wal_raw": any(w.startswith("postgres_data:pg_wal/") for w in pg),
            "postgres_rows": any(w.startswith("postgres_rows:") for w in pg)}


def run_forgetting(base: Settings, memories: int = 60, keep: bool = False, progress: bool = True,
                   lag_s: float = LAG_S) -> dict[str, Any]:
    """Run the evaluation (see the module doc); returns the JSON-ready result.

    Raises ``StackUnavailable`` when the stack is down, ``ValueError`` for a workload size out of
    range, ``MemwardenError`` when the gate refuses the planned workload."""
    from memwarden.evals.harness import eval_namespace
    from memwarden.keystore import admin_signer
    from memwarden.ops.progress import wait_caught_up
    from memwarden.producers.client import MemwardenClient
    from memwarden.producers.enroll import enroll

    cast = Cast(uuid.uuid4().hex[:6])
    mems = plan(memories, cast, pruning=prune_command() is not None)
    settings = base.model_copy(update={"keys_compaction_lag_s": lag_s, "retention_interval_s": RETENTION_S})
    began = time.monotonic()
    with eval_namespace(settings, "forget", keep, progress) as run, MemwardenClient(run.settings) as client:
        ev = _Run(run, client, mems, cast)
        enroll(client, admin_signer(run.settings), [(cast.who(n), "USER", ()) for n in _NAMES])
        ev.say(f"recording {len(mems)} memories of {len(_NAMES)} users")
        ev.record_all()
        wrapped = wrapped_keys(run.settings)
        ev.say(f"expiry: {len(ev.of(EXPIRY))} memories readable in every mode, then past expires_at")
        ev.check_readable(ev.of(EXPIRY))
        ev.expire()
        ev.say("checking every other memory is readable in every mode")
        ev.check_readable([m for m in mems if m.path != EXPIRY])
        ev.say("forgetting by id, query, tags, scope, source reference, subject, legal hold, repair")
        ev.forget_every_path()
        canaries = ev.plant_canaries()
        wait_caught_up(run.settings, alive=run.worker.alive)
        result = _finish(ev, wrapped, canaries)
        ev.say("stopping the worker, scanning every data folder")
        run.worker.stop()
        scanned = _scan_all(ev, canaries)
        survived = scanned.pop("_survived_markers")
        quoted = quoted_in_commands(run.settings, survived) if survived else {}
    for found in scanned["survivals"]:
        found["in_quoted_span_of_command"] = quoted.get(found["marker"])
    result.update(_verdict(result, scanned, memories, run.settings, time.monotonic() - began))
    return result


def _finish(ev: _Run, wrapped: dict[str, bytes], canaries: dict[str, str]) -> dict[str, Any]:
    """Readability at the end, receipts, the keys' departure from disk."""
    from memwarden.stores.pg import connect

    forgotten = [m for m in ev.mems if m.path != KEPT]
    kept = [m for m in ev.mems if m.path == KEPT]
    ev.say("final reads: every forgotten memory in every mode, every kept one")
    readable_after = {m.memory_id for m in forgotten if modes_returning(ev.client, m)}
    readable_after |= {m.memory_id for f in ev.forgets for m in f.late} | {m.memory_id for m in ev.expiry_late}
    kept_readable = {m.memory_id for m in kept if len(modes_returning(ev.client, m)) == len(MODES)}
    ev.say("waiting for the erasure receipts")
    complete, receipts = ev.receipts(forgotten)
    receipted = {m.memory_id for m in forgotten if _receipt_complete(m, receipts, [])}
    with connect(ev.s) as conn:
        gone = {str(r[0]) for r in conn.execute("SELECT memory_id FROM gate_memories WHERE forgotten").fetchall()}
    ev.say(f"waiting for the shredded keys to leave the keys topic's files (lag {ev.s.keys_compaction_lag_s} s)")
    keys = ev.keys_leave_disk(forgotten, kept, wrapped)
    expiring = {m.memory_id: _ms(m.args["expires_at"]) for m in ev.of(EXPIRY)}
    retention_ms = [_ms(r["forget_decided_at"]) - expiring[r["memory_id"]] for r in receipts
                    if r["memory_id"] in expiring]
    expected = {f.command_id: sorted(m.memory_id for m in f.expected) for f in ev.forgets}
    mismatched = [{"path": f.path, "outcome": f.outcome, "expected": len(expected[f.command_id]),
                   "forgotten": len(f.forgotten_ids)} for f in ev.forgets
                  if sorted(f.forgotten_ids) != expected[f.command_id] or f.outcome != "ACCEPTED"]
    latencies = [f.ms for f in ev.forgets if f.ms is not None]
    from_call = [f.call_ms for f in ev.forgets if f.call_ms is not None]
    paths = _path_table(ev, gone, readable_after, receipted, kept_readable)
    paths[EXPIRY]["forgets"] = len({r["command_id"] for r in receipts if r["memory_id"] in expiring})
    paths[EXPIRY]["by"] = "the gate worker's retention sweep (ForgetMatching expired_before, root admin)"
    return {
        "namespace": ev.s.topic_prefix,
        "readable_after_forget": len(readable_after),
        "receipts_complete": round(complete / len(forgotten), 4) if forgotten else 1.0,
        "legitimate_kept": round(len(kept_readable) / len(kept), 4) if kept else 1.0,
        "forget_to_unreadable_ms": {**percentiles(latencies), "unmeasured": sum(f.ms is None for f in ev.forgets)},
        "call_to_unreadable_ms": percentiles(from_call),
        "paths": paths,
        "decisions_not_as_expected": mismatched,
        "not_readable_before_forget": sum(not m.readable_before for m in ev.mems),
        "legal_hold": ev.hold,
        "expiry": {"n": len(ev.of(EXPIRY)), **ev.expiry, "readable_long_after_expiry": len(ev.expiry_late),
                   "retention_forget_after_expires_at_ms": percentiles(retention_ms)},
        "keys": keys,
        "maintenance": {"keys": f"waited for compaction (keys topic lag {ev.s.keys_compaction_lag_s} s, README bound"
                                " about 2 lags plus a few seconds)",
                        "postgres": "none: the README documents no WAL maintenance (Postgres only receives sealed"
                                    " text); no CHECKPOINT, VACUUM or pg_switch_wal was run"},
    }


def _verdict(result: dict[str, Any], scanned: dict[str, Any], memories: int, settings: Settings,
             elapsed_s: float) -> dict[str, Any]:
    canaries = scanned["canaries"]
    p99 = result["forget_to_unreadable_ms"]["p99"]
    survivals = scanned["found"]["forgotten"] + scanned["found"]["kept"]
    keys = result["keys"]
    goals = {
        "plaintext_survivals == 0": survivals == 0,
        "readable_after_forget == 0": result["readable_after_forget"] == 0,
        "receipts_complete == 1.0": result["receipts_complete"] == 1.0,
        "legitimate_kept == 1.0": result["legitimate_kept"] == 1.0,
        f"forget_to_unreadable p99 <= {GOAL_P99_MS:.0f} ms": p99 is not None and p99 <= GOAL_P99_MS
        and result["forget_to_unreadable_ms"]["unmeasured"] == 0,
        "canaries found (scan not vacuous)": all(canaries.values()),
        "every memory readable before its forget": result["not_readable_before_forget"] == 0
        and bool(result["expiry"].get("readable_just_before")),
        "held memory preserved until the lift": result["legal_hold"].get("forget_outcome") == "DEFERRED"
        and bool(result["legal_hold"].get("readable_while_held")),
        "shredded keys left the disk within the bound": keys["forgotten_keys_on_disk"] == 0
        and keys["kept_keys_on_disk"] == keys["kept_keys"],
        "every forget decided as planned": not result["decisions_not_as_expected"],
    }
    return {"memories": memories, "plaintext_survivals": survivals, "scan": scanned, "goals": goals,
            "passed": all(goals.values()), "elapsed_s": round(elapsed_s, 1)}


def render(result: dict[str, Any], console: Console) -> None:
    """A short table per path and the headline figures."""
    table = Table(title=f"forgetting, {result['memories']} memories ({result['namespace']})")
    keys = ("forgets", "memories", "forgotten", "readable_at_end", "receipts", "unreadable_ms_max")
    for col in ("path", *keys):
        table.add_column(col.replace("_", " "))
    for path, row in result["paths"].items():
        table.add_row(path, *(str(row.get(k, "-")) for k in keys))
    console.print(table)
    lat = result["forget_to_unreadable_ms"]
    console.print(f"forget → unreadable ms: p50 {lat['p50']}, p99 {lat['p99']}, max {lat['max']} (n {lat['n']})")
    for key in ("plaintext_survivals", "readable_after_forget", "receipts_complete", "legitimate_kept"):
        console.print(f"{key}: {result[key]}")
    exp, keys = result["expiry"], result["keys"]
    console.print(f"expiry: unreadable {exp.get('unreadable_after_expires_at_ms')} ms after expires_at, forgotten by"
                  f" retention {exp['retention_forget_after_expires_at_ms']['max']} ms after it")
    console.print(f"keys: {keys['forgotten_keys']} shredded keys off the keys topic's files"
                  f" {keys['left_disk_s_after_last_forget']} s after the last forget (bound {keys['bound_s']} s);"
                  f" {keys['kept_keys_on_disk']} of {keys['kept_keys']} live keys found")
    for found in result["scan"]["survivals"]:
        areas = sorted({w.split(":", 1)[0] for w in found["where"]})
        console.print(f"survival: {found['of']} of a {found['path']} memory in {', '.join(areas)}"
                      + (f" (quoted_span of command {found['in_quoted_span_of_command']})"
                         if found.get("in_quoted_span_of_command") else ""))
    for goal, ok in result["goals"].items():
        console.print(f"{'ok  ' if ok else 'FAIL'} {goal}")


__all__ = ["PATHS", "render", "run_forgetting"]
