"""``memwarden eval api-load`` (issue 10 part 5): ``clients`` concurrent HTTP clients against a real
``memwarden serve`` for ``duration_s`` seconds, mixing records (some with ``?wait=true``),
supersessions, recalls, forgets and decision lookups, plus a few intended refusals; then every write
the API acknowledged must be decided and every accepted memory not forgotten recallable through the API.

Loopback only and bounded: a fresh evaluation namespace on the local stack
(:func:`memwarden.evals.harness.eval_namespace`, its own worker), ``memwarden serve --no-worker`` for it
as a subprocess on a free 127.0.0.1 port, one principal and bearer token per client registered and
issued through the gate (as ``memwarden principal register`` and ``memwarden token issue`` do: the keys
in this host's key folder, where the server signs with them), the load, at most ``settle_s`` seconds
for the last decisions and the recall checks, then the server is stopped and the namespace and key
files removed (``keep`` leaves them). Clients: :mod:`memwarden.evals.api_load_clients`; figures:
:mod:`memwarden.evals.api_load_score`.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from memwarden.errors import MemwardenError, StackUnavailable
from memwarden.evals.api_load_clients import drive, unrecallable
from memwarden.evals.api_load_score import (
    content_refusals,
    endpoint_figures,
    live_memories,
    lost,
    passed,
    refusal_figures,
    unexpected_errors,
)
from memwarden.evals.harness import eval_namespace
from memwarden.settings import Settings

MAX_CLIENTS = 500
MIN_DURATION_S = 5.0
MAX_DURATION_S = 1800.0


def run_api_load(base: Settings, clients: int = 50, duration_s: float = 60.0, settle_s: float = 120.0,
                 think_s: float = 0.0, keep: bool = False, progress: bool = True) -> dict[str, Any]:
    """Run the load (see the module doc) and return its figures: ``endpoints`` (per endpoint count,
    requests/s, p50/p95/p99/max latency in ms, unexpected answers), ``intended_refusals``, ``requests``,
    ``per_s``, ``acknowledged``, ``lost``, ``live_memories``, ``unrecallable``, ``unexpected_errors``
    (with a few ``unexpected_samples``), ``content_refusals`` (writes the gate held for review, answered 422
    ``INSTRUCTIONS_IN_CONTENT``), the gate's ``outcomes``, the ``machine`` (cores, load average
    before and after) and ``passed``. ``clients``: 1-500; ``duration_s``: seconds of load (5-1800);
    ``settle_s``: at most this many seconds for the last decisions and the recall checks; ``think_s``:
    mean pause between a client's requests. Raises ``ValueError`` for a bad parameter,
    ``StackUnavailable`` when the stack or the server does not answer."""
    if not 1 <= clients <= MAX_CLIENTS:
        raise ValueError(f"clients: between 1 and {MAX_CLIENTS}")
    if not MIN_DURATION_S <= duration_s <= MAX_DURATION_S:
        raise ValueError(f"duration: between {MIN_DURATION_S:.0f} and {MAX_DURATION_S:.0f} seconds")
    if settle_s <= 0 or think_s < 0:
        raise ValueError("settle must be positive and think not negative")
    load_before = os.getloadavg()
    started = time.monotonic()
    with eval_namespace(base, "apiload", keep=keep, progress=progress) as run:
        s, console = run.settings, run.console
        principals = [f"user:load{i:03d}-{uuid.uuid4().hex[:6]}" for i in range(clients)]
        try:
            tokens = _principals_and_tokens(s, principals, console)
            with ApiServer(s) as server:
                console.print(f"{clients} clients against {server.url} for {duration_s:.0f} s")
                calls, acks, measured = asyncio.run(drive(server.url, tokens, duration_s, think_s))
                load_after = os.getloadavg()
                console.print(f"load stopped: {len(calls)} requests, {len(acks)} writes acknowledged; settling")
                deadline = time.monotonic() + settle_s
                decided = _decided(s, [a.command_id for a in acks], deadline)
                live = live_memories(acks, decided)
                console.print(f"{len(decided)} decided; recalling {len(live)} live memories by their markers")
                missing = asyncio.run(unrecallable(server.url, dict(enumerate(tokens)), live, deadline))
        finally:
            if not keep:
                _remove_keys(s, principals)
    unexpected = unexpected_errors(calls)
    figures: dict[str, Any] = {
        "clients": clients, "duration_s": duration_s, "measured_s": round(measured, 1), "think_s": think_s,
        "requests": len(calls), "per_s": round(len(calls) / measured, 1),
        "endpoints": endpoint_figures(calls, measured), "intended_refusals": refusal_figures(calls),
        "acknowledged": len(acks), "decided": sum(1 for a in acks if a.command_id in decided),
        "lost": len(lost(acks, decided)), "live_memories": len(live), "unrecallable": len(missing),
        "unexpected_errors": len(unexpected), "content_refusals": content_refusals(calls),
        "unexpected_samples": [f"{c.endpoint} {c.status or c.error} {c.code or ''}".strip() for c in unexpected[:10]],
        "outcomes": dict(Counter(decided.get(a.command_id, "UNDECIDED") for a in acks)),
        "machine": {"cores": os.cpu_count(), "load_before": [round(x, 2) for x in load_before],
                    "load_after": [round(x, 2) for x in load_after]},
        "namespace": s.topic_prefix, "wall_s": round(time.monotonic() - started, 1)}
    figures["passed"] = passed(figures)
    return figures


def _principals_and_tokens(settings: Settings, principals: list[str], console: Console) -> list[str]:
    """Register ``principals`` through the gate with their keys in this host's key folder and issue
    one bearer token each (signed by the root admin); returns the tokens in order. Raises
    ``MemwardenError`` when the gate does not accept one."""
    from memwarden.commands.tokens import make_token, token_hash
    from memwarden.keystore import admin_signer, key_path, load_or_create_signer
    from memwarden.producers.client import MemwardenClient

    admin = admin_signer(settings)
    with MemwardenClient(settings, signers=[admin]) as client:
        receipts = []
        for principal in principals:
            signer = load_or_create_signer(key_path(settings.data_dir, principal), principal)
            receipts.append(client.register_principal(principal, by=admin.principal_id, kind="USER",
                                                      public_key=signer.public_key, key_id=signer.key_id, wait=False))
        _all_accepted(client, [r.command_id for r in receipts], "registration")
        tokens = [make_token(secrets.token_bytes(32)) for _ in principals]
        issued = [client.issue_token(p, by=admin.principal_id, token_sha256=token_hash(t), note="api-load")
                  for p, t in zip(principals, tokens, strict=True)]
        _all_accepted(client, [r.command_id for r in issued], "token")
    console.print(f"{len(principals)} principals registered, one token each")
    return tokens


def _all_accepted(client: Any, command_ids: list[str], what: str) -> None:
    outcomes = client.decisions(command_ids, timeout_s=120)
    refused = {cid: o for cid, o in outcomes.items() if o != "ACCEPTED"}
    if refused:
        raise MemwardenError(f"{what} not accepted by the gate: {refused}")


def _decided(settings: Settings, command_ids: list[str], deadline: float, chunk: int = 2_000) -> dict[str, str]:
    """Command id -> outcome for each of ``command_ids`` the gate decided, asked of the worker's public
    decisions read until all are or ``deadline`` (``time.monotonic()``) passes."""
    decided: dict[str, str] = {}
    with httpx.Client(base_url=settings.worker_url, timeout=30.0) as http:
        while True:
            missing = [c for c in command_ids if c not in decided]
            for i in range(0, len(missing), chunk):
                try:
                    answer = http.post("/decisions", json={"command_ids": missing[i:i + chunk]})
                except httpx.HTTPError:
                    continue
                if answer.status_code == 200:
                    decided |= {cid: d["outcome"] for cid, d in answer.json()["decisions"].items()}
            if len(decided) >= len(set(command_ids)) or time.monotonic() > deadline:
                return decided
            time.sleep(0.5)


def _remove_keys(settings: Settings, principals: list[str]) -> None:
    from memwarden.keystore import key_path

    for principal in principals:
        key_path(settings.data_dir, principal).unlink(missing_ok=True)


class ApiServer:
    """``memwarden serve --no-worker`` for ``settings``' namespace on a free loopback port, as a
    subprocess (its log under ``<data>/logs/``); stopped with SIGTERM on exit. Raises
    ``StackUnavailable`` when it does not answer ``GET /v1/health`` within ``timeout_s`` seconds."""

    def __init__(self, settings: Settings, timeout_s: float = 90.0) -> None:
        from memwarden.ops.pidfiles import free_port

        self.settings = settings
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = settings.data_dir / "logs" / f"api-{settings.topic_prefix}.log"
        self.timeout_s = timeout_s
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ApiServer:
        script = Path(sys.executable).with_name("memwarden")
        command = [str(script)] if script.exists() else [sys.executable, "-m", "memwarden.cli"]
        env = {**os.environ, "MEMWARDEN_TOPIC_PREFIX": self.settings.topic_prefix,
               "MEMWARDEN_WORKER_PORT": str(self.settings.worker_port),
               "MEMWARDEN_DATA_DIR": str(self.settings.data_dir),
               "MEMWARDEN_BOOTSTRAP_SERVERS": self.settings.bootstrap_servers,
               "MEMWARDEN_POSTGRES_DSN": self.settings.postgres_dsn}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._process = subprocess.Popen([*command, "serve", "--host", "127.0.0.1", "--port", str(self.port),
                                              "--no-worker"], env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                break
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=5.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.__exit__()
        tail = self.log_path.read_text(errors="replace")[-1500:]
        raise StackUnavailable(f"memwarden serve did not answer at {self.url} within {self.timeout_s:.0f} s:\n{tail}")

    def __exit__(self, *exc: object) -> None:
        if self._process is None or self._process.poll() is not None:
            return
        self._process.send_signal(signal.SIGTERM)
        try:
            self._process.wait(30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(10)


COLUMNS = ("count", "per_s", "p50_ms", "p95_ms", "p99_ms", "max_ms", "unexpected")


def render(result: dict[str, Any], console: Console) -> None:
    """The per-endpoint table, the refusals, the goals and the verdict."""
    table = Table(title=f"api-load: {result['clients']} clients, {result['measured_s']:.0f} s,"
                        f" {result['requests']} requests ({result['per_s']}/s)")
    table.add_column("endpoint")
    for c in COLUMNS:
        table.add_column(c, justify="right")
    for name, f in result["endpoints"].items():
        table.add_row(name, *("-" if f[c] is None else str(f[c]) for c in COLUMNS))
    console.print(table)
    for kind, r in result["intended_refusals"].items():
        console.print(f"intended refusal {kind}: {r['as_expected']}/{r['count']} answered {r['expected']}"
                      f" ({r['answers']})")
    for key in ("acknowledged", "decided", "lost", "live_memories", "unrecallable", "unexpected_errors",
                "content_refusals", "outcomes", "machine"):
        console.print(f"{key}: {result[key]}")
    if result["unexpected_samples"]:
        console.print(f"unexpected (first ones): {result['unexpected_samples']}")
    console.print("[green]passed[/]" if result["passed"] else "[red]FAILED[/]: a zero goal is not met")


__all__ = ["ApiServer", "render", "run_api_load"]
