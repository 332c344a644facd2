"""Gate workers scaling by partition (issue 11 part 3): decided commands/s with one and with two
gate-only workers on the same load, and how long the survivor takes over a killed worker's
partitions. Not a test (``tests/integration/test_gate_scaling.py`` is).

    .venv/bin/python bench/gate_scaling_bench.py [--commands 3000] [--repeat 3] [--session 6] [--json]

Throughput: for 1 and then 2 workers, a fresh namespace (``MEMWARDEN_PARTITIONS`` partitions,
default 4), that many ``memwarden worker --role gate`` processes, waited for until the consumer
group has spread every partition over them; then ``--commands`` signed ``RecordMemory`` commands
from 8 subjects spread evenly over the partitions are published as fast as the client goes
(``record_many``, 250 a call) and timed from the first publish until the gate stored the last
decision (rows in ``gate_decisions``); ``--repeat`` runs of each, interleaved, median and best.
No projector runs: the figure is the gate's alone (full gate: signatures, policy, detector, claims,
decision rows and governed state in Postgres).

Takeover: in a fresh namespace with two workers, a steady load of ``--rate`` writes/s (records,
supersessions, forgets) runs, one worker is SIGKILLed; ``regroup_s`` is the time until the group
gave every partition to the survivor (bounded by the session timeout ``--session``), ``takeover_s``
the time until the first decision of a command on a partition the killed worker held. The ledger's
verdict over that load (lost, duplicated, diverged) is printed too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memwarden.bootstrap import drop_projections  # noqa: E402
from memwarden.commands.signing import Signer  # noqa: E402
from memwarden.evals.gate_scaling import (  # noqa: E402
    SpreadLoad,
    ledger_decisions,
    spread_subjects,
    stable_assignment,
    takeover_s,
    verdict,
)
from memwarden.keystore import admin_signer  # noqa: E402
from memwarden.ops.pidfiles import free_port  # noqa: E402
from memwarden.ops.topics import delete_topics, ensure_topics  # noqa: E402
from memwarden.ops.worker_process import WorkerProcess  # noqa: E402
from memwarden.producers.client import MemwardenClient  # noqa: E402
from memwarden.settings import Settings  # noqa: E402
from memwarden.stores.decisions import outcome_counts  # noqa: E402
from memwarden.stores.pg import connect, migrate  # noqa: E402


def decided_count(settings: Settings) -> int:
    """How many commands the gate of ``settings`` has decided (rows in ``gate_decisions``)."""
    with connect(settings) as conn:
        return sum(outcome_counts(conn).values())


def wait_decided(settings: Settings, n: int, timeout_s: float = 600.0) -> float:
    """Wait until ``n`` commands are decided; returns ``time.time()`` then."""
    deadline = time.monotonic() + timeout_s
    while decided_count(settings) < n:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {decided_count(settings)} of {n} decided after {timeout_s:.0f}s")
        time.sleep(0.05)
    return time.time()


def start_gate(settings: Settings, log_path: Path, timeout_s: float = 120.0) -> WorkerProcess:
    """A gate-only worker with its own ``/health`` port, once it answers there."""
    own = settings.model_copy(update={"health_port": free_port()})
    worker = WorkerProcess(own, ("gate",), log_path=log_path).start()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and worker.alive():
        try:
            if httpx.get(f"http://{own.worker_host}:{own.health_port}/health", timeout=1.0).status_code == 200:
                return worker
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"gate worker did not answer; see {log_path}")


@contextmanager
def namespace(base: Settings, label: str, workers: int) -> Iterator[tuple[Settings, list[WorkerProcess]]]:
    """A fresh namespace with ``workers`` gate-only workers holding every partition; dropped after."""
    s = base.model_copy(update={"topic_prefix": f"{base.topic_prefix}.{label}-{uuid.uuid4().hex[:8]}"})
    migrate(s)
    ensure_topics(s)
    logs = s.data_dir / "logs"
    running: list[WorkerProcess] = []
    try:
        for i in range(workers):
            running.append(start_gate(s, logs / f"worker-{s.topic_prefix}-gate{i}.log"))
        stable_assignment(s, members=workers, timeout_s=120)
        yield s, running
    finally:
        for w in running:
            w.stop()
        drop_projections(s)
        delete_topics(s)


def enrolled(client: MemwardenClient, settings: Settings, subjects: list[str]) -> int:
    """Register ``subjects`` through the root admin without a read API (waits on the gate's rows);
    returns how many commands are decided then."""
    admin = admin_signer(settings)
    client.add_signer(admin)
    for subject in subjects:
        signer = Signer.generate(subject)
        client.add_signer(signer)
        client.register_principal(signer.principal_id, by=admin.principal_id, kind="USER", roles=(),
                                  public_key=signer.public_key, key_id=signer.key_id, wait=False)
    wait_decided(settings, len(subjects))
    return len(subjects)


def throughput(base: Settings, workers: int, n: int) -> dict[str, float]:
    """Decided commands/s of ``workers`` gate workers on ``n`` records published at once."""
    with namespace(base, f"gscale{workers}", workers) as (s, _), MemwardenClient(s) as client:
        subjects = spread_subjects(s.partitions, per_partition=2)
        before = enrolled(client, s, subjects)
        started = time.time()
        for i in range(0, n, 250):
            client.record_many([{"principal": subjects[j % len(subjects)], "subject": subjects[j % len(subjects)],
                                 "text": f"scaling bench note {j}: an ordinary fact about day {j % 97}"}
                                for j in range(i, min(n, i + 250))])
        published = time.time()
        done = wait_decided(s, before + n)
    return {"decided_per_s": round(n / (done - started), 1), "publish_s": round(published - started, 2),
            "wall_s": round(done - started, 2)}


def takeover(base: Settings, session_s: float, rate_hz: float) -> dict[str, Any]:
    """Kill one of two gate workers under a steady load; time the regrouping and the takeover."""
    s0 = base.model_copy(update={"session_timeout_s": session_s})
    with namespace(s0, "gtakeover", 2) as (s, workers), MemwardenClient(s) as client:
        subjects = spread_subjects(s.partitions, per_partition=2)
        before = enrolled(client, s, subjects)
        two = stable_assignment(s, members=2)
        load = SpreadLoad(client, subjects, rate_hz=rate_hz)
        load.start()
        try:
            time.sleep(5.0)
            workers[0].kill()
            killed = time.time()
            alone = stable_assignment(s, members=1, timeout_s=session_s * 6)
            regrouped = time.time()
            time.sleep(3.0)
        finally:
            load.stopping.set()
            load.join(60)
        wait_decided(s, before + len(load.acks))
        (survivor,) = alone
        orphaned = [p for m, ps in two.items() if m != survivor for p in ps]
        decided = ledger_decisions(s)
        found = verdict(load.acks, decided)
    return {"session_timeout_s": session_s, "orphaned_partitions": orphaned,
            "regroup_s": round(regrouped - killed, 2), "takeover_s": takeover_s(decided, orphaned, killed),
            "acknowledged": found["acknowledged"], "lost": len(found["lost"]),
            "duplicated": len(found["duplicated"]), "diverged": len(found["diverged"]), "resent": found["resent"]}


def summary(runs: list[dict[str, float]]) -> dict[str, Any]:
    """Median and best decided/s of ``runs``, with every run's figure."""
    rates = sorted(r["decided_per_s"] for r in runs)
    return {"decided_per_s_median": statistics.median(rates), "decided_per_s_best": rates[-1],
            "decided_per_s_runs": [r["decided_per_s"] for r in runs]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commands", type=int, default=3000, help="records per throughput run")
    parser.add_argument("--repeat", type=int, default=3, help="throughput runs per worker count, interleaved")
    parser.add_argument("--session", type=float, default=6.0, help="group session timeout (s) of the takeover run")
    parser.add_argument("--rate", type=float, default=25.0, help="writes/s of the takeover run's load")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    base = Settings()
    runs: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    for _ in range(args.repeat):
        for workers in (1, 2):  # interleaved: a busy moment of the machine hits both alike
            runs[workers].append(throughput(base, workers, args.commands))
    one, two = summary(runs[1]), summary(runs[2])
    result = {"commands": args.commands, "partitions": base.partitions, "cores": os.cpu_count(),
              "load_average_1m": round(os.getloadavg()[0], 2), "one_worker": one, "two_workers": two,
              "speedup_median": round(two["decided_per_s_median"] / one["decided_per_s_median"], 2),
              "takeover": takeover(base, args.session, args.rate)}
    if args.json:
        print(json.dumps(result))
        return
    t = result["takeover"]
    print(f"{args.commands} records, {base.partitions} partitions, median of {args.repeat}: 1 gate worker "
          f"{one['decided_per_s_median']}/s, 2 gate workers {two['decided_per_s_median']}/s "
          f"(x{result['speedup_median']}; {result['cores']} cores, load average {result['load_average_1m']})")
    print(f"kill of 1 of 2 workers (session {t['session_timeout_s']} s): group regrouped after {t['regroup_s']} s, "
          f"first decision on its partitions after {t['takeover_s']} s; {t['acknowledged']} acknowledged, "
          f"lost {t['lost']}, duplicated {t['duplicated']}, diverged {t['diverged']}, re-sent {t['resent']}")


if __name__ == "__main__":
    main()
