"""Recall as a user pays it (issue 11 part 2): ``memwarden bench recall``.

For each size, in a fresh namespace of the local stack:

1. **Governance through the gate.** A worker (gate and projector) runs; the world's principals
   (:mod:`memwarden.evals.recall_world`) are registered with their keys and its grants issued by the
   admin, all as signed commands the gate decides (as any deployment would).
2. **Memories written as the projectors write them.** The worker is stopped; each memory is built by
   the client (``build_record``: a fresh data key, AES-GCM text, the wrapped key), turned into the
   ``MemoryRecorded`` event the gate would emit (``commands.events.memory_recorded``, through the
   Avro codec), applied to Postgres by the profile projector's ``insert_version`` and to the embedded
   index as the embedding projector builds its points (``point_payload``, the BM25 document), and
   its wrapped key is published to the keys topic. The dense vectors are random unit vectors: the
   cost of a search does not depend on their content, and embedding a million texts on two cores
   would take hours (the embedding rate is measured apart, ``memwarden eval locomo``). So the
   *index build time* reported is the time to write the points (payload indexes included), not to
   embed them. Skipping the gate for the memories changes nothing a read looks at.
3. **The full call.** A projector-only worker starts over that namespace (its read API on HTTP, its
   key ring loading every data key) and the benchmark sends ``queries`` signed recalls through
   ``MemwardenClient.recall`` one after another, each by a random principal for a random purpose,
   with every filter on (ABAC with the reader's grants and roles, purpose, validity now, known time,
   expiry, the freshness horizon): client signing, HTTP, authentication (Ed25519 and the replay
   guard), the grants read from Postgres, the filter inside the hybrid query, the relevance cosines,
   the Postgres verification, the key ring, decryption, and the audit record acknowledged by the
   broker. Latency is measured at the client; the worker reports each stage in its
   ``Server-Timing`` header, and ``stage_share`` is each stage's mean over the mean call (``client``:
   what is outside the worker's handler: signing, HTTP, JSON).

Also reported: the worker's resident memory after the run (its process group, MB), its start
time (until ``/health`` answers) and the time until its first recall is answered (its key ring reads
every data key of the namespace first), build rates, points the queries found, and the host's load.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from confluent_kafka import Producer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from memwarden.bootstrap import drop_projections
from memwarden.commands.events import memory_recorded
from memwarden.commands.gate.effects import Decision, Outcome
from memwarden.commands.gate.state import MemoryState
from memwarden.commands.ledger import Position
from memwarden.commands.model import Right
from memwarden.commands.readmodel.payload import point_payload
from memwarden.errors import MemwardenError, StackUnavailable
from memwarden.evals.recall_world import GrantSpec, World
from memwarden.keystore import admin_signer
from memwarden.ops.pidfiles import free_port
from memwarden.ops.topics import delete_topics, ensure_topics
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.producers.enroll import enroll
from memwarden.projections.edge_index import EdgeVectorIndex
from memwarden.projections.index_projector import point_id
from memwarden.projections.sparse import Bm25Encoder
from memwarden.projections.vector_index import IndexPoint
from memwarden.schemas.codec import default_codec
from memwarden.settings import Settings
from memwarden.stores import profile_rows
from memwarden.stores.pg import connect_async, migrate

DIM = 384
#: Warm-up recalls before timing (key ring catch-up, first connections, the model's first call).
WARMUP = 20
#: Seconds a fresh worker may take to answer its first recall (its key ring reads every data key).
FIRST_ANSWER_S = 1800.0
#: Stages the read API reports, in the order of a call (``embed`` runs while ``auth`` reads the reader, so
#: the shares can add up to more than the call; ``client`` is what the handler's own wall time leaves).
STAGES = ("auth", "filter", "embed", "index", "relevance", "verify", "keys", "open", "answer", "audit")


def _ms(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values), q)), 2)


def _progress(console: Console) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}/s"), TimeElapsedColumn(), TimeRemainingColumn(), console=console)


def _group_rss_mb(pid: int) -> float:
    """Resident memory (MB) of every process in the process group ``pid`` leads."""
    total_kb = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            pgrp = int(stat.rsplit(")", 1)[1].split()[2])
            if pgrp != pid:
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return round(total_kb / 1024, 1)


def _govern(settings: Settings, world: World, console: Console) -> dict[str, Any]:
    """Register the world's principals and issue its grants through the gate; the client keeps the signers."""
    started = time.perf_counter()
    with WorkerProcess(settings) as _, MemwardenClient(settings) as client:
        admin = admin_signer(settings)
        timeout = 60.0 + len(world.principals) / 20
        signers = enroll(client, admin, [(p, "USER", world.roles[p]) for p in world.principals], timeout_s=timeout)
        receipts = [_grant(client, admin.principal_id, g) for g in world.grants]
        decided = client.decided([r.command_id for r in receipts], timeout_s=60.0 + len(receipts) / 20)
    accepted = sum(1 for d in decided.values() if d["outcome"] == "ACCEPTED")
    console.print(f"  {len(signers)} principals, {accepted}/{len(world.grants)} grants accepted by the gate"
                  f" ({time.perf_counter() - started:.1f} s)")
    return {"principals": len(signers), "grants": len(world.grants), "grants_accepted": accepted,
            "signers": signers, "seconds": round(time.perf_counter() - started, 1)}


def _grant(client: MemwardenClient, admin: str, g: GrantSpec) -> Any:
    def when(ms: int | None) -> datetime | None:
        return datetime.fromtimestamp(ms / 1000, UTC) if ms is not None else None

    return client.grant_access(g.grantee, by=admin, rights=[Right.READ.value], scopes=list(g.scopes),
                               subjects=list(g.subjects), purposes=list(g.purposes),
                               store_kinds=[k.value for k in g.store_kinds], sensitivity_ceiling=g.sensitivity_ceiling,
                               valid_from=when(g.valid_from_ms), valid_to=when(g.valid_to_ms), grant_id=None,
                               wait=False)


async def _write_memories(settings: Settings, world: World, size: int, batch: int, console: Console) -> dict[str, Any]:
    """Write ``size`` memories to Postgres, the embedded index and the keys topic (see the module notes)."""
    codec = default_codec()
    encoder = Bm25Encoder()
    events_topic = settings.topic("events")
    keys_topic = settings.topic("keys")
    producer = Producer({"bootstrap.servers": settings.bootstrap_servers, "linger.ms": 20,
                         "batch.num.messages": 10_000, "queue.buffering.max.messages": 1_000_000})
    index = EdgeVectorIndex(settings.data_dir / "qdrant", settings.index_name, idf=settings.lexical_idf)
    index.ensure(DIM)
    conn = await connect_async(settings)
    spent = {"build": 0.0, "postgres": 0.0, "index": 0.0, "keys": 0.0}
    started = time.perf_counter()
    try:
        with MemwardenClient(settings) as client, _progress(console) as bar:
            task = bar.add_task("  memories", total=size, rate="-")
            for start in range(0, size, batch):
                t0 = time.perf_counter()
                rows, points, keys = [], [], []
                vectors = world.rng.standard_normal((min(batch, size - start), DIM)).astype(np.float32)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                for j, vector in enumerate(vectors):
                    m = world.memory()
                    command, (key_id, wrapped) = client.build_record(
                        principal=m.owner, subject=m.subject, text=m.text, scope=m.scope, store_kind=m.store_kind,
                        sensitivity=m.sensitivity, purposes=m.purposes, observed_at=m.observed_at,
                        effective_to=m.effective_to, expires_at=m.expires_at)
                    memory_id = command.memory_id
                    decision = Decision(Outcome.ACCEPTED, (), memory=MemoryState(memory_id, m.subject, m.owner, 1),
                                        version=1)
                    event = memory_recorded(command, decision, Position(events_topic, 0, start + j), datetime.now(UTC))
                    record = codec.decode(codec.encode("MemoryRecorded", event))[1]
                    rows.append((record, m.text))
                    pid = point_id(memory_id, command.envelope.command_id)
                    points.append(IndexPoint(pid, vector.tolist(), point_payload(record),
                                             encoder.document(m.text, key=pid)))
                    keys.append((key_id, wrapped))
                t1 = time.perf_counter()
                async with conn.transaction(), conn.cursor() as cur, conn.pipeline():
                    for record, text in rows:
                        await profile_rows.insert_version(cur, record, text)
                t2 = time.perf_counter()
                await asyncio.to_thread(index.upsert, points)
                t3 = time.perf_counter()
                for key_id, wrapped in keys:
                    producer.produce(keys_topic, key=key_id.encode(), value=wrapped)
                producer.poll(0)
                t4 = time.perf_counter()
                for name, dt in (("build", t1 - t0), ("postgres", t2 - t1), ("index", t3 - t2), ("keys", t4 - t3)):
                    spent[name] += dt
                done = start + len(points)
                bar.update(task, completed=done, rate=f"{done / (time.perf_counter() - started):,.0f}")
        t0 = time.perf_counter()
        left = producer.flush(120)
        spent["keys"] += time.perf_counter() - t0
        if left:
            raise MemwardenError(f"{left} data keys not acknowledged by the broker in 120 s")
    finally:
        await conn.close()
        index.close()
    total = time.perf_counter() - started
    return {"memories": size, "seconds": round(total, 1), "memories_per_s": round(size / total),
            "index_build_s": round(spent["index"], 1), "index_points_per_s": round(size / max(spent["index"], 1e-9)),
            "seconds_by_part": {k: round(v, 1) for k, v in spent.items()}}


def _measure(settings: Settings, world: World, signers: dict[str, Any], queries: int, k: int,
             console: Console) -> dict[str, Any]:
    """Start a projector-only worker over the namespace and time ``queries`` recalls after ``WARMUP``."""
    started = time.perf_counter()
    worker = WorkerProcess(settings, roles=("projector",)).start(timeout_s=600)
    start_s = time.perf_counter() - started
    totals: list[float] = []
    stages: dict[str, list[float]] = {name: [] for name in STAGES}
    handler: list[float] = []  # the worker's wall time per recall (its stages overlap: see STAGES)
    found: list[int] = []
    try:
        with MemwardenClient(settings) as client, _progress(console) as bar:
            for signer in signers.values():
                client.add_signer(signer)
            ready_s = _first_answer(client, world, k)
            task = bar.add_task("  recalls", total=WARMUP + queries, rate="-")
            for i in range(WARMUP + queries):
                reader, purpose, text = world.query()
                t0 = time.perf_counter()
                got = client.recall(reader, text, k=k, purpose=purpose)
                dt = (time.perf_counter() - t0) * 1000.0
                bar.update(task, advance=1, rate=f"{(i + 1) / (time.perf_counter() - started - start_s):,.0f}")
                if i < WARMUP:
                    continue
                totals.append(dt)
                found.append(len(got))
                timing = client.last_server_timing
                for name in STAGES:
                    stages[name].append(timing.get(name, 0.0))
                handler.append(timing.get("total", 0.0))
        rss = _group_rss_mb(worker.proc.pid) if worker.proc is not None else None
    finally:
        worker.stop()
    mean_total = statistics.fmean(totals)
    share = {name: round(statistics.fmean(v) / mean_total, 3) for name, v in stages.items()}
    share["client"] = round(max(0.0, 1.0 - statistics.fmean(handler) / mean_total), 3)
    return {"p50_ms": _ms(totals, 50), "p95_ms": _ms(totals, 95), "p99_ms": _ms(totals, 99),
            "mean_ms": round(mean_total, 2), "queries": len(totals), "stage_share": share,
            "stage_p50_ms": {name: _ms(v, 50) for name, v in stages.items()},
            "server_p50_ms": _ms(handler, 50), "hits_per_query": round(statistics.fmean(found), 2),
            "queries_with_hits": round(sum(1 for n in found if n) / len(found), 3),
            "worker_rss_mb": rss, "worker_start_s": round(start_s, 1), "first_answer_s": round(ready_s, 1)}


def _first_answer(client: MemwardenClient, world: World, k: int, timeout_s: float = FIRST_ANSWER_S) -> float:
    """Seconds until the worker answers a first recall: its key ring reads the whole keys topic first
    (a million wrapped keys take longer than one HTTP timeout). Raises ``StackUnavailable`` after
    ``timeout_s``."""
    started = time.perf_counter()
    while True:
        reader, purpose, text = world.query()
        try:
            client.recall(reader, text, k=k, purpose=purpose)
            return time.perf_counter() - started
        except StackUnavailable:
            if time.perf_counter() - started > timeout_s:
                raise


def bench_size(base: Settings, size: int, queries: int, k: int, seed: int, batch: int, keep: bool,
               console: Console) -> dict[str, Any]:
    """One size in a fresh namespace (dropped afterwards unless ``keep``); see the module notes."""
    settings = base.model_copy(update={"topic_prefix": f"bench.recall.{uuid.uuid4().hex[:8]}",
                                       "worker_port": free_port(), "reconcile_interval_s": 0.0})
    world = World(size, np.random.default_rng(seed), datetime.now(UTC))
    console.print(f"[bold]{size:,} memories[/bold] in namespace {settings.topic_prefix}")
    migrate(settings)
    ensure_topics(settings)
    try:
        governed = _govern(settings, world, console)
        built = asyncio.run(_write_memories(settings, world, size, batch, console))
        console.print(f"  written: {built['memories_per_s']:,}/s; index points {built['index_points_per_s']:,}/s")
        measured = _measure(settings, world, governed["signers"], queries, k, console)
    finally:
        if not keep:
            drop_projections(settings)
            delete_topics(settings)
    governed.pop("signers")
    return {"size": size, **measured, "k": k, "governance": governed, "build": built,
            "namespace": settings.topic_prefix, "kept": keep}


def run_recall_bench(base: Settings, sizes: Sequence[int], queries: int = 300, k: int = 10, seed: int = 20250601,
                     batch: int = 1000, keep: bool = False, progress: bool = True) -> dict[str, Any]:
    """Every size in turn; the top-level figures (``p50_ms``, ``p95_ms``, ``stage_share`` ...) are those
    of the largest size, every size's under ``runs``. Raises ``ValueError`` for bad arguments and
    ``MemwardenError`` (``StackUnavailable``) when the stack is down."""
    if not sizes or any(s < 100 for s in sizes):
        raise ValueError("sizes: each must be >= 100")
    if queries < 1 or k < 1 or batch < 1:
        raise ValueError("queries, k and batch must be >= 1")
    console = Console(stderr=True, quiet=not progress)
    load_start = os.getloadavg()[0]
    runs = [bench_size(base, size, queries, k, seed, batch, keep, console) for size in sorted(sizes)]
    top = runs[-1]
    return {"size": top["size"], "p50_ms": top["p50_ms"], "p95_ms": top["p95_ms"], "stage_share": top["stage_share"],
            "worker_rss_mb": top["worker_rss_mb"], "index_build_s": top["build"]["index_build_s"],
            "goals": {"p50_le_15ms_at_100k": None if top["size"] != 100_000 else top["p50_ms"] <= 15.0,
                      "p95_le_30ms_at_100k": None if top["size"] != 100_000 else top["p95_ms"] <= 30.0,
                      "p50_le_40ms_at_1m": None if top["size"] != 1_000_000 else top["p50_ms"] <= 40.0},
            "runs": runs, "cpus": len(os.sched_getaffinity(0)),
            "load_avg_1m": {"start": round(load_start, 2), "end": round(os.getloadavg()[0], 2)},
            "embed_backend": base.embed_backend}
