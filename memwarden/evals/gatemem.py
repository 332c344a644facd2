"""``memwarden eval gatemem``: GateMem access control through the real pipeline (issue 4 part 8).

The office, education and household episodes are mapped to governance by the documented rules of
:mod:`memwarden.evals.gatemem_mapping` (principals, roles, scopes, grants, one record per turn;
reported apart from the store's score under ``mapping``). In one fresh namespace the harness then:

1. publishes a policy version declaring the episode scopes (``gm-*``, closed: grants needed);
2. registers every principal with a signing key (``RegisterPrincipal``) and every grant
   (``GrantAccess``), signed by the admin;
3. records every turn (``RecordMemory``, signed by the episode's ingest service) through Kafka, the
   gate and the projections;
   (episode times dated after today are shifted back uniformly, :func:`clock_shift`);
4. for every checkpoint, recalls as the authenticated asker, as of the checkpoint's turn (valid
   time), k=10 — the store never sees a hidden field;
5. scores with :func:`memwarden.evals.gatemem_score.score`: ``leak_rate`` (privacy checkpoints whose
   returned records contain a leak target or forbidden string; goal 0), ``utility`` (every gold
   string present), ``over_refusal`` (nothing returned for a utility query), overall and
   ``by_domain``. Forgetting (safety) checkpoints are skipped until the forgetting issue.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memwarden.epoch import from_ms
from memwarden.settings import Settings

INGEST_BATCH = 500
PURPOSE = "general"


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


def run_gatemem(base: Settings, data: Path, domains: Sequence[str] | None = None, k: int = 10,
                progress: bool = True, keep: bool = False) -> dict[str, Any]:
    """Run the evaluation (see the module docstring); returns the JSON-ready result.

    Raises ``StackUnavailable`` when the stack is down, ``GateMemFormatError`` on malformed data,
    ``MemwardenError`` when the setup (policy, principals, grants) is not accepted by the gate.
    """
    from memwarden.errors import MemwardenError
    from memwarden.evals.gatemem_loader import load_domains
    from memwarden.evals.gatemem_mapping import plan_episode, summarise_plans
    from memwarden.evals.gatemem_score import score
    from memwarden.evals.harness import eval_namespace
    from memwarden.keystore import admin_signer
    from memwarden.ops.progress import wait_caught_up
    from memwarden.producers.client import MemwardenClient
    from memwarden.producers.enroll import enroll
    from memwarden.stores.decisions import outcome_counts
    from memwarden.stores.pg import connect

    loaded = load_domains(data, tuple(domains) if domains else None)
    plans = {ep_id: plan_episode(ep) for d in loaded for ep_id, ep in d.episodes.items()}
    shift = clock_shift(max(r.observed_at for p in plans.values() for r in p.records), datetime.now(UTC))
    with eval_namespace(base, "gatemem", keep, progress) as run, MemwardenClient(run.settings) as client:
        s, console = run.settings, run.console
        admin = admin_signer(s)
        client.add_signer(admin)
        policy = client.publish_policy(_policy_document(), by=admin.principal_id)
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
            relationship=g.relationship, grant_id=g.grant_id) for plan in plans.values() for g in plan.grants]
        refused = {c: o for c, o in client.decisions([g.command_id for g in grants], 300).items() if o != "ACCEPTED"}
        if refused:
            raise MemwardenError(f"{len(refused)} grants not accepted, e.g. {next(iter(refused.items()))}")
        console.print(f"granted {len(grants)} grants")
        t0 = time.perf_counter()
        items = [{"principal": plan.writer, "subject": r.subject, "text": r.text, "scope": r.scope,
                  "store_kind": r.store_kind, "sensitivity": r.sensitivity, "purposes": r.purposes,
                  "attributes": dict(r.attributes), "observed_at": r.observed_at - shift,
                  "source_kind": "USER_STATEMENT",
                  "source_ref": f"{plan.episode_id}:{r.turn_id}"} for plan in plans.values() for r in plan.records]
        for i in range(0, len(items), INGEST_BATCH):
            client.record_many(items[i:i + INGEST_BATCH])
        wait_caught_up(s, alive=run.worker.alive, timeout_s=1800)
        ingest_s = time.perf_counter() - t0
        console.print(f"ingested {len(items)} turns in {ingest_s:.0f} s")
        with connect(s) as conn:
            outcomes = outcome_counts(conn)
        returned: dict[str, list[str]] = {}
        domain_of: dict[str, str] = {}
        latencies: list[float] = []
        for d in loaded:
            for q in d.queries:
                plan = plans[q.episode_id]
                domain_of[q.checkpoint_id] = d.domain
                try:
                    asker = plan.principal_id(q.asker_id)
                except KeyError:  # an asker the episode does not know cannot authenticate: reads nothing
                    returned[q.checkpoint_id] = []
                    continue
                as_of = plan.records_through(q.as_of_turn_id)[-1].observed_at - shift
                start = time.perf_counter()
                found = client.recall(asker, q.query_text[:2000], k=k, as_of=as_of, purpose=PURPOSE)
                latencies.append((time.perf_counter() - start) * 1000)
                returned[q.checkpoint_id] = [m.text for m in found]
    judgements = {cid: j for d in loaded for cid, j in d.judgements.items()}
    result = score(judgements, domain_of, returned, mapping_stats=summarise_plans(plans.values()))
    latencies.sort()
    result["pipeline"] = {
        "turns": len(items), "ingest_per_s": round(len(items) / ingest_s, 1),
        "gate_outcomes": {str(o): int(n) for o, n in outcomes.items()},
        "recalls": len(latencies), "recall_ms_p50": round(latencies[len(latencies) // 2], 1) if latencies else 0.0,
        "k": k, "clock_shift_days": round(shift.total_seconds() / 86400, 2),
    }
    return result
