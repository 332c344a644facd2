"""``memwarden eval drift``: hypothesis H1 of SSGM (Theorem 1) measured on memwarden.

A gate worker decides a workload (a base of memories, then one command per step: record,
supersede or forget); this process projects every decided event into three namespaces over the same
ledger: ``truth`` (never damaged), ``with`` (damaged, reconciled every ``sync`` steps by the real
reconciler) and ``without`` (damaged, never reconciled). At each step, with probability
``fault_rate``, one fault of a random kind (:mod:`memwarden.evals.faults`) damages the same kind of
target in ``with`` and ``without``. The drift δ of each against ``truth`` (Eq. 4 per memory version,
:mod:`memwarden.projections.reconcile_diff`) is measured after every step.

Bound (Theorem 1 with N = ``sync``, at most one fault per step, each damaging at most one version,
reconciliation leaving no residual): δ_with ≤ sync / |K|_min, where |K|_min is the fewest versions
the ledger implied during the run. Without reconciliation δ grows with the faults, without bound.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from memwarden.settings import Settings

NAMES = ("truth", "with", "without")
_THINGS = ("tea", "jazz", "chess", "Lyon", "Oslo", "cats", "running", "opera", "sushi", "hiking", "Rome", "piano")


@dataclass
class _Projection:
    """One namespace over the eval's ledger, projected in this process."""

    settings: Settings
    container: Any
    profile: Any = None
    vectors: Any = None
    applied: dict[int, int] = field(default_factory=dict)


def _text(rng: random.Random, n: int) -> str:
    return f"note {n}: likes {rng.choice(_THINGS)} and {rng.choice(_THINGS)} (#{rng.randrange(10**6)})"


async def _open(base: Settings, name: str, cache_from: Any) -> _Projection:
    from memwarden.bootstrap import Container
    from memwarden.projections.index_projector import EmbeddingProjector
    from memwarden.projections.profile_projector import ProfileProjector
    from memwarden.stores import namespaces
    from memwarden.stores.pg import migrate

    s = base.projections_of_ledger(f"{base.topic_prefix}.{name}")
    migrate(s)
    namespaces.claim(s, base)
    c = Container(s)
    p = _Projection(s, c, ProfileProjector(await c.pg(), s.topic("events")))
    p.vectors = EmbeddingProjector(c.lazy_embedder(), c.index(), await c.pg(), s.topic("events"), "index:edge",
                                   cache_from=cache_from)
    return p


async def _apply(p: _Projection, keyring: Any) -> None:
    from memwarden.projections.events_in import EventIn, open_events
    from memwarden.stores.ledger import end_offsets, read

    ends = end_offsets(p.settings, "events")
    decoded = []
    for r in read(p.settings, "events", ends, p.applied):
        if r.value is not None:
            name, rec = p.container.codec.decode(r.value)
            decoded.append(EventIn(name, rec, r.position))
    p.applied = dict(ends)
    if decoded:
        opened = await open_events(keyring, decoded)
        await p.profile.apply(opened)
        await p.vectors.apply(opened)


async def _drift(truth: _Projection, other: _Projection) -> tuple[float, int]:
    from memwarden.processors.reconciler import compare

    found = await compare(truth.container, other.container)
    return found.divergences.drift(found.versions), found.versions


def _wait_gate(settings: Settings, alive: Any, timeout_s: float = 60.0) -> None:
    from memwarden.errors import StackUnavailable
    from memwarden.ops.progress import lag

    deadline = time.monotonic() + timeout_s
    while lag(settings)["gate"]:
        if not alive() or time.monotonic() > deadline:
            raise StackUnavailable("the gate worker stopped deciding; see its log")
        time.sleep(0.05)


def _step(client: Any, who: str, rng: random.Random, live: list[str], n: int) -> None:
    roll = rng.random()
    if roll < 0.25 and live:
        client.supersede(rng.choice(live), principal=who, subject=who, text=_text(rng, n), wait=False)
    elif roll < 0.40 and len(live) > 1:
        client.forget(live.pop(rng.randrange(len(live))), principal=who, subject=who, reason="drift workload",
                      wait=False)
    else:
        live.append(client.record(principal=who, subject=who, text=_text(rng, n)).memory_id)


async def _run(run: Any, steps: int, fault_rate: float, sync: int, base_size: int, seed: int) -> dict[str, Any]:
    from memwarden.commands.signing import Signer
    from memwarden.evals.faults import KINDS, inject
    from memwarden.keystore import admin_signer
    from memwarden.processors.reconciler import reconcile
    from memwarden.producers.client import MemwardenClient

    s, rng = run.settings, random.Random(seed)
    truth = await _open(s, "truth", None)
    cache = await truth.container.pg()
    views = {"truth": truth, "with": await _open(s, "with", cache), "without": await _open(s, "without", cache)}
    keyring = truth.container.keyring()
    series: dict[str, list[float]] = {"with": [], "without": []}
    faults, versions, reconciliations, residuals = 0, [], 0, [0.0]
    who = f"user:drift-{seed}"
    with MemwardenClient(s, signers=[admin_signer(s)]) as client:
        signer = Signer.generate(who)
        client.add_signer(signer)
        client.register_principal(who, by=s.admin_principal, public_key=signer.public_key, key_id=signer.key_id,
                                  wait=False)
        live = [r.memory_id for r in client.record_many([{"principal": who, "subject": who, "text": _text(rng, i)}
                                                          for i in range(base_size)])]
        for t in range(1, steps + 1):
            _step(client, who, rng, live, base_size + t)
            _wait_gate(s, run.worker.alive)
            for name in NAMES:
                await _apply(views[name], keyring)
            if rng.random() < fault_rate:
                kind, fault_seed = rng.choice(KINDS), rng.randrange(10**9)
                for name in ("with", "without"):
                    v = views[name]
                    conn = await v.container.pg()
                    done = await inject(kind, conn, v.container.index(), random.Random(fault_seed))
                    await conn.close()
                    faults += int(done is not None and name == "with")
            if t % sync == 0:
                await reconcile(views["with"].container)
                reconciliations += 1
                residuals.append((await _drift(truth, views["with"]))[0])  # Theorem 1's residual error
            for name in ("with", "without"):
                delta, k = await _drift(truth, views[name])
                series[name].append(round(delta, 5))
            versions.append(k)
    for v in views.values():
        v.container.close()
    k_min = min(versions) if versions else 1
    return {"steps": steps, "fault_rate": fault_rate, "sync": sync, "base": base_size, "seed": seed,
            "faults": faults, "reconciliations": reconciliations, "versions_min": k_min,
            "versions_max": max(versions) if versions else 0, "bound": round(sync / k_min, 5),
            "residual_max": round(max(residuals), 5), "delta_max_with": max(series["with"]),
            "delta_max_without": max(series["without"]),
            "delta_mean_with": round(statistics.fmean(series["with"]), 5),
            "delta_mean_without": round(statistics.fmean(series["without"]), 5), "series": series}


def run_drift(base: Settings, steps: int = 300, fault_rate: float = 0.3, sync: int = 10, base_size: int = 200,
              seed: int = 7, keep: bool = False, progress: bool = True) -> dict[str, Any]:
    """Run the evaluation in a fresh namespace with a gate-only worker; returns the figures. Raises
    ``ValueError`` for out-of-range arguments, ``StackUnavailable`` when the stack is down."""
    from memwarden.bootstrap import drop_projections
    from memwarden.evals.harness import eval_namespace

    if steps < 1 or sync < 1 or base_size < 1 or not 0.0 <= fault_rate <= 1.0:
        raise ValueError("steps, sync and base must be >= 1 and fault-rate within [0, 1]")
    with eval_namespace(base, "drift", keep, progress, roles=("gate",)) as run:
        try:
            return asyncio.run(_run(run, steps, fault_rate, sync, base_size, seed))
        finally:
            if not keep:
                for name in NAMES:
                    drop_projections(run.settings.projections_of_ledger(f"{run.settings.topic_prefix}.{name}"))


def plot(result: dict[str, Any], path: str) -> None:
    """Both δ curves and the bound in one PNG at ``path`` (matplotlib, the optional ``plot`` extra).
    Raises ``RuntimeError`` naming the install when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise RuntimeError("--plot needs matplotlib: pip install 'memwarden[plot]'") from exc
    steps = range(1, result["steps"] + 1)
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
    ax.plot(steps, result["series"]["without"], label="without reconciliation", color="tab:red")
    ax.plot(steps, result["series"]["with"], label=f"reconciled every {result['sync']} steps", color="tab:blue")
    ax.axhline(result["bound"], linestyle="--", color="gray", label=f"bound sync/|K|min = {result['bound']:.3f}")
    ax.set_xlabel("step (one command per step)")
    ax.set_ylabel("drift δ (Eq. 4, per version)")
    ax.set_title(f"SSGM H1 on memwarden: fault rate {result['fault_rate']}, {result['faults']} faults")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
