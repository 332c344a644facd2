"""The local stack: one Kafka broker and one PostgreSQL server on 127.0.0.1, state under ``data_dir``.

``up`` checks prerequisites, then starts what is not already running; ``down`` stops the workers
recorded in ``<data_dir>/run/*.pid``, then Kafka, then PostgreSQL; ``status`` reports each service.
A ``bootstrap_servers`` without ``127.0.0.1:<kafka_port>`` (or ``localhost:``), or a ``postgres_dsn``
naming another host/port, is an external service: ``up`` only checks that it answers.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from memwarden.errors import PrerequisiteMissing, StackUnavailable
from memwarden.settings import Settings

from . import kafka_broker, pidfiles, postgres_server
from .supervisor import PIDFILE_PREFIX

SERVICES = ("kafka", "postgres")
#: Prefix of the pid-file name of a REST API server started by :func:`start_api`.
API_PREFIX = "api-"
KAFKA_READY_TIMEOUT = 90.0
STOP_TIMEOUT = 20.0


@dataclass(frozen=True)
class Tools:
    """Executables found by ``check_prerequisites``; ``None`` where the service is external."""

    java: str | None
    mvn: str | None
    pg_bindir: Path | None


def check_java(path: str | None = None, minimum: int = 17) -> str:
    """Absolute path of a ``java`` of version >= ``minimum`` on ``path`` (default ``$PATH``).

    Raises ``PrerequisiteMissing`` (one line) if there is none or it is older.
    """
    hint = f"apt-get install -y openjdk-{minimum}-jre-headless"
    java = shutil.which("java", path=path)
    if java is None:
        raise PrerequisiteMissing(f"java {minimum} not found: {hint}")
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
        text = out.stderr + out.stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise PrerequisiteMissing(f"java {minimum} not usable ({java}: {exc}): {hint}") from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    major = int(match.group(1)) if match else 0
    if major == 1 and match and match.group(2):
        major = int(match.group(2))  # "1.8.0" is Java 8
    if major < minimum:
        found = f"version {major}" if major else "unknown version"
        raise PrerequisiteMissing(f"java {minimum} not found ({java} is {found}): {hint}")
    return java


def check_maven(path: str | None = None) -> str:
    """Absolute path of ``mvn`` on ``path`` (default ``$PATH``); ``PrerequisiteMissing`` if absent."""
    mvn = shutil.which("mvn", path=path)
    if mvn is None:
        raise PrerequisiteMissing("maven (mvn) not found: apt-get install -y maven")
    return mvn


def check_prerequisites(
    settings: Settings, path: str | None = None, pg_roots: tuple[Path, ...] = postgres_server.PG_ROOTS
) -> Tools:
    """Find java (>= 17) and mvn if Kafka is local, the PostgreSQL binaries if Postgres is local.

    ``path`` replaces ``$PATH`` for the search; ``pg_roots`` are searched for ``<version>/bin`` when
    ``pg_ctl`` is not on the path. Raises ``PrerequisiteMissing`` (one line: what, how to install).
    """
    java = mvn = None
    bindir = None
    if kafka_broker.is_local(settings):
        java = check_java(path)
        mvn = check_maven(path)
    if postgres_server.is_local(settings):
        bindir = postgres_server.find_bindir(path, pg_roots)
        postgres_server.check_server_user()
    return Tools(java, mvn, bindir)


def check_ports(settings: Settings, skip: Iterable[str] = ()) -> None:
    """Raise ``PrerequisiteMissing`` if a port of a local service is taken (or two ports coincide).

    ``skip`` names services (``kafka``, ``postgres``) already running as ours, whose ports are in use
    by themselves. The message names the port, its setting and, when found, the owning process.
    """
    wanted: dict[str, int] = {}
    if kafka_broker.is_local(settings):
        wanted |= {"kafka_port": settings.kafka_port, "kafka_controller_port": settings.kafka_controller_port}
    if postgres_server.is_local(settings):
        wanted["postgres_port"] = settings.postgres_port
    if len(set(wanted.values())) < len(wanted):
        raise PrerequisiteMissing(f"ports must differ: {', '.join(f'{k}={v}' for k, v in wanted.items())}")
    skipped = set(skip)
    for name, port in wanted.items():
        if name.split("_")[0] in skipped or pidfiles.port_free(port):
            continue
        owner = pidfiles.port_owner(port)
        who = f" by pid {owner} ({_comm(owner)})" if owner else ""
        raise PrerequisiteMissing(f"port {port} ({name}) is in use{who}: stop it or set MEMWARDEN_{name.upper()}")


def up(settings: Settings) -> None:
    """Bring the stack up; a no-op for services already running (pid file + live process + port).

    Order: stale pid files removed, prerequisites and ports checked (before anything starts), Kafka
    jars/config/storage prepared, broker launched, PostgreSQL started (initdb once; role and
    database of the DSN created), then the broker awaited (up to 90 s).
    Last, the data folder's key material is created if missing (:func:`memwarden.keystore.initialise`).
    Raises ``PrerequisiteMissing`` or ``StackUnavailable``.
    """
    for path in _pidfile_paths(settings):
        pidfiles.remove_stale(path)
    kafka_local, pg_local = kafka_broker.is_local(settings), postgres_server.is_local(settings)
    kafka_pid = kafka_broker.running_pid(settings) if kafka_local else None
    pg_pid = postgres_server.running_pid(settings) if pg_local else None
    tools = check_prerequisites(settings)
    check_ports(settings, skip=[n for n, p in (("kafka", kafka_pid), ("postgres", pg_pid)) if p])

    if kafka_local and kafka_pid is None:
        assert tools.java and tools.mvn
        kafka_broker.prepare(settings, tools.java, tools.mvn)
        kafka_pid = kafka_broker.launch(settings, tools.java)
    if pg_local and pg_pid is None:
        assert tools.pg_bindir
        postgres_server.start(settings, tools.pg_bindir)
    elif pg_local:
        postgres_server.ensure_database(settings)
    else:
        postgres_server.check_answers(settings)
    if kafka_local:
        try:
            kafka_broker.wait_ready(settings, kafka_pid, KAFKA_READY_TIMEOUT)
        except StackUnavailable:
            kafka_broker.stop(settings)
            raise
    elif not kafka_broker.metadata_ok(settings.bootstrap_servers, 15.0):
        raise StackUnavailable(f"kafka at {settings.bootstrap_servers} does not answer")
    from memwarden.keystore import initialise

    initialise(settings)  # the data folder's keys: clients never make their own


def start_supervised_worker(settings: Settings, timeout_s: float = 180.0) -> str:
    """Start ``memwarden worker --supervise`` for the namespace in the background (its own session;
    output to ``<data_dir>/logs/worker-<prefix>.log``) unless a worker of the namespace already
    answers at ``worker_url``; wait until it answers ``/health``. Returns one line saying which.
    Raises ``StackUnavailable`` (with the log tail) when it does not answer within ``timeout_s``, or
    ``MemwardenError`` when another namespace's worker holds the port."""
    import sys
    import time

    from memwarden.errors import MemwardenError

    from .worker_process import settings_env, worker_health

    health = worker_health(settings)
    if health is not None:
        if health.get("prefix") != settings.topic_prefix:
            raise MemwardenError(f"{settings.worker_url} answers for namespace {health.get('prefix')!r};"
                                 " set MEMWARDEN_WORKER_PORT")
        return f"a worker of namespace {settings.topic_prefix} already answers at {settings.worker_url}"
    log_path = settings.data_dir / "logs" / f"worker-{settings.topic_prefix}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "memwarden.cli", "worker", "--supervise"],
                                env=settings_env(settings), stdout=out, stderr=out, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if worker_health(settings, 1.0) is not None:
            return f"worker of namespace {settings.topic_prefix} supervised (pid {proc.pid}), log {log_path}"
        time.sleep(0.5)
    tail = log_path.read_text(errors="replace")[-2000:]
    raise StackUnavailable(f"the supervised worker did not answer within {timeout_s:.0f} s; log tail:\n{tail}")


def api_name(settings: Settings) -> str:
    """Pid-file name of the REST API server of the namespace started by :func:`start_api`."""
    return f"{API_PREFIX}{settings.topic_prefix}"


def start_api(settings: Settings, host: str = "127.0.0.1", port: int = 8080, timeout_s: float = 60.0) -> str:
    """Start ``memwarden serve --no-worker`` for the namespace in the background (its own session,
    output to ``<data_dir>/logs/api-<prefix>.log``, pid file ``api-<prefix>`` so that ``stack down``
    stops it) unless the namespace's API already answers at ``host:port``; wait until ``/v1/health``
    answers. A worker of the namespace must answer already (:func:`start_supervised_worker`).
    Returns one line saying which. Raises ``StackUnavailable`` (with the log tail) when it does not
    answer within ``timeout_s``, ``MemwardenError`` when the port is taken by something else."""
    import sys
    import time

    from memwarden.errors import MemwardenError

    from .worker_process import settings_env

    url = f"http://{host}:{port}"
    answer = _api_health(url)
    if answer is not None:
        if answer.get("namespace") == settings.topic_prefix:
            return f"the REST API of namespace {settings.topic_prefix} already answers at {url}"
        raise MemwardenError(f"{url} answers for namespace {answer.get('namespace')!r}; choose another --api-port")
    if not pidfiles.port_free(port, host):
        raise MemwardenError(f"port {port} on {host} is taken; choose another --api-port")
    log_path = settings.data_dir / "logs" / f"api-{settings.topic_prefix}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "memwarden.cli", "serve", "--no-worker", "--host", host,
                                 "--port", str(port)], env=settings_env(settings), stdout=out, stderr=out,
                                start_new_session=True)
    pidfiles.write_pidfile(settings, api_name(settings), proc.pid, url)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if _api_health(url) is not None:
            return f"REST API of namespace {settings.topic_prefix} on {url} (docs {url}/docs), log {log_path}"
        time.sleep(0.3)
    pidfiles.terminate([proc.pid], 5.0)
    pidfiles.pidfile_path(settings, api_name(settings)).unlink(missing_ok=True)
    tail = log_path.read_text(errors="replace")[-2000:]
    raise StackUnavailable(f"the REST API did not answer within {timeout_s:.0f} s; log tail:\n{tail}")


def _api_health(url: str) -> dict[str, Any] | None:
    """The JSON of ``GET <url>/v1/health`` (200 or 503), or ``None`` when nothing answers it."""
    try:
        body = httpx.get(f"{url}/v1/health", timeout=2.0).json()
    except (httpx.HTTPError, ValueError):
        return None
    return body if isinstance(body, dict) and "namespace" in body else None


def down(settings: Settings) -> None:
    """Stop everything of ours under ``data_dir``: first every worker supervisor
    (``supervisor-*.pid``), then every other process with a pid file in ``<data_dir>/run`` (workers),
    then Kafka (plus stray ``kafka.Kafka`` of this data_dir), then the local PostgreSQL (``pg_ctl stop
    -m fast``). Each gets SIGTERM (PostgreSQL: fast shutdown), up to 20 s, then SIGKILL. External
    services are left alone. Pid files are removed."""
    stop_workers(settings)
    kafka_broker.stop(settings, STOP_TIMEOUT)
    try:
        bindir: Path | None = postgres_server.find_bindir()
    except PrerequisiteMissing:
        bindir = None
    postgres_server.stop(settings, bindir, STOP_TIMEOUT)


def stop_workers(settings: Settings) -> list[str]:
    """Stop every process of ours with a pid file in ``<data_dir>/run`` but Kafka and PostgreSQL: worker
    supervisors first (a worker stopped before its supervisor would be restarted), then workers, the REST gateway
    and the MCP server (SIGTERM, up to 20 s, then SIGKILL); their pid files are removed. Returns the pid files'
    names (``worker-mw-8600`` ...). What the README means by "stop the worker" (before ``state digest``, a
    rebuild): until the twenty-fifth session only ``stack down`` did it, with the broker and the database."""
    worker_files = [p for p in _pidfile_paths(settings) if p.stem not in SERVICES]
    # supervisors first: a worker stopped before its supervisor would be restarted
    for group in ([p for p in worker_files if p.stem.startswith(PIDFILE_PREFIX)],
                  [p for p in worker_files if not p.stem.startswith(PIDFILE_PREFIX)]):
        pids = [pid for pid in (pidfiles.read_pidfile(p) for p in group) if pid is not None]
        pidfiles.terminate(pids, STOP_TIMEOUT)
    for path in worker_files:
        path.unlink(missing_ok=True)
    return sorted(p.stem for p in worker_files)


def status(settings: Settings) -> dict[str, dict[str, Any]]:
    """Per service: ``{"running": bool, "pid": int | None, "address": str | None, "external": bool,
    "log": str | None}``. Keys: ``kafka``, ``postgres``, then one per worker pid file in ``run/``.
    A local service runs when its process is alive and its port answers; an external one when it
    answers (checked with a few seconds' timeout)."""
    out: dict[str, dict[str, Any]] = {}
    if kafka_broker.is_local(settings):
        pid = kafka_broker.running_pid(settings)
        running = pid is not None and pidfiles.port_answers(settings.kafka_port)
        log = str(kafka_broker.kafka_paths(settings).server_log)
        out["kafka"] = _entry(running, pid, f"127.0.0.1:{settings.kafka_port}", False, log)
    else:
        running = kafka_broker.metadata_ok(settings.bootstrap_servers, 3.0)
        out["kafka"] = _entry(running, None, settings.bootstrap_servers, True, None)
    host, port, _, _ = postgres_server.dsn_target(settings)
    if postgres_server.is_local(settings):
        pid = postgres_server.running_pid(settings)
        running = pid is not None and pidfiles.port_answers(settings.postgres_port)
        log = str(postgres_server.pg_paths(settings).log)
        out["postgres"] = _entry(running, pid, f"127.0.0.1:{settings.postgres_port}", False, log)
    else:
        try:
            postgres_server.check_answers(settings, timeout=3.0)
            running = True
        except StackUnavailable:
            running = False
        out["postgres"] = _entry(running, None, f"{host or '<socket>'}:{port}", True, None)
    for path in _pidfile_paths(settings):
        if path.stem in SERVICES:
            continue
        if pidfiles.remove_stale(path):  # a worker that is gone is forgotten, not listed as stopped
            continue
        pid = pidfiles.read_pidfile(path)
        address = pidfiles.read_address(path)
        ready = _api_readiness(address) if path.stem.startswith(API_PREFIX) else _readiness(address)
        out[path.stem] = {**_entry(pid is not None, pid, address, False, None), **ready}
    return out


def _api_readiness(address: str | None) -> dict[str, Any]:
    """A REST API server's readiness: its ``/v1/health`` (the namespace's worker answers)."""
    answer = _api_health(address) if address else None
    return {"ready": bool(answer and answer.get("ok")), "agents": {}}


def _readiness(address: str | None) -> dict[str, Any]:
    """A worker's ``/ready`` answer: ``ready`` (bool or None when it serves no read API) and the
    state of its agents."""
    if address is None:
        return {"ready": None, "agents": {}}
    try:
        answer = httpx.get(f"{address}/ready", timeout=3.0)
        body = answer.json()
    except (httpx.HTTPError, ValueError):
        return {"ready": False, "agents": {}}
    return {"ready": answer.status_code == 200, "agents": body.get("agents", {}),
            "database": body.get("database"), "broker": body.get("broker")}


def _entry(running: bool, pid: int | None, address: str | None, external: bool, log: str | None) -> dict[str, Any]:
    return {"running": running, "pid": pid, "address": address, "external": external, "log": log}


def _pidfile_paths(settings: Settings) -> list[Path]:
    return sorted(pidfiles.run_dir(settings).glob("*.pid"))


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"
