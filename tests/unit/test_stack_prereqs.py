"""Prerequisite checks of the local stack (ops.stack) and the pid-file helpers they rely on.

No service is started: executables are faked with small shell scripts on a private PATH.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memwarden.errors import PrerequisiteMissing
from memwarden.ops import pidfiles, postgres_server, stack
from memwarden.settings import Settings


def _settings(tmp_path: Path, **overrides: object) -> Settings:
    kafka, ctl, pg = pidfiles.free_port(), pidfiles.free_port(), pidfiles.free_port()
    values: dict[str, object] = dict(
        data_dir=tmp_path / "data",
        kafka_port=kafka,
        kafka_controller_port=ctl,
        postgres_port=pg,
        bootstrap_servers=f"127.0.0.1:{kafka}",
        postgres_dsn=f"postgresql://memwarden@127.0.0.1:{pg}/memwarden",
    )
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def _tool(bindir: Path, name: str, script: str = "exit 0") -> Path:
    bindir.mkdir(parents=True, exist_ok=True)
    path = bindir / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return path


def _java(bindir: Path, version: str) -> Path:
    return _tool(bindir, "java", f"echo 'openjdk version \"{version}\" 2025-04-15' >&2")


def _fake_pg_root(root: Path, version: str) -> Path:
    for name in ("pg_ctl", "initdb", "postgres"):
        _tool(root / version / "bin", name)
    return root / version / "bin"


def _assert_one_line(exc: pytest.ExceptionInfo[PrerequisiteMissing], *words: str) -> None:
    text = str(exc.value)
    assert "\n" not in text
    for word in words:
        assert word in text, text


def test_path_without_java_names_java(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    with pytest.raises(PrerequisiteMissing) as exc:
        stack.check_prerequisites(_settings(tmp_path), path=str(empty))
    _assert_one_line(exc, "java 17", "apt-get install -y openjdk-17-jre-headless")


@pytest.mark.parametrize(("version", "shown"), [("11.0.22", "version 11"), ("1.8.0_402", "version 8")])
def test_old_java_is_reported_with_its_version(tmp_path: Path, version: str, shown: str) -> None:
    _java(tmp_path / "bin", version)
    with pytest.raises(PrerequisiteMissing) as exc:
        stack.check_prerequisites(_settings(tmp_path), path=str(tmp_path / "bin"))
    _assert_one_line(exc, "java 17", shown)


def test_missing_maven_is_named(tmp_path: Path) -> None:
    _java(tmp_path / "bin", "17.0.15")
    with pytest.raises(PrerequisiteMissing) as exc:
        stack.check_prerequisites(_settings(tmp_path), path=str(tmp_path / "bin"))
    _assert_one_line(exc, "mvn", "apt-get install -y maven")


def test_missing_postgres_binaries_are_named(tmp_path: Path) -> None:
    _java(tmp_path / "bin", "21.0.2")
    _tool(tmp_path / "bin", "mvn")
    with pytest.raises(PrerequisiteMissing) as exc:
        stack.check_prerequisites(_settings(tmp_path), path=str(tmp_path / "bin"), pg_roots=(tmp_path / "pg",))
    _assert_one_line(exc, "pg_ctl", "postgresql-15")


def test_all_tools_found_picks_newest_postgres(tmp_path: Path) -> None:
    _java(tmp_path / "bin", "17.0.15")
    _tool(tmp_path / "bin", "mvn")
    _fake_pg_root(tmp_path / "pg", "15")
    newest = _fake_pg_root(tmp_path / "pg", "16")
    tools = stack.check_prerequisites(_settings(tmp_path), path=str(tmp_path / "bin"), pg_roots=(tmp_path / "pg",))
    assert tools.java == str(tmp_path / "bin" / "java")
    assert tools.mvn == str(tmp_path / "bin" / "mvn")
    assert tools.pg_bindir == newest


def test_external_services_need_no_local_tools(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path, bootstrap_servers="kafka.internal:9092", postgres_dsn="postgresql://u@db.internal:5432/x"
    )
    assert not stack.kafka_broker.is_local(settings)
    assert not postgres_server.is_local(settings)
    empty = tmp_path / "bin"
    empty.mkdir()
    tools = stack.check_prerequisites(settings, path=str(empty), pg_roots=(tmp_path / "pg",))
    assert tools == stack.Tools(None, None, None)


def test_dsn_on_another_local_port_is_external(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    assert postgres_server.is_local(settings)
    other = settings.model_copy(update={"postgres_dsn": "postgresql://memwarden@127.0.0.1:5432/memwarden"})
    assert not postgres_server.is_local(other)
    assert postgres_server.dsn_target(settings)[2:] == ("memwarden", "memwarden")


@pytest.fixture()
def listener() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_occupied_port_is_reported(tmp_path: Path, listener: int) -> None:
    settings = _settings(tmp_path, kafka_port=listener, bootstrap_servers=f"127.0.0.1:{listener}")
    with pytest.raises(PrerequisiteMissing) as exc:
        stack.check_ports(settings)
    _assert_one_line(exc, f"port {listener}", "kafka_port", "MEMWARDEN_KAFKA_PORT")


def test_occupied_postgres_port_is_reported(tmp_path: Path, listener: int) -> None:
    settings = _settings(
        tmp_path,
        postgres_port=listener,
        postgres_dsn=f"postgresql://memwarden@127.0.0.1:{listener}/memwarden",
    )
    with pytest.raises(PrerequisiteMissing) as exc:
        stack.check_ports(settings)
    _assert_one_line(exc, f"port {listener}", "postgres_port")


def test_port_of_our_running_service_is_not_a_conflict(tmp_path: Path, listener: int) -> None:
    settings = _settings(tmp_path, kafka_port=listener, bootstrap_servers=f"127.0.0.1:{listener}")
    stack.check_ports(settings, skip=["kafka"])


def test_equal_ports_are_rejected(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    settings = settings.model_copy(update={"kafka_controller_port": settings.kafka_port})
    with pytest.raises(PrerequisiteMissing) as exc:
        stack.check_ports(settings)
    _assert_one_line(exc, "ports must differ")


def test_free_ports_pass(tmp_path: Path) -> None:
    stack.check_ports(_settings(tmp_path))


def test_pidfile_write_read_stop(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        path = pidfiles.write_pidfile(settings, "worker-test", proc.pid)
        assert path == Path(settings.data_dir).resolve() / "run" / "worker-test.pid"
        assert pidfiles.read_pidfile(path) == proc.pid
        assert pidfiles.stop_pidfile(settings, "worker-test", timeout=5.0)
        assert proc.wait(timeout=5) != 0
        assert not path.exists()
        assert not pidfiles.stop_pidfile(settings, "worker-test")
    finally:
        proc.kill()
        proc.wait()


def test_stale_and_reused_pidfiles_read_as_dead(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    proc = subprocess.Popen(["true"])
    proc.wait()
    path = pidfiles.write_pidfile(settings, "gone", proc.pid)
    assert pidfiles.read_pidfile(path) is None
    assert pidfiles.remove_stale(path) and not path.exists()
    path.write_text("1\n12345\n")  # pid 1 with a start time that is not pid 1's
    assert pidfiles.read_pidfile(path) is None
    with pytest.raises(ValueError):
        pidfiles.pidfile_path(settings, "../escape")
