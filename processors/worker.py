"""The Faust worker: the agents and the read API of one namespace, by role.

Roles (``memwarden worker --role gate --role projector``; both by default):

* ``gate`` — :mod:`memwarden.processors.gate_agent`: consumes the commands topic (the ledger);
  publishes decisions, events, registry entries, key tombstones, dead letters.
* ``projector`` — :mod:`memwarden.processors.projector_agent`: consumes the events topic into the
  Postgres profile rows and the vector index; owns the embedded Qdrant Edge shard, so it also serves
  the read API (:mod:`memwarden.read_api`) on 127.0.0.1.

Agents only wire: every decision is in :mod:`memwarden.commands.gate`, every projection in
:mod:`memwarden.projections`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import faust

from memwarden.bootstrap import Container
from memwarden.commands.ledger import Outbound
from memwarden.ops.topics import ROLL_MARKER
from memwarden.processors.gate_agent import add_gate_agent
from memwarden.processors.pre_embed import PreEmbedder
from memwarden.processors.projector_agent import add_projector_agent
from memwarden.processors.rebuild import switch
from memwarden.processors.receipts import RETRY_S, ErasureReceipts
from memwarden.processors.reconciler import reconcile
from memwarden.processors.resilience import Health, survive_outage
from memwarden.processors.retention import Retention
from memwarden.projections.warm_vectors import WarmVectors
from memwarden.read_api.service import ReadService
from memwarden.read_api.views import mount, mount_health
from memwarden.settings import Settings

log = logging.getLogger("memwarden.worker")
TOPICS = ("commands", "decisions", "events", "deadletter", "keys", "principals", "audit")


def app_id(settings: Settings, roles: Sequence[str]) -> str:
    """Faust app id, which is also the consumer group id, of a worker with ``roles``."""
    return f"{settings.topic_prefix}-{'-'.join(sorted(roles))}"


def _raw_topic(app: faust.App, name: str) -> Any:
    return app.topic(name, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw",
                     internal=False)


def _add_gate_timers(app: faust.App, container: Container, topics: dict[str, Any],
                     publish: Callable[[Sequence[Outbound]], Awaitable[None]]) -> None:
    """The gate worker's timers: keys roll markers and the retention sweep."""
    s = container.settings

    async def roll_keys() -> None:
        """A roll marker on every keys partition: a quiet keys topic rolls its segment too, so a
        shredded key's record is compacted off the disk within the bound (ops/topics.py)."""
        for partition in range(s.partitions):
            await topics["keys"].send(key=ROLL_MARKER, value=None, partition=partition)

    app.timer(s.keys_compaction_lag_s)(survive_outage("keys roll marker", roll_keys))
    if s.retention_interval_s > 0:
        retention = Retention(container)

        async def forget_expired() -> None:
            """Memories past ``expires_at`` are forgotten through the gate (processors/retention.py)."""
            found = await retention.sweep()
            if found is not None:
                await publish([found])

        app.timer(s.retention_interval_s)(survive_outage("retention sweep", forget_expired))


def _add_pre_embedder(app: faust.App, container: Container, warm: WarmVectors) -> None:
    """Start the pre-embedder thread (:mod:`memwarden.processors.pre_embed`) once the worker runs,
    stop it at shutdown. A broker that does not answer at start leaves it off (logged): the
    projector embeds everything itself."""
    pre = PreEmbedder(container.settings, container.codec, container.keyring(), container.embedder(), warm)

    @app.task
    async def start_pre_embedder() -> None:
        try:
            await asyncio.to_thread(pre.start)
        except Exception as exc:  # noqa: BLE001 - an optimisation, never a reason to stop the worker
            log.warning("pre-embedder off: %s", exc)

    @app.on_before_shutdown.connect
    async def stop_pre_embedder(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        await asyncio.to_thread(pre.stop)


def build_app(container: Container, roles: Sequence[str]) -> faust.App:
    """A Faust app for ``roles`` over the container's clients. Connects nothing until it runs."""
    s = container.settings
    app = faust.App(
        app_id(s, roles),
        broker=f"kafka://{s.bootstrap_servers}",
        store="memory://",
        autodiscover=False,
        topic_disable_leader=True,
        consumer_auto_offset_reset="earliest",
        producer_acks=-1,
        web_enabled="projector" in roles or s.health_port is not None,
        web_host=s.worker_host,
        web_port=s.worker_port if "projector" in roles else (s.health_port or s.worker_port),
        web_in_thread=False,
        datadir=str(s.data_dir / "faust" / s.topic_prefix),
        broker_commit_interval=1.0,
        broker_session_timeout=s.session_timeout_s,
        broker_heartbeat_interval=min(1.0, s.session_timeout_s / 5),
        stream_wait_empty=False,
        agent_supervisor="mode.CrashingSupervisor",  # an agent that gives up ends the worker (exit 1)
    )
    topics = {name: _raw_topic(app, s.topic(name)) for name in TOPICS}

    async def publish(records: Sequence[Outbound]) -> None:
        futures = [await topics[r.topic].send(key=r.key, value=r.value, headers=list(r.headers) or None)
                   for r in records]
        for fut in futures:
            await fut

    gate_pause, projector_pause = asyncio.Lock(), asyncio.Lock()
    health = Health()
    if "gate" in roles:
        add_gate_agent(app, container, topics["commands"], publish, gate_pause, health)

        _add_gate_timers(app, container, topics, publish)
        if "projector" not in roles and s.health_port is not None:
            mount_health(app, ReadService(container, publish), roles, lambda: health.agents)
    if "projector" in roles:
        receipts = ErasureReceipts(container, publish)
        warm = WarmVectors() if s.pre_embed and s.owns_ledger else None
        add_projector_agent(app, container, topics["events"], projector_pause, receipts, health, warm)
        if warm is not None:
            _add_pre_embedder(app, container, warm)

        async def settle_receipts() -> None:
            """Forgets whose stores had not all confirmed after their batch: ask again."""
            async with projector_pause:
                await receipts.settle()

        app.timer(RETRY_S)(survive_outage("erasure receipts", settle_receipts))

        async def reconcile_now() -> dict[str, Any]:
            return await reconcile(container, projector_pause, publish)

        service = ReadService(container, publish, reconciler=reconcile_now)
        if "gate" in roles:  # an in-place switch replaces the gate's state too: both must pause here
            async def switch_now(rebuilt: str) -> dict[str, Any]:
                target = container.settings.projections_of_ledger(rebuilt)
                return await switch(container, target, [gate_pause, projector_pause, service.paused()])

            service.on_switch(switch_now)
        mount(app, service, roles, lambda: health.agents)
        if s.reconcile_interval_s > 0:
            async def reconcile_periodically() -> None:
                """Eq. 7 every T_sync: compare the projections with the ledger and repair them."""
                run = await reconcile_now()
                log.info("reconciliation: %s", {k: run[k] for k in ("diverged", "repaired", "drift")})

            app.timer(s.reconcile_interval_s)(survive_outage("reconciliation", reconcile_periodically))
    return app
