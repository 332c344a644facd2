"""``memwarden serve``: the REST API of one namespace on ``--host``/``--port`` (127.0.0.1:8080).

Before it listens it makes sure of what it needs, each in one line: PostgreSQL answers and the
namespace's schema is migrated (the token table), the topics exist, the API port is free, and a
worker of the namespace answers at ``MEMWARDEN_WORKER_PORT`` (its read API and gate). When no worker
answers it says so in one line and **starts one** as a child process (stopped with the server;
its log under ``<data>/logs/``), unless ``--no-worker`` is given, in which case it exits with that
line. A worker of another namespace on that port is a one-line error (set ``MEMWARDEN_WORKER_PORT``).
"""

from __future__ import annotations

import signal
from collections.abc import Callable

import psycopg

from memwarden.errors import MemwardenError, StackUnavailable
from memwarden.ops.pidfiles import port_answers, port_free
from memwarden.ops.topics import ensure_topics
from memwarden.ops.worker_process import WorkerProcess, worker_health
from memwarden.settings import Settings
from memwarden.stores.pg import migrate


def prepare(settings: Settings, host: str, port: int, start_worker: bool,
            say: Callable[[str], None]) -> WorkerProcess | None:
    """Check and start what the API needs (see the module doc); returns the worker it started, if any.
    Raises ``MemwardenError`` with one line naming what is missing."""
    try:
        migrate(settings)
    except psycopg.OperationalError as exc:
        raise StackUnavailable(f"PostgreSQL does not answer ({str(exc).splitlines()[0]}); run `memwarden stack up`"
                               ) from None
    try:
        ensure_topics(settings)
    except Exception as exc:  # noqa: BLE001 - the admin client's errors vary; one line either way
        raise StackUnavailable(f"Kafka at {settings.bootstrap_servers} does not answer ({exc}); run"
                               " `memwarden stack up`") from None
    if not port_free(port, host):
        raise MemwardenError(f"port {port} on {host} is taken; choose another with --port")
    health = worker_health(settings)
    if health is not None and health.get("prefix") == settings.topic_prefix:
        say(f"worker of namespace {settings.topic_prefix} answers at {settings.worker_url}")
        return None
    if health is not None or port_answers(settings.worker_port, settings.worker_host):
        raise MemwardenError(f"{settings.worker_url} answers for another namespace ({(health or {}).get('prefix')});"
                             " set MEMWARDEN_WORKER_PORT for this one")
    if not start_worker:
        raise MemwardenError(f"no worker of namespace {settings.topic_prefix} answers at {settings.worker_url};"
                             " start `memwarden worker` or drop --no-worker")
    worker = WorkerProcess(settings)
    say(f"no worker of namespace {settings.topic_prefix} answers at {settings.worker_url}: starting one"
        f" (log {worker.log_path})")
    return worker.start()


def _exit(signum: int, frame: object) -> None:
    raise SystemExit(0)


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 8080, start_worker: bool = True,
          say: Callable[[str], None] = print) -> None:
    """Run the REST API until interrupted (see the module doc). Raises ``MemwardenError`` (one line)
    when something it needs is missing."""
    import uvicorn

    from .app import create_app
    from .gateway import Gateway

    worker = prepare(settings, host, port, start_worker, say)
    gateway = None
    # uvicorn re-raises the SIGTERM it caught once it has shut down: as SystemExit here, so that the
    # worker this server started is stopped with it
    signal.signal(signal.SIGTERM, _exit)
    try:
        gateway = Gateway(settings)
        say(f"memwarden REST API on http://{host}:{port} (docs /docs, OpenAPI /openapi.json)")
        uvicorn.run(create_app(gateway), host=host, port=port, log_level=settings.log_level, server_header=False,
                    access_log=False)
    finally:
        if gateway is not None:
            gateway.close()
        if worker is not None:
            worker.stop()


__all__ = ["prepare", "serve"]
