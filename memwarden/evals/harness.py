"""A throw-away evaluation namespace: fresh topics, Postgres schema and index, a real worker, and
cleanup afterwards (used by every ``memwarden eval`` command)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from rich.console import Console

from memwarden.ops.pidfiles import free_port
from memwarden.ops.worker_process import WorkerProcess
from memwarden.settings import Settings


@dataclass
class EvalRun:
    """The namespace ``settings``, its running ``worker`` and a stderr ``console``."""

    settings: Settings
    worker: WorkerProcess
    console: Console


@contextmanager
def eval_namespace(base: Settings, label: str, keep: bool = False, progress: bool = True,
                   roles: tuple[str, ...] = ("gate", "projector")) -> Iterator[EvalRun]:
    """Create ``<prefix>.<label>-<8 hex>`` (topics, schema), start a worker with ``roles``, yield, then
    stop the worker and (unless ``keep``) drop everything. Raises ``StackUnavailable`` if the stack is down."""
    from memwarden.bootstrap import drop_projections
    from memwarden.ops.topics import delete_topics, ensure_topics
    from memwarden.stores.pg import migrate

    settings = base.model_copy(update={"topic_prefix": f"{base.topic_prefix}.{label}-{uuid.uuid4().hex[:8]}",
                                       "worker_port": free_port()})  # runs may overlap
    console = Console(stderr=True, quiet=not progress)
    migrate(settings)
    ensure_topics(settings)
    worker = WorkerProcess(settings, roles)
    try:
        console.print(f"namespace {settings.topic_prefix}: starting worker")
        worker.start()
        yield EvalRun(settings, worker, console)
    finally:
        worker.stop()
        if not keep:
            drop_projections(settings)
            delete_topics(settings)
