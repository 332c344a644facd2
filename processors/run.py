"""Start a worker process: migrations, topics, pid file, then the Faust worker until stopped."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence

from memwarden.settings import Settings

ROLES = ("gate", "projector")


def worker_name(settings: Settings, roles: Sequence[str]) -> str:
    """Pid-file name of a worker: ``worker-<prefix>-<roles>``."""
    return f"worker-{settings.topic_prefix}-{'-'.join(sorted(roles))}"


def run_worker(settings: Settings, roles: Sequence[str] = ROLES) -> None:
    """Run the worker for ``roles`` in this process until SIGTERM/SIGINT.

    Raises ``ValueError`` for an unknown role, ``StackUnavailable`` when Kafka does not answer.
    """
    unknown = set(roles) - set(ROLES)
    if unknown or not roles:
        raise ValueError(f"role: unknown {sorted(unknown)}; choose from {ROLES}")
    import faust

    from memwarden.bootstrap import Container
    from memwarden.ops.pidfiles import write_pidfile
    from memwarden.ops.topics import ensure_topics
    from memwarden.processors.worker import build_app
    from memwarden.stores.pg import migrate

    logging.basicConfig(level=settings.log_level.upper())
    migrate(settings)
    ensure_topics(settings)
    write_pidfile(settings, worker_name(settings, roles), os.getpid(),
                  settings.worker_url if "projector" in roles else None)
    container = Container(settings)
    if "projector" in roles:
        container.embedder()  # load the model before consuming, not on the first batch
        container.index()
    (settings.data_dir / "faust" / settings.topic_prefix).mkdir(parents=True, exist_ok=True)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    app = build_app(container, roles)
    try:
        faust.Worker(app, loop=loop, loglevel=settings.log_level, quiet=True).execute_from_commandline()
    finally:
        container.close()
