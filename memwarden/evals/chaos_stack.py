"""A private stack for the chaos evaluation (issue 13 part 4): its own Kafka broker, PostgreSQL server,
gate worker and projector worker, on free loopback ports under a throw-away ``data_dir``, so that
killing them never touches the stack a user works on.

Each component can be killed with SIGKILL (:meth:`PrivateStack.kill`) and restarted as an operator
would (:meth:`PrivateStack.restart`: ``memwarden stack up`` for the broker and the database, a fresh
worker process for a worker). The Kafka jars and the ONNX export of the embedding model are caches:
they are hard-linked from the user's ``data_dir`` when present (nothing is downloaded twice).
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

from memwarden.errors import StackUnavailable
from memwarden.ops import kafka_broker, postgres_server, stack
from memwarden.ops.pidfiles import free_port, is_alive
from memwarden.ops.worker_process import WorkerProcess
from memwarden.settings import Settings

#: The components the evaluation kills, in order.
COMPONENTS = ("broker", "postgres", "gate", "projector")
#: Caches of the user's ``data_dir`` reused by the private stack (relative paths).
CACHES = ("kafka/libs", "onnx")


def _free_ports(n: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < n:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def private_settings(base: Settings, root: Path) -> Settings:
    """``base`` moved to ``root``: fresh loopback ports for Kafka (client and controller), PostgreSQL,
    the projector's read endpoint and the gate worker's ``/ready`` (``health_port``), namespace
    ``chaos``, its own key-encryption key and root admin (under ``root``)."""
    kafka, controller, pg, worker, health = _free_ports(5)
    return base.model_copy(update={
        "data_dir": root.resolve(), "kafka_port": kafka, "kafka_controller_port": controller, "postgres_port": pg,
        "bootstrap_servers": f"127.0.0.1:{kafka}", "postgres_dsn": f"postgresql://memwarden@127.0.0.1:{pg}/memwarden",
        "worker_host": "127.0.0.1", "worker_port": worker, "health_port": health, "topic_prefix": "chaos",
        "ledger_prefix": None, "kek": None, "admin_public_key": None, "qdrant_url": None, "read_auth": "required",
    })


def seed_caches(source: Path, root: Path) -> None:
    """Hard-link (copy across file systems) the :data:`CACHES` of ``source`` into ``root``."""
    for rel in CACHES:
        src, dst = source / rel, root / rel
        if src.is_dir() and not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                shutil.copytree(src, dst, copy_function=os.link)
            except OSError:
                shutil.rmtree(dst, ignore_errors=True)
                shutil.copytree(src, dst)


@dataclass
class PrivateStack:
    """The private stack of ``settings`` and its two workers (gate-only and projector-only)."""

    settings: Settings
    gate: WorkerProcess = field(init=False)
    projector: WorkerProcess = field(init=False)

    def __post_init__(self) -> None:
        logs = self.settings.data_dir / "logs"
        self.gate = WorkerProcess(self.settings, ("gate",), logs / "worker-gate.log")
        self.projector = WorkerProcess(self.settings, ("projector",), logs / "worker-projector.log")

    @property
    def gate_url(self) -> str:
        """Where the gate worker answers ``/health`` and ``/ready``."""
        return self.gate.url or ""

    @property
    def projector_url(self) -> str:
        """Where the projector worker answers the read API, ``/health`` and ``/ready``."""
        return self.projector.url or ""

    def up(self) -> None:
        """Start the broker and the database, then both workers (each answering ``/health``).
        Raises ``PrerequisiteMissing`` or ``StackUnavailable``."""
        stack_up(self.settings)
        self.gate.start()  # waits until its /health answers on health_port
        self.projector.start()

    def kill(self, component: str) -> None:
        """SIGKILL ``component`` (one of :data:`COMPONENTS`); ``ValueError`` for another name,
        ``StackUnavailable`` when it is not running."""
        if component == "broker":
            _kill(kafka_broker.running_pid(self.settings), component)
        elif component == "postgres":
            _kill(postgres_server.running_pid(self.settings), component)
        elif component == "gate":
            self.gate.kill()
        elif component == "projector":
            self.projector.kill()
        else:
            raise ValueError(f"component: one of {COMPONENTS}, not {component!r}")

    def answers(self, component: str) -> bool:
        """Whether ``component`` answers now (within about a second): the broker's metadata, a
        ``SELECT 1``, a worker's ``/health``. Not readiness: whether the process is back at all."""
        if component == "broker":
            return kafka_broker.metadata_ok(self.settings.bootstrap_servers, 1.0)
        if component == "postgres":
            try:
                with psycopg.connect(self.settings.postgres_dsn, connect_timeout=1) as conn:
                    conn.execute("SELECT 1")
                return True
            except psycopg.Error:
                return False
        url = {"gate": self.gate_url, "projector": self.projector_url}.get(component)
        if url is None:
            raise ValueError(f"component: one of {COMPONENTS}, not {component!r}")
        try:
            return httpx.get(f"{url}/health", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    def restart(self, component: str) -> None:
        """Bring ``component`` back as an operator would: ``memwarden stack up`` for the broker and
        the database (it waits out what a killed server left behind), a new process for a worker."""
        if component in ("broker", "postgres"):
            stack_up(self.settings)
        elif component == "gate":
            self.gate.start()
        elif component == "projector":
            self.projector.start()
        else:
            raise ValueError(f"component: one of {COMPONENTS}, not {component!r}")

    def down(self) -> None:
        """Stop both workers, the broker and the database (pid files, then the servers)."""
        for worker in (self.projector, self.gate):
            worker.stop()
        stack.down(self.settings)


def stack_up(settings: Settings, attempts: int = 3) -> None:
    """``stack.up`` retried ``attempts`` times, 2 s apart (a restarted server may still be releasing
    its port); the last failure propagates."""
    for attempt in range(attempts):
        try:
            stack.up(settings)
            return
        except StackUnavailable:
            if attempt == attempts - 1:
                raise
            time.sleep(2.0)


def _kill(pid: int | None, component: str, timeout_s: float = 10.0) -> None:
    """SIGKILL ``pid`` and wait until it is gone."""
    if pid is None:
        raise StackUnavailable(f"{component} is not running: nothing to kill")
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while is_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
