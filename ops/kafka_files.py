"""Files of the local Kafka broker under ``<data_dir>/kafka``: their layout (:class:`KafkaPaths`), the
runtime jars resolved with Maven from ``ops/kafka/pom.xml``, the text of ``server.properties`` and of
the log4j configs, and the KRaft cluster id. Starting, waiting for and stopping the broker is
:mod:`memwarden.ops.kafka_broker`."""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from memwarden.errors import StackUnavailable
from memwarden.settings import Settings

POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s)]+", re.IGNORECASE)
_STDERR_APPENDER = """\
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""
#: Text of ``tools-log4j.properties`` (one-off tools such as ``StorageTool``): WARN+ to stderr.
TOOLS_LOG4J = "log4j.rootLogger=WARN, stderr\n" + _STDERR_APPENDER
_BROKER_LOG4J = (
    """\
log4j.rootLogger=INFO, file, stderr
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File={log}
log4j.appender.file.MaxFileSize=20MB
log4j.appender.file.MaxBackupIndex=3
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stderr.Threshold=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.kafka.clients=WARN
"""
    + _STDERR_APPENDER
)
_HOST = re.compile(r"\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:org|com|net|io|dev|cloud)\b(?::\d+)?", re.IGNORECASE)


@dataclass(frozen=True)
class KafkaPaths:
    """Absolute paths of the broker's files under ``<data_dir>/kafka``."""

    root: Path
    libs: Path
    config: Path
    data: Path
    logs: Path

    @property
    def server_properties(self) -> Path:
        return self.config / "server.properties"

    @property
    def log4j_properties(self) -> Path:
        return self.config / "log4j.properties"

    @property
    def tools_log4j_properties(self) -> Path:
        return self.config / "tools-log4j.properties"

    @property
    def out_log(self) -> Path:
        return self.logs / "kafka.out"

    @property
    def server_log(self) -> Path:
        return self.logs / "server.log"


def kafka_paths(settings: Settings) -> KafkaPaths:
    """Paths of the broker of ``settings`` (nothing is created)."""
    root = Path(settings.data_dir).resolve() / "kafka"
    return KafkaPaths(root, root / "libs", root / "config", root / "data", root / "logs")


def resolve_jars(settings: Settings, mvn: str = "mvn", timeout: float = 900.0) -> Path:
    """Copy the broker's runtime jars into ``<data_dir>/kafka/libs`` with Maven; returns that dir.

    Skipped when the libs were resolved from a pom with the same SHA-256 (stored in ``.pom.sha256``).
    A changed pom replaces the whole directory. Raises ``StackUnavailable`` if Maven fails or takes
    longer than ``timeout`` seconds (its output is included, with URLs removed).
    """
    paths = kafka_paths(settings)
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()
    stamp = paths.libs / ".pom.sha256"
    if stamp.is_file() and stamp.read_text().strip() == digest and any(paths.libs.glob("kafka_2.13-*.jar")):
        return paths.libs
    staging = paths.root / "libs.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.parent.mkdir(parents=True, exist_ok=True)
    cmd = [mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies"]
    cmd += [f"-DoutputDirectory={staging}", "-DincludeScope=runtime"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=paths.root)
    except subprocess.TimeoutExpired as exc:
        raise StackUnavailable(f"maven did not resolve the kafka jars within {timeout:.0f} s") from exc
    if proc.returncode != 0 or not any(staging.glob("kafka_2.13-*.jar")):
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        tail = _HOST.sub("<host>", _URL.sub("<url>", tail))  # never echo registry addresses
        raise StackUnavailable(f"maven could not resolve the kafka jars (exit {proc.returncode}):\n{tail}")
    (staging / ".pom.sha256").write_text(digest + "\n")
    shutil.rmtree(paths.libs, ignore_errors=True)
    staging.replace(paths.libs)
    return paths.libs


def server_properties(settings: Settings) -> str:
    """Text of ``server.properties`` for the single KRaft node of ``settings``."""
    paths = kafka_paths(settings)
    port, ctl = settings.kafka_port, settings.kafka_controller_port
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{ctl}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{ctl}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(paths.data),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "4",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "log.cleaner.backoff.ms": "1000",
        "num.network.threads": "2",
        "num.io.threads": "4",
    }
    return "".join(f"{k}={v}\n" for k, v in props.items())


def log4j_properties(settings: Settings) -> str:
    """Text of ``log4j.properties``: INFO into ``logs/server.log`` (rolling), WARN+ to stderr."""
    return _BROKER_LOG4J.replace("{log}", str(kafka_paths(settings).server_log))


def new_cluster_id() -> str:
    """A random KRaft cluster id as Kafka writes it (URL-safe base64 of 16 bytes, no padding)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text
