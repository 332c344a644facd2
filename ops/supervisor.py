"""The local process manager of a worker (issue 13 part 2): ``memwarden worker --supervise`` runs the
worker as a child process and starts a fresh one whenever it exits non-zero (an agent that gave up,
a crash, a ``kill -9``), after a backoff that doubles from 1 s to 60 s and starts over once a child
has run for 5 minutes. It is what compose's ``restart:`` or systemd's ``Restart=on-failure`` do in
production: the worker never lives on with a dead agent, and it is never left dead either.

With a ``probe`` (:func:`memwarden.ops.liveness.ready_probe` for a worker serving ``/ready``), a child
that runs but is stalled is restarted too: after ``probe_grace_s`` seconds of running, the probe is asked
every ``probe_every_s`` seconds, and a reason it returns stops the child (SIGTERM, then SIGKILL) and starts
a fresh one as after a non-zero exit (logged with the reason; :attr:`Supervisor.stalls` counts them).

SIGTERM or SIGINT to the supervisor stops the child (SIGTERM, 30 s, then SIGKILL) and ends it without
a restart; a child that exits 0 (stopped on purpose) ends it too. The supervisor records itself in
``<data_dir>/run/supervisor-<prefix>-<roles>.pid`` so that ``memwarden stack down`` stops it before
the workers, and ``stack status`` lists it.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

log = logging.getLogger("memwarden.supervisor")

#: Prefix of a supervisor's pid-file name (``stack down`` stops these first).
PIDFILE_PREFIX = "supervisor-"


@dataclass(frozen=True)
class RestartPolicy:
    """Backoff between restarts, in seconds: ``first_s`` doubling up to ``max_s``; a child that ran
    ``reset_after_s`` or longer counts as healthy and the next delay is ``first_s`` again."""

    first_s: float = 1.0
    max_s: float = 60.0
    reset_after_s: float = 300.0


def next_delay(policy: RestartPolicy, previous_s: float | None, ran_s: float) -> float:
    """Seconds to wait before the next start, after a child that ran ``ran_s`` seconds and the
    previous delay ``previous_s`` (``None``: no restart yet). Pure."""
    if previous_s is None or ran_s >= policy.reset_after_s:
        return policy.first_s
    return min(policy.max_s, max(policy.first_s, previous_s * 2))


def worker_argv(roles: Sequence[str]) -> list[str]:
    """The command line of an unsupervised worker with ``roles`` (this interpreter)."""
    argv = [sys.executable, "-m", "memwarden.cli", "worker"]
    for role in roles:
        argv += ["--role", role]
    return argv


#: The exit code a stalled child is given (EX_TEMPFAIL): the loop restarts it whatever it exited with.
STALLED_RC = 75


class Supervisor:
    """Run ``argv`` and restart it on a non-zero exit, or when ``probe`` reports it stalled (module
    docstring; ``probe_grace_s`` and ``probe_every_s`` in seconds). ``log_path`` receives the child's
    output (appended); ``None`` lets it inherit the supervisor's."""

    def __init__(self, argv: Sequence[str], log_path: Path | None = None,
                 policy: RestartPolicy = RestartPolicy(), stop_timeout_s: float = 30.0,
                 probe: Callable[[], str | None] | None = None, probe_every_s: float = 30.0,
                 probe_grace_s: float = 120.0) -> None:
        self.argv = list(argv)
        self.log_path = log_path
        self.policy = policy
        self.stop_timeout_s = stop_timeout_s
        self.probe = probe
        self.probe_every_s = probe_every_s
        self.probe_grace_s = probe_grace_s
        self.restarts = 0
        self.stalls = 0
        self._stopping = threading.Event()
        self._child: subprocess.Popen[bytes] | None = None

    def stop(self, signum: int | None = None, frame: FrameType | None = None) -> None:
        """Ask the loop to stop the child and end (a signal handler, or from another thread)."""
        self._stopping.set()
        child = self._child
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)

    def run(self) -> int:
        """Supervise until stopped or the child exits 0; returns the last exit code (0 when stopped)."""
        delay: float | None = None
        while True:
            started = time.monotonic()
            rc = self._run_child()
            ran = time.monotonic() - started
            if self._stopping.is_set() or rc == 0:
                return 0 if self._stopping.is_set() else rc
            delay = next_delay(self.policy, delay, ran)
            self.restarts += 1
            log.warning("worker exited with %s after %.0f s; restart %d in %.0f s", rc, ran, self.restarts, delay)
            if self._stopping.wait(delay):
                return 0

    def _run_child(self) -> int:
        out = open(self.log_path, "ab") if self.log_path is not None else None  # noqa: SIM115 - closed below
        try:
            # a session of its own: a signal to the supervisor's group reaches the child only through stop()
            self._child = subprocess.Popen(self.argv, stdout=out, stderr=out, start_new_session=True)
            if self._stopping.is_set():  # stopped while starting
                self._child.send_signal(signal.SIGTERM)
            started = time.monotonic()
            next_probe = started + self.probe_grace_s
            try:
                while True:
                    try:
                        return self._child.wait(0.5)
                    except subprocess.TimeoutExpired:
                        if self._stopping.is_set():
                            return self._terminate(self._child)
                    if self.probe is not None and time.monotonic() >= next_probe:
                        reason = self.probe()
                        next_probe = time.monotonic() + self.probe_every_s
                        if reason is not None and not self._stopping.is_set():
                            self.stalls += 1
                            log.error("worker stalled after %.0f s: %s; stopping it for a fresh one",
                                      time.monotonic() - started, reason)
                            self._child.send_signal(signal.SIGTERM)
                            self._terminate(self._child)
                            return STALLED_RC
            finally:
                self._child = None
        finally:
            if out is not None:
                out.close()

    def _terminate(self, child: subprocess.Popen[bytes]) -> int:
        try:
            return child.wait(self.stop_timeout_s)
        except subprocess.TimeoutExpired:
            child.kill()
            return child.wait(10)


def install_signal_handlers(supervisor: Supervisor) -> None:
    """SIGTERM and SIGINT stop ``supervisor`` (main thread only)."""
    signal.signal(signal.SIGTERM, supervisor.stop)
    signal.signal(signal.SIGINT, supervisor.stop)
