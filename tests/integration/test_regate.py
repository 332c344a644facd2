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


def test_a_write_under_a_grant_decided_on_another_partition_is_not_flagged(namespace: Settings,
                                                                           client: MemwardenClient) -> None:
    """A grant is keyed by its grantee, the writes it allows by their subject: two partitions. Re-gating folded
    history partition after partition, so a write decided after its grant was judged before it
    (``SUBJECT_NOT_GRANTED``) and, without ``--dry-run``, forgotten (newcomer trial, twentieth session). It
    folds history in the order the gate decided it."""
    from aiokafka.partitioner import DefaultPartitioner

    parts = list(range(namespace.partitions))

    def part(key: str) -> int:
        return int(DefaultPartitioner()(key.encode(), parts, parts))

    # the grant on a later partition than the write: folded partition by partition, the write came first
    alice = next(u for u in (f"user:{uuid.uuid4().hex[:8]}" for _ in range(500)) if part(u) == 0)
    helper = next(a for a in (f"agent:{uuid.uuid4().hex[:8]}" for _ in range(500)) if part(a) > 0)
    with WorkerProcess(namespace):
        enroll_ids(client, namespace, alice, helper)
        client.grant_access(helper, by=alice, rights=["READ", "WRITE"], scopes=["account:default"])
        wrote = client.record(principal=helper, subject=alice, text="alice asked to move the dentist to Friday")
        assert client.decisions([wrote.command_id])[wrote.command_id].startswith("ACCEPTED")
        assert asyncio.run(find(namespace)) == []
