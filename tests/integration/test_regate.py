"""Re-gating history against the real stack (issue 9 part 4): a key found compromised and revoked
after the fact makes today's gate refuse what it signed; ``regate`` lists exactly those memories,
retracts them with signed forgets, and leaves everything else; a policy that closes a scope flags
what was written there."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from memwarden.commands.policy import default_policy, parse_policy
from memwarden.commands.signing import Signer
from memwarden.ops.worker_process import WorkerProcess
from memwarden.processors.regate import find
from memwarden.producers.client import MemwardenClient
from memwarden.retractions import retract
from memwarden.settings import Settings
from tests.integration.conftest import enroll_ids, rows

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_a_revoked_key_is_refused_today_and_its_memories_retracted(namespace: Settings,
                                                                    client: MemwardenClient) -> None:
    with WorkerProcess(namespace):
        alice = f"user:{uuid.uuid4().hex[:8]}"
        enroll_ids(client, namespace, alice)
        old = client.record(principal=alice, subject=alice, text="signed with the key later found stolen")
        client.decisions([old.command_id])
        fresh = Signer.generate(alice, f"{alice}#2")
        stolen = client._signers[alice].key_id
        client.decisions([client.rotate_key(alice, by=alice, public_key=fresh.public_key,
                                            key_id=fresh.key_id, wait=False).command_id])
        client.add_signer(fresh)
        kept = client.record(principal=alice, subject=alice, text="signed with the new key")
        client.decisions([client.revoke_key(alice, stolen, by=alice, wait=False).command_id, kept.command_id])
        findings = asyncio.run(find(namespace))
        assert [(f.memory_id, f.now) for f in findings] == [(old.memory_id, "REJECTED")]
        assert findings[0].reasons == ("KEY_REVOKED",)
        closed = json.loads(default_policy().model_dump_json())
        closed["version"] = 2
        closed["scopes"] = [s for s in closed["scopes"] if s.get("name") != "account:default"
                            and s.get("pattern") != "account:*"]
        by_policy = asyncio.run(find(namespace, parse_policy(json.dumps(closed))))
        assert {f.memory_id for f in by_policy} == {old.memory_id, kept.memory_id}
        assert all("UNKNOWN_SCOPE" in f.reasons or "KEY_REVOKED" in f.reasons for f in by_policy)
        retract(namespace, findings)
        assert rows(namespace, "SELECT forgotten FROM gate_memories WHERE memory_id = %s", (old.memory_id,)) == [
            (True,)]
        assert rows(namespace, "SELECT forgotten FROM gate_memories WHERE memory_id = %s", (kept.memory_id,)) == [
            (False,)]
        assert asyncio.run(find(namespace)) == []
