"""In-place rebuild: the projections of a namespace replaced, in one step, by a rebuild made aside
from the same ledger (issue 9, "an in-place rebuild builds aside and then switches the read API").

``memwarden replay --in-place`` first replays the namespace's ledger into ``<ns>.rebuild-<hex>``
while the live worker keeps deciding and serving (:func:`memwarden.processors.replay.run_replay`).
Then :func:`switch` runs where the live projections are held (inside the namespace's worker, through
``POST /switch``, or in the CLI's process when no worker runs):

1. the gate, the projectors and new reads pause (each finishes what it is doing; reads wait);
2. the rebuild catches up with the ledger's current end (a resumed replay: only the records that
   arrived since it was built);
3. **the switch**: one Postgres transaction renames the live schema to that of ``<ns>.retired-<hex>``
   and the rebuilt one to the live name; every open connection sees the rebuilt tables from its next
   statement (Postgres re-resolves a statement when the schemas of its search path change), and the
   index, under its own lock, closes its shard, moves the directories the same way and opens the
   rebuilt shard;
4. everything resumes on the rebuilt projections; the retired schema and shard are dropped.

No read ever sees a half-built projection: before the switch reads use the complete live state,
after it the complete rebuilt state, and reads wait during it (about as long as the catch-up).
The gate and the projectors must run in the process that switches (a gate in another process would
keep writing the state being retired): a worker with only one of the roles is refused.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any

from memwarden.bootstrap import Container, drop_projections
from memwarden.errors import ValidationError
from memwarden.processors.replay import replay
from memwarden.processors.replay_cut import resolve_cut
from memwarden.projections.vector_index import IndexUnavailable
from memwarden.settings import Settings
from memwarden.stores import namespaces


def rebuild_target(live: Settings) -> Settings:
    """The settings of a fresh rebuild of ``live`` (``<prefix>.rebuild-<8 hex>``, over its ledger)."""
    return live.projections_of_ledger(f"{live.topic_prefix}.rebuild-{uuid.uuid4().hex[:8]}")


def check_rebuild(live: Settings, rebuilt: Settings) -> None:
    """Raise ``ValidationError`` (field ``rebuilt``) unless ``rebuilt`` is a built namespace holding
    projections of ``live``'s own ledger."""
    if rebuilt.pg_schema == live.pg_schema:
        raise ValidationError("rebuilt", "is the live namespace itself")
    if not namespaces.exists(rebuilt):
        raise ValidationError("rebuilt", f"namespace {rebuilt.topic_prefix!r} does not exist")
    ledger = live.ledger_prefix or live.topic_prefix
    held = namespaces.ledger_of(rebuilt)
    if held != ledger:
        raise ValidationError("rebuilt", f"{rebuilt.topic_prefix!r} holds projections of {held!r}, not {ledger!r}")


async def switch(container: Container, rebuilt: Settings,
                 hold: Sequence[AbstractAsyncContextManager[Any]] = ()) -> dict[str, Any]:
    """Replace ``container``'s projections by ``rebuilt`` (a rebuild of the same ledger) in one
    step, holding every context of ``hold`` (the pauses of the gate, the projectors and the reads)
    from the catch-up to the switch. Returns what was done: the rebuilt namespace, commands and
    events caught up, the retired schema (dropped) and the seconds paused.

    Raises ``ValidationError`` (field ``rebuilt``) for a namespace that is not a rebuild of this
    one, ``StackUnavailable`` when Kafka or Postgres fail (nothing is switched then)."""
    live = container.settings
    check_rebuild(live, rebuilt)
    replaced = container.index_to_replace()  # built for another lexical IDF: a switch of MEMWARDEN_LEXICAL_IDF
    adopt, adoptable = getattr(replaced, "adopt", None), getattr(replaced, "check_adoptable", None)
    if adopt is None or adoptable is None:
        raise ValidationError("rebuilt", "an in-place switch moves embedded (Qdrant Edge) shards; with a Qdrant "
                                         "server, point the namespace at the rebuilt collection instead")
    try:  # before anything moves: a rebuild made under another lexical IDF than this index's is refused
        adoptable(rebuilt.index_name)
    except IndexUnavailable as exc:
        raise ValidationError("rebuilt", str(exc)) from None
    retired = live.projections_of_ledger(f"{live.topic_prefix}.retired-{uuid.uuid4().hex[:8]}")
    paused_at = time.perf_counter()
    async with AsyncExitStack() as stack:
        for context in hold:
            await stack.enter_async_context(context)
        paused_at = time.perf_counter()
        cut, _ = resolve_cut(live, None, None)
        caught = await replay(live, rebuilt, cut, False)  # resumes: only what arrived since the build
        namespaces.swap_schemas(live, rebuilt, retired)
        adopt(rebuilt.index_name, retired.index_name)
    paused_s = time.perf_counter() - paused_at
    drop_projections(retired)
    return {"namespace": live.topic_prefix, "rebuilt": rebuilt.topic_prefix, "caught_up_commands": caught.commands,
            "caught_up_events": caught.events, "retired": retired.topic_prefix, "paused_s": round(paused_s, 3)}


__all__ = ["check_rebuild", "rebuild_target", "switch"]
