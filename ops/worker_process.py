"""A worker as a child process with its own namespace (evaluations and integration tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from memwarden.errors import StackUnavailable
from memwarden.settings import Settings


def settings_env(settings: Settings) -> dict[str, str]:
    """The environment that makes a child process see ``settings``."""
    env = dict(os.environ)
    for name, value in settings.model_dump().items():
        key = f"MEMWARDEN_{name.upper()}"
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    return env


def worker_health(settings: Settings, timeout_s: float = 2.0) -> dict[str, Any] | None:
    """The ``GET /health`` answer of the worker at ``settings.worker_url`` (``ok``, ``roles``,
    ``prefix``: its namespace), or ``None`` when nothing answers there with JSON."""
    try:
        health = httpx.get(f"{settings.worker_url}/health", timeout=timeout_s).json()
    except (httpx.HTTPError, ValueError):
        return None
    return health if isinstance(health, dict) else None


def worker_serves(settings: Settings) -> bool:
    """Whether the worker at ``settings.worker_url`` answers ``/health`` for this namespace."""
    health = worker_health(settings)
    return health is not None and health.get("prefix") == settings.topic_prefix


def health_url(settings: Settings, roles: Sequence[str]) -> str | None:
    """Where a worker with ``roles`` answers ``/health`` and ``/ready``: the read endpoint's URL for a
    projector, ``http://<worker_host>:<health_port>`` for a gate-only worker that has a
    ``health_port``, else ``None`` (no HTTP server)."""
    if "projector" in roles:
        return settings.worker_url
    if settings.health_port is not None:
        return f"http://{settings.worker_host}:{settings.health_port}"
    return None


class WorkerProcess:
    """``memwarden worker`` for ``settings`` in a child process; its log goes to ``log_path``."""

    def __init__(self, settings: Settings, roles: Sequence[str] = ("gate", "projector"),
                 log_path: Path | None = None) -> None:
        self.settings = settings
        self.roles = tuple(roles)
        self.log_path = log_path or settings.data_dir / "logs" / f"worker-{settings.topic_prefix}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str | None:
        """Where the worker answers ``/health`` (:func:`health_url`); ``None``: it serves no HTTP."""
        return health_url(self.settings, self.roles)

    def start(self, timeout_s: float = 120.0) -> WorkerProcess:
        """Start, and wait until ``/health`` answers when the worker serves HTTP (:attr:`url`)."""
        from memwarden.ops.supervisor import worker_argv

        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(worker_argv(self.roles), env=settings_env(self.settings), stdout=log,
                                         stderr=log, start_new_session=True)
        if self.url is not None:
            self.wait_healthy(timeout_s)
        return self

    def wait_healthy(self, timeout_s: float) -> None:
        """Poll ``GET /health`` at :attr:`url` until it answers; raises ``StackUnavailable`` with the
        log tail (at once when the process exits)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                break
            try:
                if httpx.get(f"{self.url}/health", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        tail = self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""
        code = self.proc.poll() if self.proc is not None else None
        what = f"worker exited with code {code} before it was healthy" if code is not None else \
            f"worker did not become healthy in {timeout_s}s"
        raise StackUnavailable(f"{what}; log tail:\n{tail}")

    def alive(self) -> bool:
        """Whether the child process is still running."""
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the worker (crash simulation)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s`` seconds."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()

    def __enter__(self) -> WorkerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
