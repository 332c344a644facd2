"""Field case Q3 (issue 12) and issue 10 item 4 end to end, against the real broker, database and a
real worker: a user's grant that names no ``subjects`` covers the user's own memories (the agent then
reads them), and a refused governance call or forget raises ``Refused`` with the gate's reason codes
instead of returning a plain receipt; ``wait=False`` returns the receipt without waiting."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from memwarden.errors import Refused
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import DecidedReceipt, MemwardenClient
from memwarden.settings import Settings
from tests.integration.conftest import poll
from tests.integration.test_governed_reads import projected

pytestmark = pytest.mark.integration


def _ids(found: list[object]) -> set[str]:
    return {m.memory_id for m in found}  # type: ignore[attr-defined]


def test_a_grant_without_subjects_covers_the_grantors_own_memories_and_refusals_raise(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient, principal: Callable[..., str]) -> None:
    alice, bob, agent = principal(), principal(), principal("agent")
    mine = client.record(principal=alice, subject=alice, text="Alice's router reboots every night at two")
    theirs = client.record(principal=bob, subject=bob, text="Bob's router reboots every morning")
    assert set(client.decisions([mine.command_id, theirs.command_id]).values()) == {"ACCEPTED"}
    projected(namespace, mine, theirs)

    grant = client.grant_access(agent, by=alice, rights=["READ"], scopes=["account:default"], purposes=["support"])
    assert isinstance(grant, DecidedReceipt) and grant.outcome == "ACCEPTED"  # the obvious call works
    for mode in ("hybrid", "lexical", "dense"):
        found = poll(lambda mode=mode: _ids(client.recall(agent, "router reboots", purpose="support", mode=mode))
                     or None, what="the agent reading alice's memory")
        assert found == {mine.memory_id}  # alice's own memories only, never bob's
    assert client.recall(agent, "router reboots", purpose="marketing") == []

    with pytest.raises(Refused) as refused:  # bob is not the grantor
        client.revoke_access(grant.memory_id, by=bob, grantee=agent, reason="not mine to revoke")
    assert refused.value.outcome == "REJECTED" and refused.value.codes == ("NOT_GRANTOR",)
    assert client.decided([refused.value.command_id])[refused.value.command_id]["outcome"] == "REJECTED"
    with pytest.raises(Refused) as naming_bob:  # alice cannot grant on bob's memories
        client.grant_access(agent, by=alice, rights=["READ"], scopes=["account:default"], subjects=[bob])
    assert naming_bob.value.codes == ("NOT_GRANTOR",)
    assert _ids(client.recall(agent, "router reboots", purpose="support", mode="lexical")) == {mine.memory_id}

    with pytest.raises(Refused) as forget:  # bob posing as alice's subject
        client.forget(mine.memory_id, principal=bob, subject=alice)
    assert forget.value.codes == ("NOT_OWNER",) and forget.value.reasons[0]["message"]

    quick = client.forget(str(uuid.uuid4()), principal=alice, subject=alice, wait=False)
    assert quick.decision is None and quick.outcome is None  # returned without waiting
    assert client.decided([quick.command_id])[quick.command_id]["outcome"] == "REJECTED"  # UNKNOWN_MEMORY

    revoked = client.revoke_access(grant.memory_id, by=alice, grantee=agent)
    assert revoked.outcome == "ACCEPTED"
    assert client.recall(agent, "router reboots", purpose="support") == []


def test_enrolling_a_registered_principal_again_raises_refused_with_principal_exists(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient, principal: Callable[..., str]) -> None:
    """README "Using it", first snippet run twice (newcomer trial, nineteenth session): the second registration
    raised a bare ``MemwardenError("registrations not accepted: {...: 'REJECTED'}")`` with no reason code."""
    from memwarden.keystore import admin_signer
    from memwarden.producers.enroll import enroll

    alice = principal()
    with pytest.raises(Refused) as refused:
        enroll(client, admin_signer(namespace), [(alice, "USER", ())])
    assert refused.value.outcome == "REJECTED" and refused.value.codes == ("PRINCIPAL_EXISTS",)
    assert alice in str(refused.value)
