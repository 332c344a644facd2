"""Helpers of the REST API tests (issue 10): principals registered with their key files on this host
(the server signs with them), tokens issued through the real gate, the app in-process over a real
worker (FastAPI's TestClient; the worker, Kafka and Postgres are real), and ledger end offsets to
prove that bad input publishes nothing."""

from __future__ import annotations

import secrets
import time
import uuid
from datetime import datetime
from typing import Any

from confluent_kafka import Consumer
from fastapi.testclient import TestClient

from memwarden.commands.tokens import make_token, token_hash
from memwarden.keystore import admin_signer, key_path, load_or_create_signer
from memwarden.producers.client import MemwardenClient
from memwarden.schemas.codec import default_codec
from memwarden.settings import Settings
from memwarden.stores.ledger import high_watermark
from tests.integration.conftest import kind_of, read_topic


def register(client: MemwardenClient, settings: Settings, principal: str, roles: tuple[str, ...] = (),
             key_file: bool = True) -> str:
    """Register ``principal`` through the gate (root admin); its key is kept in this host's key folder
    (what ``memwarden principal register`` does) unless ``key_file`` is false."""
    from memwarden.commands.signing import Signer

    signer = load_or_create_signer(key_path(settings.data_dir, principal), principal) if key_file \
        else Signer.generate(principal)
    client.add_signer(admin_signer(settings))
    client.add_signer(signer)
    r = client.register_principal(principal, by=settings.admin_principal, kind=kind_of(principal), roles=roles,
                                  public_key=signer.public_key, key_id=signer.key_id, wait=False)
    assert client.decisions([r.command_id])[r.command_id] == "ACCEPTED"
    return principal


def issue(client: MemwardenClient, settings: Settings, principal: str,
          expires_at: datetime | None = None) -> tuple[str, str]:
    """A token for ``principal`` through the gate: ``(token_id, token)``."""
    token = make_token(secrets.token_bytes(32))
    client.add_signer(admin_signer(settings))
    r = client.issue_token(principal, by=settings.admin_principal, token_sha256=token_hash(token),
                           expires_at=expires_at)
    assert client.decisions([r.command_id])[r.command_id] == "ACCEPTED"
    return r.memory_id, token


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def fresh(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:6]}"


def ends(settings: Settings, logical: tuple[str, ...] = ("commands", "keys")) -> dict[str, int]:
    """The sum of the end offsets of each topic (what was ever published to it)."""
    consumer = Consumer({"bootstrap.servers": settings.bootstrap_servers, "group.id": f"ends-{uuid.uuid4()}"})
    out = {}
    for name in logical:
        topic = settings.topic(name)
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        out[name] = sum(high_watermark(consumer, topic, p) for p in parts)
    consumer.close()
    return out


def refusals(settings: Settings) -> list[dict[str, Any]]:
    """Every ``AuthRefused`` record of the audit topic, decoded."""
    codec = default_codec()
    out = []
    for m in read_topic(settings, "audit"):
        name, rec = codec.decode(m.value())
        if name == "AuthRefused":
            out.append(rec)
    return out


def poll_get(api: TestClient, url: str, headers: dict[str, str], until: Any, timeout_s: float = 60.0) -> Any:
    """GET ``url`` until ``until(response)`` holds; returns that response."""
    deadline = time.monotonic() + timeout_s
    while True:
        response = api.get(url, headers=headers)
        if until(response):
            return response
        if time.monotonic() > deadline:
            raise AssertionError(f"{url}: condition not reached; last {response.status_code} {response.text[:300]}")
        time.sleep(0.2)


def poll_post(api: TestClient, url: str, headers: dict[str, str], body: dict[str, Any], until: Any,
              timeout_s: float = 60.0) -> Any:
    """POST ``body`` to ``url`` until ``until(response)`` holds; returns that response."""
    deadline = time.monotonic() + timeout_s
    while True:
        response = api.post(url, headers=headers, json=body)
        if until(response):
            return response
        if time.monotonic() > deadline:
            raise AssertionError(f"{url}: condition not reached; last {response.status_code} {response.text[:300]}")
        time.sleep(0.3)
