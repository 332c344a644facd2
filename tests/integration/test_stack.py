"""ops.stack against real processes: a private stack (own data_dir, ports 29092/29093/25432) goes up,
up again, down, and leaves nothing behind. It does not touch the default stack (19092/19093/15432)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from confluent_kafka.admin import AdminClient

from memwarden.ops import pidfiles, stack
from memwarden.settings import Settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture()
def private_settings() -> Iterator[Settings]:
    # Not pytest's tmp_path: its /tmp/pytest-of-<user> is mode 0700, out of reach of the postgres user.
    data_dir = Path(tempfile.mkdtemp(prefix="memwarden-stack-", dir="/tmp"))
    data_dir.chmod(0o755)
    settings = Settings(
        data_dir=data_dir,
        kafka_port=29092,
        kafka_controller_port=29093,
        postgres_port=25432,
        bootstrap_servers="127.0.0.1:29092",
        postgres_dsn="postgresql://memwarden@127.0.0.1:25432/memwarden",
    )
    try:
        yield settings
    finally:
        stack.down(settings)
        shutil.rmtree(data_dir, ignore_errors=True)


def _our_processes(data_dir: Path) -> list[str]:
    needle = str(data_dir.resolve())
    lines = (pidfiles.cmdline(int(p.name)) for p in Path("/proc").iterdir() if p.name.isdigit())
    return [line for line in lines if needle in line]


def test_up_twice_status_down_leaves_nothing(private_settings: Settings) -> None:
    settings = private_settings
    stack.up(settings)
    first = stack.status(settings)
    assert first["kafka"]["running"] and first["postgres"]["running"], first
    assert first["kafka"]["address"] == "127.0.0.1:29092"
    assert first["postgres"]["address"] == "127.0.0.1:25432"

    started = time.monotonic()
    stack.up(settings)  # harmless: same processes, quick
    assert time.monotonic() - started < 15
    second = stack.status(settings)
    assert {k: second[k]["pid"] for k in ("kafka", "postgres")} == {k: first[k]["pid"] for k in ("kafka", "postgres")}

    metadata = AdminClient({"bootstrap.servers": settings.bootstrap_servers}).list_topics(timeout=10)
    assert metadata.brokers
    with psycopg.connect(settings.postgres_dsn, connect_timeout=5) as conn:
        assert conn.execute("SELECT current_user, current_database()").fetchone() == ("memwarden", "memwarden")

    worker = subprocess.Popen(["sleep", "300"], start_new_session=True)
    pidfiles.write_pidfile(settings, "worker-test", worker.pid)
    assert stack.status(settings)["worker-test"]["running"]

    stack.down(settings)
    assert worker.wait(timeout=5) != 0
    after = stack.status(settings)
    assert not after["kafka"]["running"] and not after["postgres"]["running"], after
    assert after["kafka"]["pid"] is None and after["postgres"]["pid"] is None
    assert "worker-test" not in after
    assert list(pidfiles.run_dir(settings).glob("*.pid")) == []
    assert _our_processes(Path(settings.data_dir)) == []
    assert pidfiles.port_free(29092) and pidfiles.port_free(25432)
