"""The README's REST session, run verbatim (issue 10): ``memwarden serve`` as its own process over a
real worker of a fresh namespace, the bash block after ``<!-- rest-session -->`` in README.md run with
curl and jq (token issue, record, recall, forget, a refused token); and ``serve --no-worker`` without a
worker exits with one line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memwarden.ops.pidfiles import free_port
from memwarden.ops.worker_process import WorkerProcess, settings_env
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings
from tests.integration.conftest import drop, make_namespace
from tests.integration.rest_fixtures import register

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def session_block() -> str:
    """The bash block that follows the ``<!-- rest-session -->`` marker in README.md."""
    text = (ROOT / "README.md").read_text()
    found = re.search(r"<!-- rest-session -->\s*```bash\n(.*?)```", text, re.S)
    assert found, "README.md has no <!-- rest-session --> bash block"
    return found.group(1)


def _env(settings: Settings, **extra: str) -> dict[str, str]:
    env = settings_env(settings)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return {**env, **extra}


@pytest.fixture(scope="module")
def server(namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> Iterator[str]:
    register(client, namespace, "user:alice")  # the README's "memwarden principal register user:alice"
    port = free_port()
    log = open(namespace.data_dir / "logs" / f"serve-{namespace.topic_prefix}.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen([str(BIN / "memwarden"), "serve", "--port", str(port)], env=_env(namespace),
                            stdout=log, stderr=log, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, "memwarden serve exited"
        time.sleep(0.3)
    yield url
    proc.terminate()
    proc.wait(30)
    log.close()


def test_the_readme_session_runs_verbatim(server: str, namespace: Settings, client: MemwardenClient) -> None:
    """On a namespace where alice already holds a memory about what she drinks (newcomer trial, twenty-fifth session:
    the loop stopped at the first recall that found anything and printed that memory too)."""
    before = client.record(principal="user:alice", subject="user:alice", text="Alice drinks oolong at work")
    assert client.decisions([before.command_id])[before.command_id] == "ACCEPTED"
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", session_block()],
                          env=_env(namespace, MEMWARDEN_API=server), capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Alice prefers green tea", "ACCEPTED", "401"], done.stdout + done.stderr
    assert "mwt_" not in done.stderr  # the token is printed on stdout only (captured by the session)


def test_serve_without_a_worker_and_no_worker_option_exits_with_one_line(stack: Settings) -> None:
    lonely = make_namespace(stack)
    try:
        done = subprocess.run([str(BIN / "memwarden"), "serve", "--no-worker", "--port", str(free_port())],
                              env=_env(lonely, COLUMNS="400"), capture_output=True, text=True, timeout=120)
        assert done.returncode == 1
        lines = [line for line in done.stderr.splitlines() if line.strip()]  # (COLUMNS: rich wraps at 80)
        assert len(lines) == 1 and "no worker of namespace" in lines[0] and lonely.topic_prefix in lines[0]
    finally:
        drop(lonely)


def _healthy(url: str, proc: subprocess.Popen[str], timeout_s: float) -> httpx.Response | None:
    deadline, health = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            health = httpx.get(url, timeout=1)
            if health.status_code == 200:
                return health
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    return health


def _gone(url: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
        except httpx.HTTPError:
            return True
        time.sleep(0.5)
    return False


def test_serve_starts_the_namespaces_worker_when_none_answers_and_stops_it(stack: Settings) -> None:
    lonely = make_namespace(stack)
    port = free_port()
    proc = subprocess.Popen([str(BIN / "memwarden"), "serve", "--port", str(port)], env=_env(lonely, COLUMNS="400"),
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        first = proc.stderr.readline() if proc.stderr else ""
        assert first.startswith(f"no worker of namespace {lonely.topic_prefix} answers") and "starting one" in first
        health = _healthy(f"http://127.0.0.1:{port}/v1/health", proc, 180)
        assert health is not None and health.status_code == 200 and health.json()["namespace"] == lonely.topic_prefix
        proc.terminate()
        proc.wait(60)
        assert _gone(f"{lonely.worker_url}/health", 30), "the worker serve started is still answering"
    finally:
        if proc.poll() is None:
            proc.kill()
        if proc.stderr:
            proc.stderr.close()
        drop(lonely)
