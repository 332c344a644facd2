"""Single-node Apache Kafka 3.9 broker (KRaft, combined broker+controller) run from Maven-resolved jars.

Layout under ``<data_dir>/kafka``: ``libs/`` (jars, ``.pom.sha256``), ``config/`` (``server.properties``,
``log4j.properties``), ``data/`` (log dirs), ``logs/`` (``server.log``; ``kafka.out`` gets the JVM's
stdout/stderr and WARN+ lines), ``cluster.id``. The pid file is ``<data_dir>/run/kafka.pid``. Those files
(paths, jars, config texts) are :mod:`memwarden.ops.kafka_files`; this module prepares, launches, waits
for and stops the broker process.
"""

from __future__ import annotations

import subprocess
import time

from memwarden.errors import StackUnavailable
from memwarden.settings import Settings

from . import pidfiles
from .kafka_files import TOOLS_LOG4J, kafka_paths, log4j_properties, new_cluster_id, resolve_jars, server_properties

MAIN_CLASS = "kafka.Kafka"
PIDFILE_NAME = "kafka"
# KAFKA_JVM_PERFORMANCE_OPTS of kafka-run-class.sh (3.9.1), heap sized for a 2-core dev machine.
JVM_FLAGS = (
    "-Xmx768m",
    "-Xms256m",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
)
_MARKER = "=== memwarden: starting kafka.Kafka ==="


def is_local(settings: Settings) -> bool:
    """True if ``settings.bootstrap_servers`` names the local broker (127.0.0.1/localhost:kafka_port)."""
    local = {f"127.0.0.1:{settings.kafka_port}", f"localhost:{settings.kafka_port}"}
    return any(s.strip() in local for s in settings.bootstrap_servers.split(","))


def prepare(settings: Settings, java: str, mvn: str) -> None:
    """Resolve jars, (re)write the configs, and format the storage once (with a cluster id kept in
    ``cluster.id``). Raises ``StackUnavailable`` if Maven or ``StorageTool format`` fails."""
    paths = kafka_paths(settings)
    for d in (paths.config, paths.data, paths.logs):
        d.mkdir(parents=True, exist_ok=True)
    resolve_jars(settings, mvn)
    paths.server_properties.write_text(server_properties(settings))
    paths.log4j_properties.write_text(log4j_properties(settings))
    paths.tools_log4j_properties.write_text(TOOLS_LOG4J)
    if (paths.data / "meta.properties").exists():
        return
    id_file = paths.root / "cluster.id"
    if not id_file.exists():
        id_file.write_text(new_cluster_id() + "\n")
    cmd = [java, "-Xmx256m", f"-Dlog4j.configuration=file:{paths.tools_log4j_properties}"]
    cmd += ["-cp", f"{paths.libs}/*", "kafka.tools.StorageTool", "format"]
    cmd += ["-t", id_file.read_text().strip(), "-c", str(paths.server_properties)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise StackUnavailable(f"kafka storage format failed:\n{_last_lines(proc.stdout + proc.stderr)}")


def running_pid(settings: Settings) -> int | None:
    """Pid of our broker process if its pid file names a live ``kafka.Kafka`` of this data_dir."""
    pid = pidfiles.read_pidfile(pidfiles.pidfile_path(settings, PIDFILE_NAME))
    if pid is not None and MAIN_CLASS in pidfiles.cmdline(pid):
        return pid
    return None


def launch(settings: Settings, java: str) -> int:
    """Start the broker detached (new session, output to ``logs/kafka.out``) without waiting.

    ``prepare`` must have run. Writes ``run/kafka.pid`` and returns the pid; see ``wait_ready``.
    """
    paths = kafka_paths(settings)
    cmd = [java, *JVM_FLAGS, f"-Dkafka.logs.dir={paths.logs}"]
    cmd += [f"-Dlog4j.configuration=file:{paths.log4j_properties}", "-cp", f"{paths.libs}/*"]
    cmd += [MAIN_CLASS, str(paths.server_properties)]
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    for log in (paths.out_log, paths.server_log):  # log_tail shows only what follows the last marker
        with log.open("a") as fh:
            fh.write(f"{_MARKER} {stamp}\n")
    # `sh` backgrounds the JVM and exits, so the broker is not our child (no zombie, survives us).
    launcher = 'out=$1; shift; "$@" </dev/null >>"$out" 2>&1 & echo $!'
    proc = subprocess.run(
        ["sh", "-c", launcher, "sh", str(paths.out_log), *cmd],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=paths.root,
        start_new_session=True,
    )
    pid = int(proc.stdout.strip())
    pidfiles.write_pidfile(settings, PIDFILE_NAME, pid)
    return pid


def start(settings: Settings, java: str, timeout: float = 90.0) -> int:
    """``launch`` the broker and wait until it serves; returns the pid.

    If it does not answer within ``timeout`` seconds it is stopped and ``StackUnavailable`` carries
    the last log lines.
    """
    pid = launch(settings, java)
    try:
        wait_ready(settings, pid, timeout)
    except StackUnavailable:
        stop(settings)
        raise
    return pid


def wait_ready(settings: Settings, pid: int | None, timeout: float = 90.0) -> None:
    """Poll until the broker on 127.0.0.1:kafka_port returns metadata naming a broker.

    Gives up after ``timeout`` seconds, or as soon as process ``pid`` (if given) has exited, raising
    ``StackUnavailable`` with the last lines of the broker's logs.
    """
    address = f"127.0.0.1:{settings.kafka_port}"
    deadline = time.monotonic() + timeout
    while not pidfiles.port_answers(settings.kafka_port):
        if pid is not None and not pidfiles.is_alive(pid):
            raise StackUnavailable(f"kafka exited during startup:\n{log_tail(settings)}")
        if time.monotonic() > deadline:
            raise StackUnavailable(f"kafka not answering on {address} after {timeout:.0f} s:\n{log_tail(settings)}")
        time.sleep(0.25)
    remaining = max(deadline - time.monotonic(), 5.0)
    if not metadata_ok(address, remaining):
        raise StackUnavailable(f"kafka on {address} returned no metadata within {timeout:.0f} s:\n{log_tail(settings)}")


def metadata_ok(bootstrap: str, timeout: float) -> bool:
    """True if an AdminClient gets cluster metadata with at least one broker within ``timeout`` s."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if admin.list_topics(timeout=min(5.0, max(deadline - time.monotonic(), 0.5))).brokers:
                return True
        except Exception:  # KafkaException: not ready yet
            pass
        time.sleep(0.25)
    return False


def stop(settings: Settings, timeout: float = 20.0) -> bool:
    """Stop our broker (SIGTERM, ``timeout`` seconds, then SIGKILL), plus any stray ``kafka.Kafka``
    whose command line mentions this data_dir. Removes the pid file. True if something was stopped."""
    pids = set(stray_pids(settings))
    pid = running_pid(settings)
    if pid is not None:
        pids.add(pid)
    pidfiles.terminate(sorted(pids), timeout)
    pidfiles.pidfile_path(settings, PIDFILE_NAME).unlink(missing_ok=True)
    return bool(pids)


def stray_pids(settings: Settings) -> list[int]:
    """Live ``kafka.Kafka`` processes whose command line mentions this data_dir."""
    return pidfiles.find_pids(MAIN_CLASS, str(kafka_paths(settings).root))


def log_tail(settings: Settings, lines: int = 20) -> str:
    """Last lines of ``kafka.out`` (JVM output, WARN+) and ``server.log`` written since the last
    ``launch``, labelled by file."""
    paths = kafka_paths(settings)
    parts = []
    for log in (paths.out_log, paths.server_log):
        if not log.is_file():
            continue
        with log.open("rb") as fh:
            fh.seek(max(log.stat().st_size - 512 * 1024, 0))
            text = fh.read().decode(errors="replace")
        text = text.rsplit(_MARKER, 1)[-1].split("\n", 1)[-1] if _MARKER in text else text
        if text.strip():
            parts.append(f"--- {log.name}:\n{_last_lines(text, lines)}")
    return "\n".join(parts) or "(no kafka log output)"


def _last_lines(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
