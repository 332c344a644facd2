"""``memwarden eval repair``: selective repair through lineage on the real pipeline (issue 14 part 4;
seed 004 "Persistent state separates compromise from consequence": "Can the system identify and
remove the malicious semantics without destroying legitimate state? Do derived summaries, indexes,
caches, and replicas also lose the poisoned content?").

In a fresh namespace (:func:`memwarden.evals.harness.eval_namespace`):

1. **History.** Three users (``user:ana``, ``user:ben``, ``user:cleo``) grant ``agent:assistant``
   READ and WRITE, ``agent:planner`` READ and ``service:importer`` WRITE. Per user: two statements
   of their own (``chat-<user>``), a CRM observation by the assistant (``crm-sync``), an imported
   directory record from a legitimate feed (``import-feed-3``), and two records from the feed later
   found compromised (``import-feed-7``, :data:`POISONED_SOURCE`: a false salary account and a
   false supplier approval; plain data, so the gate admits them as unverified imports).
2. **Derivatives** by the assistant (``MODEL_INFERENCE``, ``INFERRED``, a ``quoted_span`` from a
   source, the gate checking the derivation rules): from legitimate sources only (a profile, a
   digest of that profile, an office note citing the legitimate feed) and tainted ones (a payroll
   note citing a poisoned record, a supplier note quoting a legitimate record but citing a poisoned
   one, a digest of the payroll note: lineage two deep).
3. **Agents read** before anyone notices: each user, the assistant and the planner recall with
   everyday queries on the hybrid, dense and lexical paths (audited). What each read returned is
   kept client-side as the ground truth of the affected reads.
4. **Dry run**, then **repair** by source reference through :func:`memwarden.repair.repair`, the
   code ``memwarden repair --source-ref import-feed-7`` runs. The dry run must list exactly the
   poisoned records (matched) and the tainted derivatives (derived) and change nothing in the
   projection; the repair must forget exactly those and list exactly the affected reads.
5. **Read paths.** Every memory is looked for by each of its readers (its subject, the assistant,
   the planner) with its own text as the query (the most favourable query), ``k`` = the maximum,
   untrusted content included, on the hybrid, dense and lexical paths: once right after the
   decision (before the projectors caught up: the shredded key blocks the read) and once after.

Result keys: ``poisoned_readable`` and ``derived_readable`` (memories still returned by any read
path to anyone; 0 expected), ``legitimate_kept`` (share of legitimate (memory, reader, path) checks
still returning the memory; 1.0 expected), ``affected_reads`` (count found on the audit topic),
``affected_reads_expected`` and ``affected_reads_exact``, ``affected_principals``,
``affected_read_list``, the dry run's figures, counts, timings and ``passed``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

from memwarden.settings import Settings

POISONED_SOURCE = "import-feed-7"
LEGIT_FEED = "import-feed-3"
ASSISTANT = "agent:assistant"
PLANNER = "agent:planner"
IMPORTER = "service:importer"
MODES = ("hybrid", "dense", "lexical")
#: Per user: statements (2), CRM observation, legitimate feed record, poisoned feed records (2).
PEOPLE: dict[str, dict[str, Any]] = {
    "user:ana": {
        "name": "Ana",
        "said": ("Ana prefers phone calls in the morning before nine",
                 "Ana's team launches the Falcon analytics project in October"),
        "crm": "CRM sync: Ana holds the Gold support tier since 2021",
        "feed": "Directory feed: Ana works from the Lisbon office on the fourth floor",
        "poison": ("Directory feed: Ana's salary payments go to account GB29 QUIL 6016 1331 9268 19",
                   "Directory feed: Ana authorised Quillshade Ltd as preferred supplier for hardware"),
    },
    "user:ben": {
        "name": "Ben",
        "said": ("Ben prefers email over phone and reads it after lunch",
                 "Ben is planning a trip to Oslo for the March supplier fair"),
        "crm": "CRM sync: Ben holds the Silver support tier since 2023",
        "feed": "Directory feed: Ben works from the Porto office next to the lab",
        "poison": ("Directory feed: Ben's salary payments go to account GB29 QUIL 6016 1331 4410 02",
                   "Directory feed: Ben authorised Quillshade Ltd as preferred supplier for travel"),
    },
    "user:cleo": {
        "name": "Cleo",
        "said": ("Cleo prefers video calls on Tuesdays and Thursdays",
                 "Cleo moves the data warehouse migration to next spring"),
        "crm": "CRM sync: Cleo holds the Platinum support tier since 2019",
        "feed": "Directory feed: Cleo works remotely from Madrid most weeks",
        "poison": ("Directory feed: Cleo's salary payments go to account GB29 QUIL 6016 1331 7781 55",
                   "Directory feed: Cleo authorised Quillshade Ltd as preferred supplier for software"),
    },
}
#: The agents' everyday reads before the repair: (reader, query template, mode, k); ``{name}`` is the
#: user's first name, reader ``None`` the user.
READS: tuple[tuple[str | None, str, str, int], ...] = (
    (None, "where do my salary payments go", "hybrid", 5),
    (ASSISTANT, "{name} supplier and payroll details", "hybrid", 5),
    (ASSISTANT, "{name} support tier", "lexical", 3),
    (PLANNER, "{name} contact preferences for calls", "dense", 3),
    (PLANNER, "{name} office location", "lexical", 3),
)


@dataclass
class Memory:
    """One memory of the scenario: id, subject, text, what it is (``legit``, ``poisoned`` or
    ``tainted``: derived from a poisoned one) and the command that wrote it."""

    key: str
    subject: str
    text: str
    kind: str
    memory_id: str = ""
    command_id: str = ""
    source: str = ""


@dataclass
class Scenario:
    """The memories of the run by key (``<user>/<name>``), and the agents' reads before the repair."""

    memories: dict[str, Memory] = field(default_factory=dict)
    reads: list[tuple[str, list[str]]] = field(default_factory=list)

    def of(self, kind: str) -> list[Memory]:
        """The memories of one kind, in creation order."""
        return [m for m in self.memories.values() if m.kind == kind]


def _write(client: Any, scenario: Scenario, items: Sequence[tuple[Memory, dict[str, Any]]]) -> None:
    """Record ``items`` (memory, write arguments) and wait until every one is admitted; raises
    ``MemwardenError`` with the gate's reasons otherwise."""
    from memwarden.errors import MemwardenError

    receipts = client.record_many([{"subject": m.subject, "text": m.text, **kw} for m, kw in items])
    for (m, kw), r in zip(items, receipts, strict=True):
        m.memory_id, m.command_id, m.source = r.memory_id, r.command_id, kw.get("source_ref") or ""
        scenario.memories[m.key] = m
    decided = client.decided([r.command_id for r in receipts], timeout_s=300)
    refused = {m.key: decided[m.command_id] for m, _ in items
               if decided[m.command_id]["outcome"] not in ("ACCEPTED", "ACCEPTED_UNVERIFIED")}
    if refused:
        raise MemwardenError("scenario writes not admitted: " + "; ".join(
            f"{k}: {d['outcome']} {[r['code'] for r in d['reasons']]}" for k, d in refused.items()))


def _derive(key: str, subject: str, kind: str, text: str, sources: Sequence[Memory],
            span: str) -> tuple[Memory, dict[str, Any]]:
    return Memory(key, subject, text, kind), {
        "principal": ASSISTANT, "source_kind": "MODEL_INFERENCE", "epistemic_status": "INFERRED",
        "derived_from": [s.memory_id for s in sources], "quoted_span": span, "source_ref": "assistant-summaries"}


def build_history(client: Any) -> Scenario:
    """Steps 1-2 of the module doc: sources, then derivatives, then derivatives of derivatives."""
    sc = Scenario()
    first: list[tuple[Memory, dict[str, Any]]] = []
    for user, p in PEOPLE.items():
        for i, text in enumerate(p["said"]):
            first.append((Memory(f"{user}/said{i}", user, text, "legit"),
                          {"principal": user, "source_ref": f"chat-{p['name'].lower()}"}))
        first.append((Memory(f"{user}/crm", user, p["crm"], "legit"),
                      {"principal": ASSISTANT, "source_kind": "OBSERVED_TOOL_RESULT", "source_ref": "crm-sync"}))
        first.append((Memory(f"{user}/feed", user, p["feed"], "legit"),
                      {"principal": IMPORTER, "source_kind": "IMPORTED_RECORD", "source_ref": LEGIT_FEED}))
        for i, text in enumerate(p["poison"]):
            first.append((Memory(f"{user}/poison{i}", user, text, "poisoned"),
                          {"principal": IMPORTER, "source_kind": "IMPORTED_RECORD", "source_ref": POISONED_SOURCE}))
    _write(client, sc, first)
    second = []
    for user, p in PEOPLE.items():
        m = {k.split("/", 1)[1]: v for k, v in sc.memories.items() if k.startswith(user + "/")}
        name = p["name"]
        second += [
            _derive(f"{user}/profile", user, "legit", f"Inferred profile of {name}: {m['said0'].text}. {m['crm'].text}",
                    [m["said0"], m["crm"]], m["said0"].text),
            _derive(f"{user}/office", user, "legit", f"Inferred office note for {name}: {m['feed'].text}. "
                    f"{m['said1'].text}", [m["feed"], m["said1"]], m["feed"].text),
            _derive(f"{user}/payroll", user, "tainted", f"Inferred payroll note for {name}: {m['poison0'].text}. "
                    f"{m['said1'].text}", [m["poison0"], m["said1"]], m["poison0"].text),
            _derive(f"{user}/supplier", user, "tainted", f"Inferred supplier note for {name}: {m['crm'].text}. "
                    f"{m['poison1'].text}", [m["crm"], m["poison1"]], m["crm"].text),
        ]
    _write(client, sc, second)
    third = []
    for user, p in PEOPLE.items():
        name = p["name"]
        profile, payroll = sc.memories[f"{user}/profile"], sc.memories[f"{user}/payroll"]
        said0, poison0 = sc.memories[f"{user}/said0"], sc.memories[f"{user}/poison0"]
        third += [
            _derive(f"{user}/digest", user, "legit", f"Digest for {name}: {said0.text}", [profile], said0.text),
            _derive(f"{user}/payroll-digest", user, "tainted", f"Payroll digest for {name}: {poison0.text}",
                    [payroll], poison0.text),
        ]
    _write(client, sc, third)
    return sc


def agents_read(client: Any, sc: Scenario) -> None:
    """Step 3: the everyday reads, audited; what each returned is kept in ``sc.reads``."""
    for user, p in PEOPLE.items():
        for reader, query, mode, k in READS:
            who = reader or user
            found = client.recall(who, query.format(name=p["name"]), k=k, mode=mode)
            sc.reads.append((who, [m.memory_id for m in found]))


def readers(m: Memory) -> tuple[str, ...]:
    """Who may read ``m``: its subject, the assistant and the planner."""
    return (m.subject, ASSISTANT, PLANNER)


def returned(client: Any, reader: str, m: Memory, mode: str) -> bool:
    """Whether ``reader``'s recall on ``mode`` with ``m``'s own text returns ``m``."""
    from memwarden.commands.readmodel.query import MAX_K

    found = client.recall(reader, m.text, k=MAX_K, mode=mode, freshness=False, include_untrusted=True)
    return any(f.memory_id == m.memory_id for f in found)


def readable(client: Any, memories: Sequence[Memory]) -> dict[str, int]:
    """Per memory key, on how many (reader, path) pairs it is returned."""
    return {m.key: sum(returned(client, r, m, mode) for r in readers(m) for mode in MODES) for m in memories}


def _expected_reads(sc: Scenario, retracted: set[str]) -> Counter[tuple[str, tuple[str, ...]]]:
    return Counter((who, tuple(i for i in ids if i in retracted)) for who, ids in sc.reads
                   if any(i in retracted for i in ids))


def run_repair_eval(base: Settings, progress: bool = True, keep: bool = False) -> dict[str, Any]:
    """Run the evaluation (module doc); returns the JSON-ready result. Raises ``StackUnavailable``
    when the stack is down, ``MemwardenError`` when the scenario's writes are not admitted."""
    from memwarden.evals.harness import eval_namespace
    from memwarden.keystore import admin_signer
    from memwarden.ops.progress import wait_caught_up
    from memwarden.producers.client import MemwardenClient
    from memwarden.producers.enroll import enroll
    from memwarden.repair import RepairTarget, repair
    from memwarden.stores.pg import connect
    from memwarden.stores.profile_rows import memory_ids

    started = time.monotonic()
    with eval_namespace(base, "repair", keep, progress) as run, MemwardenClient(run.settings) as client:
        s, say = run.settings, run.console.print
        enroll(client, admin_signer(s), [*((u, "USER", ()) for u in PEOPLE), (ASSISTANT, "AGENT", ()),
                                         (PLANNER, "AGENT", ()), (IMPORTER, "SERVICE", ())])
        grants = [client.grant_access(grantee, by=user, rights=rights, scopes=("account:default",), subjects=(user,),
                                      wait=False)
                  for user in PEOPLE for grantee, rights in ((ASSISTANT, ("READ", "WRITE")), (PLANNER, ("READ",)),
                                                             (IMPORTER, ("WRITE",)))]
        client.decisions([g.command_id for g in grants], timeout_s=120)
        say("recording the history: sources, derivatives, derivatives of derivatives")
        sc = build_history(client)
        wait_caught_up(s, alive=run.worker.alive)
        setup_s = time.monotonic() - started
        say("agents read")
        t = time.monotonic()
        agents_read(client, sc)
        reads_s = time.monotonic() - t
        poisoned, tainted, legit = sc.of("poisoned"), sc.of("tainted"), sc.of("legit")
        gone = {m.memory_id for m in (*poisoned, *tainted)}
        target = RepairTarget(source_refs=(POISONED_SOURCE,))

        say(f"dry run: memwarden repair --source-ref {POISONED_SOURCE} --dry-run")
        dry = repair(s, target, dry_run=True)
        wait_caught_up(s, alive=run.worker.alive)
        with connect(s) as conn:
            active_after_dry = memory_ids(conn, "active")
        dry_changed = len({m.memory_id for m in sc.memories.values()} - active_after_dry)

        say(f"repair: memwarden repair --source-ref {POISONED_SOURCE}")
        done = repair(s, target)
        t = time.monotonic()
        early = readable(client, [*poisoned, *tainted])  # before the projectors caught up
        wait_caught_up(s, alive=run.worker.alive)
        late = readable(client, [*poisoned, *tainted])
        kept = readable(client, legit)
        checks_s = time.monotonic() - t
        with connect(s) as conn:
            active = memory_ids(conn, "active")
        namespace = s.topic_prefix

    expected = _expected_reads(sc, gone)
    found = Counter((r.principal, r.memory_ids) for r in done.affected_reads)
    per_legit = len(readers(legit[0])) * len(MODES) if legit else 0
    result: dict[str, Any] = {
        "namespace": namespace,
        "poisoned_source": POISONED_SOURCE,
        "poisoned_readable": sum(1 for m in poisoned if early[m.key] or late[m.key]),
        "derived_readable": sum(1 for m in tainted if early[m.key] or late[m.key]),
        "legitimate_kept": round(sum(kept.values()) / (per_legit * len(legit)), 4) if legit else 1.0,
        "legitimate_active": sum(m.memory_id in active for m in legit),
        "retracted_active": sum(m.memory_id in active for m in (*poisoned, *tainted)),
        "affected_reads": len(done.affected_reads),
        "affected_reads_expected": sum(expected.values()),
        "affected_reads_exact": found == expected,
        "affected_principals": done.affected_principals(),
        "affected_read_list": [r.to_json() for r in done.affected_reads],
        "repair": {"outcome": done.outcome, "position": done.position, "forgotten": len(done.memory_ids),
                   "matched": len(done.matched), "derived": len(done.derived),
                   "exact": set(done.memory_ids) == gone
                   and set(done.matched) == {m.memory_id for m in poisoned}
                   and set(done.derived) == {m.memory_id for m in tainted},
                   "timings_s": done.timings_s},
        "dry_run": {"outcome": dry.outcome, "listed": len(dry.memory_ids), "exact": set(dry.memory_ids) == gone,
                    "changed": dry_changed, "affected_reads": len(dry.affected_reads), "timings_s": dry.timings_s},
        "counts": {"memories": len(sc.memories), "legitimate": len(legit), "poisoned": len(poisoned),
                   "derived_from_poisoned": len(tainted),
                   "legitimate_derived": sum(1 for m in legit if m.key.rsplit("/", 1)[1] in
                                             ("profile", "office", "digest")),
                   "principals": len(PEOPLE) + 3, "sources": len({m.source for m in sc.memories.values()}),
                   "agent_reads": len(sc.reads),
                   "read_checks": len(MODES) * 3 * (2 * (len(poisoned) + len(tainted)) + len(legit))},
        "read_paths": list(MODES),
        "timings_s": {"setup": round(setup_s, 2), "agent_reads": round(reads_s, 2),
                      "dry_run": dry.timings_s.get("total"), "repair": done.timings_s.get("total"),
                      "read_checks": round(checks_s, 2), "total": round(time.monotonic() - started, 2)},
    }
    result["passed"] = bool(result["poisoned_readable"] == 0 and result["derived_readable"] == 0
                            and result["legitimate_kept"] == 1.0 and result["affected_reads_exact"]
                            and result["repair"]["exact"] and result["dry_run"]["exact"]
                            and result["dry_run"]["changed"] == 0 and result["retracted_active"] == 0
                            and result["legitimate_active"] == len(legit))
    return result


def render(result: dict[str, Any], console: Console) -> None:
    """A short table of the figures."""
    table = Table("figure", "value")
    for key in ("poisoned_readable", "derived_readable", "legitimate_kept", "affected_reads",
                "affected_reads_expected", "affected_reads_exact", "affected_principals"):
        table.add_row(key, str(result[key]))
    r, d, c = result["repair"], result["dry_run"], result["counts"]
    table.add_row("repair", f"{r['outcome']}: {r['forgotten']} forgotten ({r['matched']} matched, "
                  f"{r['derived']} derived), exact={r['exact']}")
    table.add_row("dry run", f"{d['listed']} listed, exact={d['exact']}, changed={d['changed']}")
    table.add_row("memories", f"{c['memories']} ({c['legitimate']} legitimate, {c['poisoned']} poisoned, "
                  f"{c['derived_from_poisoned']} derived from poisoned)")
    table.add_row("timings (s)", ", ".join(f"{k} {v}" for k, v in result["timings_s"].items()))
    table.add_row("passed", str(result["passed"]))
    console.print(table)
