"""``memwarden eval chaos`` (issue 13 part 4): a steady mixed load (records, supersessions, forgets,
recalls) on a private stack while, in turn, the broker, PostgreSQL, the gate worker and the projector
worker are killed with SIGKILL and restarted; then every acknowledged command must be decided exactly
once and every accepted memory recallable.

The run is loopback only and bounded: a private stack (:mod:`memwarden.evals.chaos_stack`) on free
ports under a throw-away folder, ``duration_s`` seconds of load cut into one slice per fault (a steady
quarter, the kill, ``outage_s`` seconds down, the restart, the rest of the slice steady), at most
``settle_s`` seconds for the last commands to be decided, then everything is stopped and removed
(``keep`` leaves the folder). Figures: :mod:`memwarden.evals.chaos_score`.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from memwarden.errors import StackUnavailable
from memwarden.evals.chaos_load import Ack, ReadLoad, ReadyProbe, WriteLoad
from memwarden.evals.chaos_score import Decided, Window, live_memories, passed, score_fault
from memwarden.evals.chaos_stack import COMPONENTS, PrivateStack, private_settings, seed_caches
from memwarden.ops.postgres_server import pg_paths
from memwarden.settings import Settings

MIN_DURATION_S = 60.0
MAX_DURATION_S = 1800.0


def run_chaos(base: Settings, duration_s: float = 180.0, outage_s: float = 6.0, settle_s: float = 180.0,
              faults: tuple[str, ...] = COMPONENTS, keep: bool = False, progress: bool = True) -> dict[str, Any]:
    """Run the chaos evaluation and return its figures: ``faults`` (name -> figures), ``totals``,
    ``passed`` and the run's parameters. ``duration_s``: seconds of load over all faults (60-1800);
    ``outage_s``: seconds each component stays down. Raises ``ValueError`` for a bad parameter,
    ``PrerequisiteMissing`` / ``StackUnavailable`` when the private stack cannot start."""
    if not MIN_DURATION_S <= duration_s <= MAX_DURATION_S:
        raise ValueError(f"duration: between {MIN_DURATION_S:.0f} and {MAX_DURATION_S:.0f} seconds")
    unknown = [f for f in faults if f not in COMPONENTS]
    if unknown or not faults:
        raise ValueError(f"faults: choose from {', '.join(COMPONENTS)}")
    slice_s = duration_s / len(faults)
    if not 1.0 <= outage_s <= slice_s / 2:
        raise ValueError(f"outage: between 1 and {slice_s / 2:.0f} seconds (half a fault's slice)")
    console = Console(stderr=True, quiet=not progress)
    base.data_dir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="chaos-", dir=base.data_dir))
    root.chmod(0o755)  # the database server runs as `postgres` and must reach its cluster under it
    seed_caches(base.data_dir, root)
    settings = private_settings(base, root)
    private = PrivateStack(settings)
    started = time.monotonic()
    try:
        console.print(f"private stack under {root}: kafka :{settings.kafka_port}, postgres :{settings.postgres_port}")
        private.up()
        result = _run(private, faults, slice_s, outage_s, settle_s, console)
    finally:
        private.down()
        if not keep:
            shutil.rmtree(pg_paths(settings).root, ignore_errors=True)  # elsewhere when root is private
            shutil.rmtree(root, ignore_errors=True)
    result.update({"duration_s": duration_s, "outage_s": outage_s, "wall_s": round(time.monotonic() - started, 1)})
    return result


def _run(private: PrivateStack, faults: tuple[str, ...], slice_s: float, outage_s: float, settle_s: float,
         console: Console) -> dict[str, Any]:
    from memwarden.keystore import admin_signer
    from memwarden.producers.client import MemwardenClient
    from memwarden.producers.enroll import enroll

    s = private.settings
    who = f"user:chaos-{uuid.uuid4().hex[:6]}"
    with MemwardenClient(s) as writer, MemwardenClient(s) as reader, MemwardenClient(s) as checker:
        signer = enroll(writer, admin_signer(s), [(who, "USER", ())])[who]
        reader.add_signer(signer)
        checker.add_signer(signer)
        writes, reads = WriteLoad(writer, who), ReadLoad(reader, who)
        probes = {"gate": ReadyProbe("gate", private.gate_url), "projector": ReadyProbe("projector",
                                                                                      private.projector_url)}
        threads: list[WriteLoad | ReadLoad | ReadyProbe] = [writes, reads, *probes.values()]
        for t in threads:
            t.start()
        windows: list[Window] = []
        try:
            for component in faults:
                windows.append(_fault(private, component, slice_s, outage_s, console))
        finally:
            for t in threads:
                t.stopping.set()
            for t in threads:
                t.join(90)
        console.print(f"load stopped: {len(writes.acks)} writes acknowledged; waiting for every decision")
        _wait_decided(checker, writes.acks, settle_s)
        on_ledger, decided = _ledger(s)
        live = live_memories(writes.acks, decided)
        unrecallable = _unrecallable(checker, who, live, min(settle_s, 60.0))
    figures = {w.component: score_fault(w, writes.acks, on_ledger, decided, unrecallable, reads.outcomes,
                                        {k: p.outcomes for k, p in probes.items()}, writes.errors) for w in windows}
    totals = {k: sum(f[k] for f in figures.values()) for k in
              ("acknowledged", "lost", "duplicated", "undecided_after_recovery", "unrecallable")}
    totals |= {"live_memories": len(live), "reads": len(reads.outcomes),
               "read_errors": sum(1 for r in reads.outcomes if not r.ok), "write_errors": len(writes.errors)}
    return {"faults": figures, "totals": totals, "passed": passed(figures)}


def _fault(private: PrivateStack, component: str, slice_s: float, outage_s: float, console: Console) -> Window:
    """One slice: steady load, kill, ``outage_s`` down, restart, steady until the slice ends."""
    start = time.time()
    time.sleep(slice_s / 4)
    console.print(f"[bold]{component}[/]: SIGKILL")
    private.kill(component)  # returns once the process is gone
    killed = time.time()
    time.sleep(outage_s)
    restarted = time.time()
    down_until, back = _restart(private, component)
    console.print(f"{component}: restarted, answering after {back - restarted:.1f} s")
    end = max(time.time() + 1.0, start + slice_s)
    time.sleep(max(0.0, end - time.time()))
    return Window(component, start, killed, restarted, back, end, down_until)


def _restart(private: PrivateStack, component: str, timeout_s: float = 180.0) -> tuple[float, float]:
    """Restart ``component`` (in a thread, as the operator's command runs) and return two wall times:
    when the last probe that found it down started (it was surely down until then) and when a probe
    first found it answering again (:meth:`PrivateStack.answers`; a probe takes up to a second, so
    the component came back somewhere between the two). Raises the restart's error, or
    ``StackUnavailable`` if it does not answer within ``timeout_s``."""
    failure: list[BaseException] = []

    def restart() -> None:
        try:
            private.restart(component)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            failure.append(exc)

    thread = threading.Thread(target=restart, name=f"restart-{component}", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    back: float | None = None
    down_until = time.time()
    while back is None and time.monotonic() < deadline and not failure:
        probed = time.time()
        if private.answers(component):
            back = time.time()
        else:
            down_until = probed
            time.sleep(0.1)
    thread.join(timeout_s)
    if failure:
        raise failure[0]
    if back is None:
        raise StackUnavailable(f"{component} did not answer within {timeout_s:.0f} s of its restart")
    return down_until, back


def _wait_decided(client: Any, acks: list[Ack], settle_s: float) -> set[str]:
    """Wait up to ``settle_s`` seconds until the gate decided every acknowledged command (through the
    public decisions read); returns the ids it decided (the ledger is the judge afterwards)."""
    ids = [a.command_id for a in acks]
    try:
        return set(client.decided(ids, timeout_s=settle_s))
    except StackUnavailable:
        return set()


def _ledger(settings: Settings) -> tuple[set[tuple[int, int]], dict[str, list[Decided]]]:
    """The positions of every record on the commands topic, and every decision per command id (read
    from offset 0 of the decisions topic, outside any consumer group)."""
    from memwarden.schemas.codec import default_codec
    from memwarden.stores.ledger import end_offsets, read

    on_ledger = {(r.position.partition, r.position.offset)
                 for r in read(settings, "commands", end_offsets(settings, "commands")) if r.value is not None}
    codec = default_codec()
    decided: dict[str, list[Decided]] = {}
    for r in read(settings, "decisions", end_offsets(settings, "decisions")):
        if r.value is None:
            continue
        name, rec = codec.decode(r.value)
        if name.endswith("GateDecided"):
            decided.setdefault(rec["command_id"], []).append(
                Decided(rec["decision_id"], str(rec["outcome"]), r.timestamp_ms / 1000.0))
    return on_ledger, decided


def _unrecallable(client: Any, who: str, live: dict[str, Ack], settle_s: float = 60.0) -> set[str]:
    """Command ids of live memories whose current text a lexical recall of its marker does not return
    within ``settle_s`` seconds: a memory decided a moment before the check may not be projected yet
    (the projector fault comes last and its worker is still catching up), so the memories missing at
    first are asked again every half second until they all answer or the time is up."""
    def missing_of(items: dict[str, Ack]) -> dict[str, Ack]:
        out = {}
        for memory_id, ack in items.items():
            found = client.recall(who, ack.marker, k=3, mode="lexical")
            if memory_id not in {m.memory_id for m in found}:
                out[memory_id] = ack
        return out

    missing = missing_of(live)
    deadline = time.monotonic() + settle_s
    while missing and time.monotonic() < deadline:
        time.sleep(0.5)
        missing = missing_of(missing)
    return {ack.command_id for ack in missing.values()}


COLUMNS = ("acknowledged", "lost", "duplicated", "undecided_after_recovery", "unrecallable", "down_s", "recovery_s",
           "health_false_ok_s", "read_error_rate")


def render(result: dict[str, Any], console: Console) -> None:
    """The per-fault table, the totals and the verdict."""
    table = Table(title=f"chaos: {result['duration_s']:.0f} s of load, each component down {result['outage_s']:.0f} s")
    table.add_column("fault")
    for c in COLUMNS:
        table.add_column(c, justify="right")
    for name, f in result["faults"].items():
        table.add_row(name, *("-" if f[c] is None else str(f[c]) for c in COLUMNS))
    console.print(table)
    console.print(f"totals: {result['totals']}")
    console.print("[green]passed[/]" if result["passed"] else "[red]FAILED[/]: a zero goal is not met")
