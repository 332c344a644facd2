"""Integration fixtures: the real local stack (Kafka, PostgreSQL), a fresh namespace per module and
a real worker process. Nothing is mocked."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from typer.testing import CliRunner

from memwarden.bootstrap import drop_projections
from memwarden.commands.model import PrincipalKind
from memwarden.commands.signing import Signer
from memwarden.keystore import admin_signer
from memwarden.ops.pidfiles import free_port
from memwarden.ops.topics import delete_topics, ensure_topics
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.producers.enroll import enroll
from memwarden.schemas.codec import default_codec
from memwarden.settings import Settings
from memwarden.stores.ledger import high_watermark
from memwarden.stores.pg import connect, migrate

T = TypeVar("T")


def poll(fn: Callable[[], T], timeout_s: float = 60.0, every_s: float = 0.2, what: str = "condition") -> T:
    """Call ``fn`` until it returns a truthy value; fail after ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout_s}s (last: {value!r})")
        time.sleep(every_s)


@pytest.fixture(scope="session")
def stack() -> Settings:
    """The local stack, brought up if it is not (``make test`` brings it up first)."""
    from memwarden.ops import stack as ops_stack

    settings = Settings()
    ops_stack.up(settings)
    return settings


def make_namespace(base: Settings) -> Settings:
    s = base.model_copy(update={"topic_prefix": f"test.{uuid.uuid4().hex[:10]}", "worker_port": free_port()})
    migrate(s)
    ensure_topics(s)
    return s


def drop(settings: Settings) -> None:
    drop_projections(settings)
    delete_topics(settings)


@pytest.fixture(scope="module")
def namespace(stack: Settings) -> Iterator[Settings]:
    s = make_namespace(stack)
    yield s
    drop(s)


@pytest.fixture(scope="module")
def worker(namespace: Settings) -> Iterator[WorkerProcess]:
    with WorkerProcess(namespace) as w:
        yield w


@pytest.fixture(scope="module")
def client(namespace: Settings) -> Iterator[MemwardenClient]:
    with MemwardenClient(namespace) as c:
        yield c


def read_topic(settings: Settings, logical: str) -> list[Any]:
    """Every record of a namespace topic, from offset 0 (raw confluent-kafka messages)."""
    consumer = Consumer({"bootstrap.servers": settings.bootstrap_servers, "group.id": f"probe-{uuid.uuid4()}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    topic = settings.topic(logical)
    parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    highs = {p: high_watermark(consumer, topic, p) for p in parts}
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
    out: list[Any] = []
    pending = {p for p, h in highs.items() if h > 0}
    deadline = time.monotonic() + 20
    while pending and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            pending.discard(msg.partition())
            continue
        out.append(msg)
        if msg.offset() + 1 >= highs[msg.partition()]:
            pending.discard(msg.partition())
    consumer.close()
    return out


def decisions(settings: Settings) -> list[dict[str, Any]]:
    """Every ``GateDecided`` record of the namespace, decoded."""
    return [default_codec().decode(m.value())[1] for m in read_topic(settings, "decisions")]


def rows(settings: Settings, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with connect(settings) as conn:
        return conn.execute(sql, params).fetchall()  # type: ignore[arg-type]


def kind_of(principal_id: str) -> PrincipalKind:
    """Principal kind named by the id's prefix (``user:``, ``agent:``, ``service:``, ``reviewer:``)."""
    return PrincipalKind[principal_id.split(":", 1)[0].upper()]


def enroll_ids(client: MemwardenClient, settings: Settings, *principal_ids: str,
               roles: Sequence[str] = ()) -> dict[str, Signer]:
    """Register ``principal_ids`` (kind from the id prefix, the same ``roles`` each) through the real
    gate, signed by the namespace's root admin, and wait until every registration is ACCEPTED. The
    client signs for them from then on. Raises ``MemwardenError`` if one is refused."""
    return enroll(client, admin_signer(settings), [(p, kind_of(p), tuple(roles)) for p in principal_ids])


@pytest.fixture(scope="module")
def principal(namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> Callable[..., str]:
    """Factory: ``principal(kind="user", roles=())`` registers a fresh principal and returns its id."""

    def make(kind: str = "user", roles: Sequence[str] = ()) -> str:
        pid = f"{kind}:{uuid.uuid4().hex[:8]}"
        enroll_ids(client, namespace, pid, roles=roles)
        return pid

    return make


def run_cli(namespace: Settings, *args: str, worker_port: int | None = None) -> Any:
    """``memwarden <args>`` run in-process against ``namespace`` (its topic prefix and worker port, or
    ``worker_port``, in the environment the settings are read from); the click ``Result``."""
    from memwarden.cli import app

    return CliRunner().invoke(app, list(args), env={"MEMWARDEN_TOPIC_PREFIX": namespace.topic_prefix,
                                                    "MEMWARDEN_WORKER_PORT": str(worker_port or namespace.worker_port)})


def said(result: Any) -> str:
    """A CLI result's output as one line (the error box wraps and frames it)."""
    return " ".join(result.output.replace("│", " ").split())
