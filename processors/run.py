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

    Raises ``ValueError`` for an unknown role, a gate over another namespace's ledger (a replay never
    decides) or a point-in-time namespace (a worker would carry it past its cut), ``StackUnavailable`` when
    Kafka does not answer.
    """
    unknown = set(roles) - set(ROLES)
    if unknown or not roles:
        raise ValueError(f"role: unknown {sorted(unknown)}; choose from {ROLES}")
    import faust

    from memwarden.bootstrap import Container
    from memwarden.ops.pidfiles import write_pidfile
    from memwarden.ops.topics import ensure_topics
    from memwarden.ops.worker_process import health_url
    from memwarden.processors.worker import build_app
    from memwarden.stores import namespaces
    from memwarden.stores.pg import migrate

    logging.basicConfig(level=settings.log_level.upper())
    if not settings.owns_ledger and "gate" in roles:
        raise ValueError(f"role: {settings.topic_prefix} replays {settings.ledger_prefix}'s ledger and never decides"
                         " (its decisions would go to that ledger): run its worker with --role projector")
    migrate(settings)
    if namespaces.cut_of(settings) is not None:
        raise ValueError(f"namespace: {settings.topic_prefix} is a point-in-time replay; a worker would carry it past"
                         " its cut: read it in-process (memwarden recall --namespace ...), without a worker")
    ensure_topics(settings)
    write_pidfile(settings, worker_name(settings, roles), os.getpid(), health_url(settings, roles))
    container = Container(settings)
    if "projector" in roles:
        container.embedder()  # load the model before consuming, not on the first batch
        container.index()
    if "gate" in roles and settings.gate_mode == "full":
        container.instruction_detector()  # the classifier's model too, before the first batch
    (settings.data_dir / "faust" / settings.topic_prefix).mkdir(parents=True, exist_ok=True)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    app = build_app(container, roles)
    try:
        worker = faust.Worker(app, loop=loop, loglevel=settings.log_level, quiet=True)
        if not worker.stdout.isatty():
            # faust's spinner hides and shows the cursor with escape codes even when its output is a log file
            # (``Spinner.begin`` / ``finish`` do not check for a terminal): no spinner then
            worker.spinner = None
        worker.execute_from_commandline()
    finally:
        container.close()


def run_supervised(settings: Settings, roles: Sequence[str] = ROLES) -> int:
    """``memwarden worker --supervise``: run the worker for ``roles`` as a child process under
    :class:`~memwarden.ops.supervisor.Supervisor` until SIGTERM/SIGINT, restarting it whenever it
    exits non-zero, and, for a worker with the gate role that serves ``/ready``, whenever its gate is
    stalled for ``settings.stall_s`` seconds (:func:`~memwarden.ops.liveness.ready_probe`); returns the
    exit code. Raises ``ValueError`` for an unknown role."""
    unknown = set(roles) - set(ROLES)
    if unknown or not roles:
        raise ValueError(f"role: unknown {sorted(unknown)}; choose from {ROLES}")
    from memwarden.ops.liveness import ready_probe
    from memwarden.ops.pidfiles import pidfile_path, write_pidfile
    from memwarden.ops.supervisor import PIDFILE_PREFIX, Supervisor, install_signal_handlers, worker_argv
    from memwarden.ops.worker_process import health_url

    logging.basicConfig(level=settings.log_level.upper())
    name = PIDFILE_PREFIX + worker_name(settings, roles).removeprefix("worker-")
    write_pidfile(settings, name, os.getpid())
    url = health_url(settings, roles)
    probe = ready_probe(url, settings.stall_s) if url is not None and "gate" in roles and settings.stall_s > 0 else None
    supervisor = Supervisor(worker_argv(roles), probe=probe)
    install_signal_handlers(supervisor)
    try:
        return supervisor.run()
    finally:
        pidfile_path(settings, name).unlink(missing_ok=True)

