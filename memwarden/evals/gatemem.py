"""``memwarden eval gatemem``: GateMem access control through the real pipeline (issue 4 part 8).

The office, education and household episodes are mapped to governance by the documented rules of
:mod:`memwarden.evals.gatemem_mapping` (principals, roles, scopes, grants, one record per turn;
reported apart from the store's score under ``mapping``). In one fresh namespace the harness then:

1. publishes a policy version declaring the episode scopes (``gm-*``, closed: grants needed);
2. registers every principal with a signing key (``RegisterPrincipal``) and every grant
   (``GrantAccess``), signed by the admin;
3. replays each episode in order, in rounds cut at its deletion turns (R11): a round records the
   turns up to and including the next deletion turn (``RecordMemory``, signed by the episode's
   ingest service, texts redacted per R12) through Kafka, the gate and the projections, waits until
   they are projected, asks every checkpoint whose ``as_of_turn_id`` falls before that deletion turn,
   then has the episode's ingest service carry out the request: it forgets each value the turn names
   within the requester's standing (``ForgetMatching`` by query and scopes, signed by the ingest
   service; the client resolves the query by a recall as the ingest service), waits for the gate's
   decisions and records a redacted copy of every memory forgotten (R11, R12) — so a forget happens
   after every earlier turn and before every later turn and every checkpoint asked as of the
   deletion turn or later (episode times dated after today are shifted back uniformly,
   :func:`clock_shift`);
4. for every checkpoint, recalls as the authenticated asker, as of the checkpoint's turn (valid
   time), k=10 — the store never sees a hidden field;
5. scores with :func:`memwarden.evals.gatemem_score.score`: ``leak_rate`` (privacy checkpoints whose
   returned records contain a leak target or forbidden string; goal 0), ``forget_leak_rate`` (the
   same test over the safety checkpoints, whose targets are deleted values; goal 0), ``utility``
   (every gold string present), ``over_refusal`` (nothing returned for a utility query), overall,
   ``by_domain`` and by attack type (plus the diagnostic ``forget_leak_rate_adjusted``, which ignores
   leak patterns the query itself contains and bare yes / no). The forgets' outcomes are under
   ``pipeline.forgetting``.

``--split dev|heldout`` runs one half of the episodes of each domain
(:func:`memwarden.evals.gatemem_loader.split_of`: by SHA-256 of the episode id); ``--details FILE``
writes one JSON line per checkpoint (score, hidden fields, returned texts) for failure analysis.
"""

from __future__ import annotations

import json
import time
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memwarden.epoch import from_ms
from memwarden.settings import Settings

if TYPE_CHECKING:
    from memwarden.evals.gatemem_data import DomainData, Query
    from memwarden.evals.gatemem_labels import AccessLabels
    from memwarden.evals.gatemem_plan import EpisodePlan, ForgetSpec, RecordSpec
    from memwarden.producers.client import MemwardenClient

INGEST_BATCH = 500
PURPOSE = "general"
DECISION_TIMEOUT_S = 300.0


def _dt(ms: int | None, shift: timedelta = timedelta(0)) -> datetime | None:
    return None if ms is None else from_ms(ms) - (shift if ms else timedelta(0))


def clock_shift(latest: datetime, now: datetime) -> timedelta:
    """How far to move every episode time back so the latest turn lies a day before ``now``: some
    episodes are dated after today, and the gate rightly rejects observations from the future.
    One uniform shift keeps every interval, order and as-of relation of the data."""
    return max(timedelta(0), latest - (now - timedelta(days=1)))


def _policy_document() -> str:
    from memwarden.commands.policy import default_policy

    doc = json.loads(default_policy().model_dump_json())
    doc["version"] = default_policy().version + 1
    doc["scopes"].append({"pattern": "gm-*", "open": False, "name": None})
    return json.dumps({**doc, "scopes": [{k: v for k, v in s.items() if v is not None} for s in doc["scopes"]]})


def rounds_of(plan: EpisodePlan) -> tuple[int, ...]:
    """The 0-based turn indices at which the episode's forgets happen (R11), ascending. A record at
    index ``i`` is written in round ``bisect_left(cuts, i)`` (a deletion turn closes its round), a
    checkpoint as of index ``a`` is asked in round ``bisect_right(cuts, a)`` (after the forget of its
    own turn), and the forget at ``cuts[r]`` is issued at the end of round ``r``."""
    return tuple(sorted({f.index for f in plan.forgets}))


def schedule(plans: Mapping[str, EpisodePlan], queries: Sequence[Query]) -> list[dict[str, list[Any]]]:
    """Per round: ``records`` ((plan, record) pairs), ``queries`` and ``forgets`` ((plan, spec) pairs),
    across episodes (see :func:`rounds_of`). Pure."""
    cuts = {ep: rounds_of(plan) for ep, plan in plans.items()}
    count = 1 + max((len(c) for c in cuts.values()), default=0)
    out: list[dict[str, list[Any]]] = [{"records": [], "queries": [], "forgets": []} for _ in range(count)]
    for ep, plan in plans.items():
        for r in plan.records:
            out[bisect_left(cuts[ep], r.index)]["records"].append((plan, r))
        for f in plan.forgets:
            out[bisect_left(cuts[ep], f.index)]["forgets"].append((plan, f))
    for q in queries:
        plan = plans[q.episode_id]
        as_of = plan.records_through(q.as_of_turn_id)[-1].index
        out[bisect_right(cuts[q.episode_id], as_of)]["queries"].append(q)
    return out


def _record_items(pairs: Sequence[tuple[EpisodePlan, Any]], shift: timedelta) -> list[dict[str, Any]]:
    return [{"principal": plan.writer, "subject": r.subject, "text": r.text, "scope": r.scope,
             "store_kind": r.store_kind, "sensitivity": r.sensitivity, "purposes": r.purposes,
             "attributes": dict(r.attributes), "observed_at": r.observed_at - shift,
             "source_kind": "USER_STATEMENT", "source_ref": f"{plan.episode_id}:{r.turn_id}"} for plan, r in pairs]


def _record(client: MemwardenClient, pairs: Sequence[tuple[EpisodePlan, RecordSpec]], shift: timedelta,
            live: dict[str, tuple[EpisodePlan, RecordSpec]]) -> int:
    """Record ``pairs`` in batches; note each memory id in ``live``; returns how many were sent."""
    items = _record_items(pairs, shift)
    for i in range(0, len(items), INGEST_BATCH):
        receipts = client.record_many(items[i:i + INGEST_BATCH])
        live.update((r.memory_id, pair) for r, pair in zip(receipts, pairs[i:i + INGEST_BATCH], strict=True))
    return len(items)


def _ask(client: MemwardenClient, plan: EpisodePlan, q: Query, shift: timedelta, k: int) -> tuple[list[str], float]:
    """(texts recalled for a checkpoint as its authenticated asker, as of its turn; latency ms, -1 when
    the asker is unknown to the episode and so cannot authenticate: it reads nothing)."""
    try:
        asker = plan.principal_id(q.asker_id)
    except KeyError:
        return [], -1.0
    as_of = plan.records_through(q.as_of_turn_id)[-1].observed_at - shift
    start = time.perf_counter()
    found = client.recall(asker, q.query_text[:2000], k=k, as_of=as_of, purpose=PURPOSE)
    return [m.text for m in found], (time.perf_counter() - start) * 1000


def issue_forgets(client: MemwardenClient, pairs: Sequence[tuple[EpisodePlan, ForgetSpec]]
                  ) -> tuple[Counter[str], list[str]]:
    """R11: the executor of each spec (the episode's ingest service) forgets each of its values through
    the gate, within the requester's standing scopes (``ForgetMatching`` by query and scopes, resolved
    by a recall as the executor; the value never reaches the ledger; the reason names the requester
    and its turn), then waits for every decision. A spec without standing forgets nothing.

    Returns (counts, the ids of the memories forgotten). Counts: ``commands``, ``accepted``,
    ``memories_forgotten``, ``matched_nothing`` (no memory within standing held the value),
    ``not_permitted`` (matches the executor may not forget), ``without_standing`` (values not asked
    for lack of standing) and the other outcomes as ``outcome.<OUTCOME>``."""
    receipts = [client.forget_matching(principal=f.executor, subject=f.executor, query=value, scopes=f.scopes,
                                       reason=f"erasure request by {f.requester} at {plan.episode_id}:{f.turn_id}",
                                       dry_run=False, wait=False)
                for plan, f in pairs if f.scopes for value in f.values]
    stats: Counter[str] = Counter(commands=len(receipts))
    stats["without_standing"] = sum(len(f.values) for _, f in pairs if not f.scopes)
    if not receipts:
        return stats, []
    decided = client.decided([r.command_id for r in receipts], DECISION_TIMEOUT_S)
    forgotten_ids: list[str] = []
    for d in decided.values():
        ids = list(d.get("memory_ids") or [])
        codes = {r.get("code") for r in d.get("reasons") or []}
        stats["accepted" if d["outcome"] == "ACCEPTED" else f"outcome.{d['outcome']}"] += 1
        stats["memories_forgotten"] += len(ids)
        stats["matched_nothing"] += int(not ids and "NOT_PERMITTED" not in codes)
        stats["not_permitted"] += int("NOT_PERMITTED" in codes)
        forgotten_ids.extend(ids)
    return stats, list(dict.fromkeys(forgotten_ids))


def redacted_copies(forgotten: Sequence[str], live: Mapping[str, tuple[EpisodePlan, RecordSpec]],
                    deleted: Mapping[str, Sequence[str]]) -> list[tuple[EpisodePlan, RecordSpec]]:
    """R12 for what a forget removed: for each forgotten memory the harness recorded (``live``: memory
    id -> its plan and record), a copy of its record with every value deleted so far in its episode
    (``deleted``: episode id -> values) replaced by ``[deleted]``, so the facts the turn stated next to
    a deleted value stay answerable. No copy when nothing is left but the redaction or when a deleted
    value would survive the replacement (it is never re-recorded). Pure."""
    from dataclasses import replace

    from memwarden.evals.gatemem_forgetting import REDACTED, redact
    from memwarden.producers.forgetting import contains_words

    out: list[tuple[EpisodePlan, RecordSpec]] = []
    for memory_id in forgotten:
        if memory_id not in live:
            continue
        plan, record = live[memory_id]
        values = deleted.get(plan.episode_id, ())
        text, _ = redact(record.text, values)
        if not text.replace(REDACTED, "").strip(" .,;:") or any(contains_words(text, v) for v in values):
            continue
        out.append((plan, replace(record, text=text, attributes={**record.attributes, "redacted_copy": "true"})))
    return out


def run_gatemem(base: Settings, data: Path, domains: Sequence[str] | None = None, k: int = 10,
                progress: bool = True, keep: bool = False, split: str = "all",
                details: Path | None = None, labels: Path | None = None) -> dict[str, Any]:
    """Run the evaluation (see the module docstring); returns the JSON-ready result.

    ``split`` restricts the run to the ``dev`` or ``heldout`` episodes of each domain
    (:func:`memwarden.evals.gatemem_loader.select_split`; ``all`` by default); the result names it
    under ``split``. ``details``: a JSON-lines file to write one line per scored checkpoint (its
    score, hidden fields included, and the texts returned), for failure analysis on the dev part.
    ``labels``: an access-label file (:mod:`memwarden.evals.gatemem_labels`) that decides scopes and
    READ grants instead of the rules R2/R6/R7; the result names it under ``mapping_source``.

    Raises ``StackUnavailable`` when the stack is down, ``GateMemFormatError`` on malformed data,
    ``MemwardenError`` when the setup (policy, principals, grants) is not accepted by the gate,
    ``ValueError`` on an unknown domain or split, ``AccessLabelError`` on labels that do not fit.
    """
    from memwarden.evals.gatemem_labels import labels_for
    from memwarden.evals.gatemem_loader import load_domains, select_split
    from memwarden.evals.gatemem_mapping import plan_episode, summarise_plans
    from memwarden.evals.gatemem_score import score
    from memwarden.evals.harness import eval_namespace
    from memwarden.producers.client import MemwardenClient
    from memwarden.stores.decisions import outcome_counts
    from memwarden.stores.pg import connect

    loaded = [select_split(d, split) for d in load_domains(data, tuple(domains) if domains else None)]
    source, by_episode = mapping_source(labels)
    plans = {ep_id: plan_episode(ep, labels=labels_for(by_episode, ep_id)) for d in loaded
             for ep_id, ep in d.episodes.items()}
    shift = clock_shift(max(r.observed_at for p in plans.values() for r in p.records), datetime.now(UTC))
    with eval_namespace(base, "gatemem", keep, progress) as run, MemwardenClient(run.settings) as client:
        _setup(client, run.settings, plans, run.console, shift)
        replay = _replay(client, run, plans, loaded, shift, k)
        with connect(run.settings) as conn:
            outcomes = outcome_counts(conn)
    judgements = {cid: j for d in loaded for cid, j in d.judgements.items()}
    domain_of = {q.checkpoint_id: d.domain for d in loaded for q in d.queries}
    query_texts = {q.checkpoint_id: q.query_text for d in loaded for q in d.queries}
    result = score(judgements, domain_of, replay["returned"], mapping_stats=summarise_plans(plans.values()),
                   query_texts=query_texts)
    result["split"] = {"part": split, "episodes": len(plans), "checkpoints": len(judgements)}
    result["mapping_source"] = source
    if details is not None:
        _write_details(details, judgements, domain_of, query_texts, replay["returned"])
    latencies = sorted(replay["latencies"])
    turns = sum(len(p.records) for p in plans.values())
    result["pipeline"] = {
        "turns": turns, "ingest_per_s": round(turns / replay["ingest_s"], 1),
        "gate_outcomes": {str(o): int(n) for o, n in outcomes.items()},
        "recalls": len(latencies), "recall_ms_p50": round(latencies[len(latencies) // 2], 1) if latencies else 0.0,
        "k": k, "clock_shift_days": round(shift.total_seconds() / 86400, 2), "rounds": replay["rounds"],
        "forgetting": replay["forgetting"],
    }
    return result


def mapping_source(labels: Path | None) -> tuple[dict[str, str], dict[str, AccessLabels] | None]:
    """(what decides scopes and grants, for the result: ``{"kind": "rules"}`` or ``{"kind":
    "access-labels", "file", "sha256"}``; the labels per episode, or ``None`` for the rules)."""
    import hashlib

    from memwarden.evals.gatemem_labels import load_labels

    if labels is None:
        return {"kind": "rules"}, None
    digest = hashlib.sha256(Path(labels).read_bytes()).hexdigest()
    return {"kind": "access-labels", "file": str(labels), "sha256": digest}, load_labels(labels)


def _write_details(path: Path, judgements: Mapping[str, Any], domain_of: Mapping[str, str],
                   query_texts: Mapping[str, str], returned: Mapping[str, Sequence[str]]) -> None:
    """One JSON line per scored checkpoint: its score (:class:`~memwarden.evals.gatemem_score.CheckpointScore`
    fields), the query text and the texts returned. For analysis only: it holds hidden fields."""
    from dataclasses import asdict

    from memwarden.evals.gatemem_score import score_checkpoint

    with Path(path).open("w", encoding="utf-8") as out:
        for cid, texts in returned.items():
            row = asdict(score_checkpoint(judgements[cid], domain_of[cid], texts, query_texts.get(cid, "")))
            out.write(json.dumps({**row, "query_text": query_texts.get(cid, ""), "texts": list(texts)}) + "\n")


def _setup(client: MemwardenClient, s: Settings, plans: Mapping[str, EpisodePlan], console: Any,
           shift: timedelta) -> None:
    """Policy version, principals (with signing keys held by ``client``) and grants (times moved back by
    ``shift``), each accepted."""
    from memwarden.errors import MemwardenError
    from memwarden.keystore import admin_signer
    from memwarden.producers.enroll import enroll

    admin = admin_signer(s)
    client.add_signer(admin)
    policy = client.publish_policy(_policy_document(), by=admin.principal_id, wait=False)
    if client.decisions([policy.command_id])[policy.command_id] != "ACCEPTED":
        raise MemwardenError("the evaluation policy was not accepted")
    people = {(p.principal_id, p.kind.upper(), p.roles) for plan in plans.values() for p in plan.principals}
    people |= {(plan.writer, "SERVICE", ()) for plan in plans.values()}
    enroll(client, admin, sorted(people), timeout_s=300)
    console.print(f"registered {len(people)} principals")
    grants = [client.grant_access(
        g.grantee, by=admin.principal_id, rights=tuple(sorted(g.rights)), scopes=g.scopes, subjects=g.subjects,
        purposes=g.purposes, store_kinds=tuple(k_.value for k_ in g.store_kinds),
        sensitivity_ceiling=g.sensitivity_ceiling, valid_from=_dt(g.valid_from_ms, shift),
        valid_to=_dt(g.valid_to_ms, shift),
        relationship=g.relationship, grant_id=g.grant_id, wait=False) for plan in plans.values() for g in plan.grants]
    refused = {c: o for c, o in client.decisions([g.command_id for g in grants], DECISION_TIMEOUT_S).items()
               if o != "ACCEPTED"}
    if refused:
        raise MemwardenError(f"{len(refused)} grants not accepted, e.g. {next(iter(refused.items()))}")
    console.print(f"granted {len(grants)} grants")


def _replay(client: MemwardenClient, run: Any, plans: Mapping[str, EpisodePlan], loaded: Sequence[DomainData],
            shift: timedelta, k: int) -> dict[str, Any]:
    """Step 3-4 of the module docstring: the rounds of :func:`schedule`; returns ``returned`` (texts
    per checkpoint), ``latencies`` (ms), ``ingest_s`` (recording and projection time), ``rounds``
    and ``forgetting`` (:func:`issue_forgets` counts, overall and ``by_domain``)."""
    from memwarden.ops.progress import wait_caught_up

    rounds = schedule(plans, [q for d in loaded for q in d.queries])
    returned: dict[str, list[str]] = {}
    latencies: list[float] = []
    forgetting: dict[str, Counter[str]] = {}
    live: dict[str, tuple[EpisodePlan, RecordSpec]] = {}
    deleted: dict[str, list[str]] = {}
    ingest_s = 0.0
    for n, rnd in enumerate(rounds):
        t0 = time.perf_counter()
        sent = _record(client, rnd["records"], shift, live)
        wait_caught_up(run.settings, alive=run.worker.alive, timeout_s=1800)
        ingest_s += time.perf_counter() - t0
        for q in rnd["queries"]:
            returned[q.checkpoint_id], ms = _ask(client, plans[q.episode_id], q, shift, k)
            if ms >= 0:
                latencies.append(ms)
        for plan, f in rnd["forgets"]:
            deleted.setdefault(plan.episode_id, []).extend(f.values)
        for domain in dict.fromkeys(plan.domain for plan, _ in rnd["forgets"]):
            counts, forgotten = issue_forgets(client, [(p, f) for p, f in rnd["forgets"] if p.domain == domain])
            copies = redacted_copies(forgotten, live, deleted)
            counts["redacted_copies"] += _record(client, copies, shift, live)
            forgetting.setdefault(domain, Counter()).update(counts)
        run.console.print(f"round {n + 1}/{len(rounds)}: {sent} turns, {len(rnd['queries'])} checkpoints, "
                          f"{sum(len(f.values) for _, f in rnd['forgets'])} forgets")
    total: Counter[str] = Counter()
    for counts in forgetting.values():
        total.update(counts)
    summary = {**dict(sorted(total.items())), "by_domain": {d: dict(sorted(c.items())) for d, c in forgetting.items()}}
    return {"returned": returned, "latencies": latencies, "ingest_s": ingest_s, "rounds": len(rounds),
            "forgetting": summary}
