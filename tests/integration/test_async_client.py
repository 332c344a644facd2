"""The asyncio client (issue 10 part 4) against the real broker, database and worker: writes,
decisions awaited on the loop, recalls, refusals raised with the gate's codes, and many tasks waiting
for decisions at once."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import pytest

from memwarden.errors import Refused
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.async_client import AsyncMemwardenClient
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings
from tests.integration.test_governed_reads import projected

pytestmark = pytest.mark.integration


def test_the_async_client_writes_waits_reads_and_raises_refusals(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient, principal: Callable[..., str]) -> None:
    alice, bob = principal(), principal()

    async def scenario() -> None:
        async with AsyncMemwardenClient(MemwardenClient(namespace)) as aio:
            for who in (alice, bob):
                aio.client.add_signer(client._signers[who])
            receipts = await asyncio.gather(*(aio.record(principal=alice, subject=alice,
                                                         text=f"Alice's async note {i} about kayaks")
                                              for i in range(20)))
            outcomes = await aio.decisions([r.command_id for r in receipts])
            assert set(outcomes.values()) == {"ACCEPTED"} and len(outcomes) == 20
            projected(namespace, *receipts)
            found = await aio.recall(alice, "async note about kayaks", k=20, mode="lexical")
            assert {r.memory_id for r in receipts} <= {m.memory_id for m in found}

            newer = await aio.supersede(receipts[0].memory_id, principal=alice, subject=alice,
                                        text="Alice's async note 0 is now about canoes")
            assert newer.outcome == "ACCEPTED"
            with pytest.raises(Refused) as refused:  # bob is not alice's memory's owner
                await aio.forget(receipts[1].memory_id, principal=bob, subject=alice)
            assert refused.value.codes == ("NOT_OWNER",)
            quick = await aio.forget(str(uuid.uuid4()), principal=alice, subject=alice, wait=False)
            assert quick.decision is None
            waits = await asyncio.gather(*(aio.forget(r.memory_id, principal=alice, subject=alice)
                                           for r in receipts[2:12]))  # ten tasks waiting at once, on the loop
            assert {w.outcome for w in waits} == {"ACCEPTED"}
            history = await aio.history(alice, receipts[0].memory_id)
            assert history is not None and len(history["versions"]) == 2

    asyncio.run(scenario())
