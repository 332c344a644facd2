"""Local PostgreSQL server for the stack: one cluster under ``<data_dir>/postgres``, on 127.0.0.1.

Layout: ``data/`` (the cluster, ``postmaster.pid`` in it), ``socket/`` (Unix socket dir), ``postgres.log``.
When we run as root every server command runs as the Debian ``postgres`` user (``runuser``), which
owns ``<data_dir>/postgres``. A ``postgres_dsn`` naming another host/port is an external database:
it is only checked, never started or stopped.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pwd
import shlex
import shutil
import signal
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import conninfo, sql

from memwarden.errors import PrerequisiteMissing, StackUnavailable
from memwarden.settings import Settings

from . import pidfiles

PG_ROOTS = (Path("/usr/lib/postgresql"),)
INSTALL_HINT = "apt-get update && apt-get install -y postgresql-15"
LOCAL_HOSTS = ("127.0.0.1", "localhost")


@dataclass(frozen=True)
class PgPaths:
    """Absolute paths of the local cluster's files under ``<data_dir>/postgres``."""

    root: Path
    data: Path
    socket_dir: Path
    log: Path


def pg_paths(settings: Settings) -> PgPaths:
    """Paths of the local cluster of ``settings`` (nothing is created). The socket dir moves to
    ``/tmp/memwarden-pg-<hash>`` when the socket path would exceed the 107-byte Unix limit."""
    root = Path(settings.data_dir).resolve() / "postgres"
    if os.geteuid() == 0 and not _traversable_by_others(root):
        # the server runs as the `postgres` user, which cannot enter a 0700 ancestor (a CI checkout
        # under a private folder, pytest's tmp_path): keep the cluster in a world-traversable place
        root = Path("/var/tmp") / f"memwarden-pg-{hashlib.sha256(str(root).encode()).hexdigest()[:12]}"
    sock = root / "socket"
    if len(f"{sock}/.s.PGSQL.{settings.postgres_port}") > 100:
        sock = Path("/tmp") / f"memwarden-pg-{hashlib.sha256(str(root).encode()).hexdigest()[:12]}"
    return PgPaths(root, root / "data", sock, root / "postgres.log")


def _traversable_by_others(path: Path) -> bool:
    """Whether every existing ancestor of ``path`` lets other users pass (o+x)."""
    return not any(p.exists() and not p.stat().st_mode & stat.S_IXOTH for p in path.parents)


def dsn_target(settings: Settings) -> tuple[str, int, str, str]:
    """``(host, port, user, dbname)`` of ``settings.postgres_dsn`` (libpq defaults filled in)."""
    params = conninfo.conninfo_to_dict(settings.postgres_dsn)
    user = str(params.get("user") or "memwarden")
    host = str(params.get("hostaddr") or params.get("host") or "")
    return host, int(params.get("port") or 5432), user, str(params.get("dbname") or user)


def is_local(settings: Settings) -> bool:
    """True if the DSN points at the local server: 127.0.0.1/localhost on ``settings.postgres_port``."""
    host, port, _, _ = dsn_target(settings)
    return host in LOCAL_HOSTS and port == settings.postgres_port


def find_bindir(path: str | None = None, roots: tuple[Path, ...] = PG_ROOTS) -> Path:
    """Directory holding ``pg_ctl``, ``initdb`` and ``postgres``: from ``path`` (default ``$PATH``), else
    the newest ``<root>/<version>/bin``. Raises ``PrerequisiteMissing`` (one line) if none is found."""
    candidates = []
    found = shutil.which("pg_ctl", path=path)
    if found:
        candidates.append(Path(found).resolve().parent)
    for root in roots:
        versions = [p for p in root.glob("*/bin") if p.parent.name.replace(".", "").isdigit()]
        candidates += sorted(versions, key=lambda p: float(p.parent.name), reverse=True)
    for bindir in candidates:
        if all(os.access(bindir / tool, os.X_OK) for tool in ("pg_ctl", "initdb", "postgres")):
            return bindir
    raise PrerequisiteMissing(f"PostgreSQL server binaries (pg_ctl, initdb) not found: {INSTALL_HINT}")


def check_server_user() -> None:
    """When root: the ``postgres`` user and ``runuser`` must exist. Raises ``PrerequisiteMissing``."""
    if os.geteuid() != 0:
        return
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        msg = f"user 'postgres' not found (PostgreSQL refuses root): {INSTALL_HINT}"
        raise PrerequisiteMissing(msg) from None
    if shutil.which("runuser") is None:
        raise PrerequisiteMissing("runuser not found: apt-get install -y util-linux")


def running_pid(settings: Settings) -> int | None:
    """Pid of our postmaster (from ``data/postmaster.pid``) if alive and serving this data dir."""
    data = pg_paths(settings).data
    pid = pidfiles.read_pidfile(data / "postmaster.pid")
    if pid is not None and str(data) in pidfiles.cmdline(pid):
        return pid
    return None


#: Attempts (one per second) to start over the backends a killed postmaster left behind.
ORPHAN_RETRIES = 15


def start(settings: Settings, bindir: Path, timeout: float = 60.0) -> int:
    """Init the cluster once, start it on 127.0.0.1:postgres_port, create the DSN's role and database.

    Returns the postmaster pid. Raises ``StackUnavailable`` (with the log tail) if initdb or pg_ctl
    fails or the server is not ready in ``timeout`` seconds; ``PrerequisiteMissing`` if the
    ``postgres`` user cannot reach ``<data_dir>/postgres``.
    """
    paths = _ensure_dirs(settings)
    if not (paths.data / "PG_VERSION").exists():
        shutil.rmtree(paths.data, ignore_errors=True)  # a half-done initdb
        _run(
            [
                str(bindir / "initdb"),
                "-D",
                str(paths.data),
                "--auth=trust",
                "--username=postgres",
                "-E",
                "UTF8",
                "--locale=C",
            ],
            paths,
            "initdb",
            timeout=120,
        )
    opts = f"-p {settings.postgres_port} -k {shlex.quote(str(paths.socket_dir))} -c listen_addresses=127.0.0.1"
    command = [str(bindir / "pg_ctl"), "-D", str(paths.data), "-o", opts, "-l", str(paths.log), "-w", "-t",
               str(int(timeout)), "start"]
    for attempt in range(ORPHAN_RETRIES + 1):
        try:
            _run(command, paths, "pg_ctl start", timeout=timeout + 15)
            break
        except StackUnavailable as exc:
            # a postmaster killed a moment ago (kill -9) leaves backends that hold the data folder's
            # lock until they notice and exit: try again for a few seconds, as an operator would
            if "lock file" not in str(exc) or attempt == ORPHAN_RETRIES:
                raise
            time.sleep(1.0)
    ensure_database(settings, timeout)
    pid = running_pid(settings)
    if pid is None:
        raise StackUnavailable(f"postgres started but has no live postmaster.pid:\n{log_tail(settings)}")
    return pid


def ensure_database(settings: Settings, timeout: float = 30.0) -> None:
    """Create the DSN's role (LOGIN SUPERUSER) and database on the local server if missing.

    Connects as ``postgres`` to the ``postgres`` database over TCP 127.0.0.1:postgres_port, retrying
    for up to ``timeout`` seconds. Raises ``StackUnavailable`` if it cannot connect.
    """
    _, _, user, dbname = dsn_target(settings)
    conn = _connect(
        dict(host="127.0.0.1", port=settings.postgres_port, user="postgres", dbname="postgres"),
        timeout,
        f"127.0.0.1:{settings.postgres_port}",
    )
    with conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [user]).fetchone():
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN SUPERUSER").format(sql.Identifier(user)))
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [dbname]).fetchone():
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):  # created concurrently
                conn.execute(
                    sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(dbname), sql.Identifier(user))
                )


def check_answers(settings: Settings, timeout: float = 10.0) -> None:
    """Connect with ``settings.postgres_dsn`` and run ``SELECT 1``; ``StackUnavailable`` if that fails
    within ``timeout`` seconds (the message names host:port, never the password)."""
    host, port, _, _ = dsn_target(settings)
    conn = _connect(settings.postgres_dsn, timeout, f"{host or '<socket>'}:{port}")
    with conn:
        conn.execute("SELECT 1")


def stop(settings: Settings, bindir: Path | None = None, timeout: float = 20.0) -> bool:
    """Stop the local server with ``pg_ctl stop -m fast`` (then SIGQUIT/SIGKILL if it lingers), plus
    any stray postmaster of this data dir. True if something was stopped."""
    paths = pg_paths(settings)
    pid = running_pid(settings)
    if pid is not None and bindir is not None:
        with contextlib.suppress(StackUnavailable):  # on failure: signals below
            _run(
                [
                    str(bindir / "pg_ctl"),
                    "-D",
                    str(paths.data),
                    "-m",
                    "fast",
                    "-w",
                    "-t",
                    str(int(timeout)),
                    "stop",
                ],
                paths,
                "pg_ctl stop",
                timeout=timeout + 15,
            )
    leftovers = set(stray_pids(settings)) | ({pid} if pid is not None else set())
    pidfiles.terminate(sorted(leftovers), timeout, signal.SIGINT)  # SIGINT = fast shutdown
    return pid is not None or bool(leftovers)


def stray_pids(settings: Settings) -> list[int]:
    """Live processes (postmasters) whose command line names this data dir."""
    return pidfiles.find_pids("postgres", str(pg_paths(settings).data))


def log_tail(settings: Settings, lines: int = 20) -> str:
    """Last lines of ``postgres.log``."""
    log = pg_paths(settings).log
    if not log.is_file():
        return "(no postgres log)"
    return "\n".join(log.read_text(errors="replace").strip().splitlines()[-lines:])


def _connect(params: str | dict[str, object], timeout: float, address: str) -> psycopg.Connection:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if isinstance(params, str):
                return psycopg.connect(params, connect_timeout=5, autocommit=True)
            return psycopg.connect(**params, connect_timeout=5, autocommit=True)  # type: ignore[arg-type]
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise StackUnavailable(f"postgres at {address} does not answer: {first}") from exc
            time.sleep(0.5)


def _ensure_dirs(settings: Settings) -> PgPaths:
    paths = pg_paths(settings)
    for d in (paths.root, paths.socket_dir):
        d.mkdir(parents=True, exist_ok=True)
    paths.log.touch(exist_ok=True)
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        for item in (paths.root, paths.socket_dir, paths.log):
            os.chown(item, user.pw_uid, user.pw_gid)
        probe = subprocess.run(
            ["runuser", "-u", "postgres", "--", "test", "-w", str(paths.root)], capture_output=True, cwd="/"
        )
        if probe.returncode != 0:
            raise PrerequisiteMissing(
                f"user postgres cannot write {paths.root}: make its parent directories world-searchable (chmod o+x)"
            )
    return paths


def _run(cmd: list[str], paths: PgPaths, what: str, timeout: float) -> None:
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--", *cmd]
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=paths.root,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise StackUnavailable(f"{what} did not finish within {timeout:.0f} s") from exc
    if proc.returncode != 0:
        out = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
        log = paths.log.read_text(errors="replace").strip().splitlines()[-10:] if paths.log.is_file() else []
        raise StackUnavailable(f"{what} failed (exit {proc.returncode}):\n{out}\n" + "\n".join(log))
