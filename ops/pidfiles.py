"""Pid files under ``<data_dir>/run/``, process liveness and termination, loopback port probes.

A pid file holds two lines: the pid and the process start time (clock ticks since boot, field 22 of
``/proc/<pid>/stat``). The start time guards against pid reuse: a pid file whose process has died and
whose pid now belongs to another program reads as "not running". Linux only (uses ``/proc``).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import time
from collections.abc import Iterable
from pathlib import Path

from memwarden.settings import Settings

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,200}")


def run_dir(settings: Settings) -> Path:
    """Directory of every pid file of the stack: ``<data_dir>/run`` (absolute; not created here)."""
    return Path(settings.data_dir).resolve() / "run"


def pidfile_path(settings: Settings, name: str) -> Path:
    """Path of the pid file of service/worker ``name``; ``ValueError`` if the name is not a plain word."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"pid file name {name!r}: letters, digits, '.', '_' or '-' only")
    return run_dir(settings) / f"{name}.pid"


def start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot, or ``None`` if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return int(fields[19]) if len(fields) > 19 else None


def is_alive(pid: int | None) -> bool:
    """True if ``pid`` is a running process. A zombie counts as dead (it is never reaped here: its
    parent, e.g. a ``Popen`` owner, keeps its exit status)."""
    if not pid or pid <= 0:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat[stat.rfind(")") + 2 :].split(" ", 1)[0]
    return state not in ("Z", "X", "x")


def cmdline(pid: int) -> str:
    """Command line of ``pid`` with arguments joined by spaces; ``""`` if gone (or a zombie)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def find_pids(*needles: str) -> list[int]:
    """Pids (other than ours) of live processes whose command line contains every one of ``needles``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        line = cmdline(int(entry.name))
        if line and all(n in line for n in needles) and is_alive(int(entry.name)):
            found.append(int(entry.name))
    return sorted(found)


def write_pidfile(settings: Settings, name: str, pid: int, address: str | None = None) -> Path:
    """Record that process ``pid`` is the running ``name`` (a worker, ``kafka`` ...).

    Writes ``<data_dir>/run/<name>.pid`` atomically (pid, start time and, for a worker that serves
    the read API, its ``address`` URL). ``down`` stops every process recorded there, workers before
    Kafka. Returns the path. Raises ``ValueError`` on a bad ``name``.
    """
    path = pidfile_path(settings, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".pid.tmp")
    tmp.write_text(f"{pid}\n{start_time(pid) or ''}\n{address or ''}\n")
    tmp.replace(path)
    return path


def read_pidfile(path: Path) -> int | None:
    """Pid recorded in ``path`` if that process is still the one recorded and alive, else ``None``."""
    try:
        lines = path.read_text().split()
        pid = int(lines[0])
    except (OSError, ValueError, IndexError):
        return None
    if not is_alive(pid):
        return None
    if len(lines) > 1 and lines[1].isdigit() and start_time(pid) != int(lines[1]):
        return None  # the pid was reused by another process
    return pid


def read_address(path: Path) -> str | None:
    """The URL a worker's pid file records (its read API), or ``None``."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    return lines[2].strip() or None if len(lines) > 2 else None


def remove_stale(path: Path) -> bool:
    """Delete ``path`` if it names no live process; True if it was removed."""
    if path.exists() and read_pidfile(path) is None:
        path.unlink(missing_ok=True)
        return True
    return False


def terminate(pids: Iterable[int], timeout: float = 20.0, sig: int = signal.SIGTERM) -> list[int]:
    """Send ``sig`` to every live pid, wait up to ``timeout`` seconds, then SIGKILL the survivors.

    A pid that leads its own process group (started with ``start_new_session``) is signalled as a
    group, so its children go too. Returns the pids that had to be killed with SIGKILL.
    """
    targets = [p for p in pids if is_alive(p)]
    for pid in targets:
        _signal(pid, sig)
    killed = _wait_dead(targets, timeout)
    for pid in killed:
        _signal(pid, signal.SIGKILL)
    _wait_dead(killed, 5.0)
    return killed


def stop_pidfile(settings: Settings, name: str, timeout: float = 20.0) -> bool:
    """Stop the process recorded as ``name`` (SIGTERM, ``timeout`` seconds, then SIGKILL).

    Removes ``<data_dir>/run/<name>.pid`` in every case. Returns True if a live process was stopped,
    False if there was none (no file, or a stale one). Raises ``ValueError`` on a bad ``name``.
    """
    path = pidfile_path(settings, name)
    pid = read_pidfile(path)
    if pid is not None:
        terminate([pid], timeout)
    path.unlink(missing_ok=True)
    return pid is not None


def port_answers(port: int, host: str = "127.0.0.1", timeout: float = 1.0) -> bool:
    """True if a TCP connection to ``host:port`` is accepted within ``timeout`` seconds."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    """True if a server could listen on ``host:port`` now (bind test with SO_REUSEADDR, as servers do)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS reports free on ``host`` right now (for a worker's read endpoint)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_owner(port: int) -> int | None:
    """Pid of a process listening on TCP ``port`` (any address), best effort via ``/proc``; else None."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for row in Path(table).read_text().splitlines()[1:]:
                cols = row.split()
                if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{cols[9]}]")
    if not inodes:
        return None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in inodes:
                        return int(entry.name)
    return None


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        try:
            group = os.getpgid(pid)
        except ProcessLookupError:
            return
        if group == pid and group != os.getpgrp():
            os.killpg(group, sig)
        else:
            os.kill(pid, sig)


def _wait_dead(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    alive = [p for p in pids if is_alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if is_alive(p)]
    return alive
