"""``memwarden replay``, ``memwarden state digest`` and ``memwarden recall``: the ledger as the source
of truth (replay, point-in-time, digests) and reads of any namespace, a replayed one included."""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn
from rich.table import Table

from memwarden.settings import Settings

state_app = typer.Typer(no_args_is_help=True, help="The state of a namespace's projections.")
console = Console(stderr=True)


def fail(exc: Exception) -> NoReturn:
    """Print the error in one line and exit 1."""
    console.print(f"[red]error:[/red] {exc}")
    raise typer.Exit(1)


def cut_text(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters and an ellipsis saying how much was left out (newcomer trial,
    twenty-fifth session: a table cell cut mid-string read as the whole value, and a recall printed a 20,000-character
    text whole); ``--json`` shows it all."""
    return text if len(text) <= limit else f"{text[:limit]}… (+{len(text) - limit} chars; --json shows all)"


def namespace_settings(namespace: str | None) -> Settings:
    """The settings of ``namespace`` (default: the configured one), with the ledger it reads."""
    base = Settings()
    if namespace is None or namespace == base.topic_prefix:
        return base
    from memwarden.stores.namespaces import exists, ledger_of

    probe = base.model_copy(update={"topic_prefix": namespace, "ledger_prefix": None})
    if not exists(probe):
        raise typer.BadParameter(f"namespace {namespace!r} does not exist", param_hint="--namespace")
    ledger = ledger_of(probe)
    return probe.model_copy(update={"ledger_prefix": ledger if ledger and ledger != namespace else None})


class _Bar:
    """A rich progress bar per replay stage: records, records/s, ETA."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._tasks: dict[str, tuple[TaskID, float]] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage not in self._tasks:
            self._tasks[stage] = (self._progress.add_task(stage, total=max(total, 1), rate="-"), time.monotonic())
        task, started = self._tasks[stage]
        elapsed = time.monotonic() - started
        rate = f"{done / elapsed:,.0f} rec/s" if elapsed > 0 else "-"
        self._progress.update(task, completed=min(done, max(total, 1)), rate=rate)


def replay(
    into: Annotated[str | None, typer.Option(help="target namespace (default <namespace>.replay-<8 hex>)")] = None,
    namespace: Annotated[str | None, typer.Option(help="source namespace (default MEMWARDEN_TOPIC_PREFIX)")] = None,
    until: Annotated[str | None, typer.Option(help="last position of every partition: commands:0:1234,"
                                              "commands:1:980 (commands:P:-1: nothing from P)")] = None,
    until_time: Annotated[datetime | None, typer.Option("--until-time", help="ISO time with offset: the ledger "
                                                        "as it stood then")] = None,
    verify: Annotated[bool, typer.Option(help="compare the digests of source and target (whole-ledger replays "
                                         "--into another namespace); exit 1 when they differ")] = False,
    in_place: Annotated[bool, typer.Option("--in-place", help="rebuild the namespace's own projections: build "
                                           "aside, then switch to the rebuild in one step")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Rebuild every projection from offset 0 of the ledger into another namespace, without touching
    the live one; with --until/--until-time, the state as the ledger stood then (point-in-time);
    with --in-place, the namespace's own projections, switched in one step once rebuilt.

    With --verify (a whole-ledger replay into another namespace only: a usage error with --until,
    --until-time or --in-place) it exits 1 when the digests differ, or when the live namespace's
    worker holds its embedded index (stop it, then compare with ``memwarden state digest``)."""
    from memwarden.errors import MemwardenError
    from memwarden.processors.rebuild import rebuild_target
    from memwarden.processors.replay import run_replay, target_settings
    from memwarden.processors.replay_cut import resolve_cut

    try:
        if in_place and (into or until or until_time):
            raise typer.BadParameter("an in-place rebuild is of the whole ledger, into the namespace itself",
                                     param_hint="--in-place")
        _check_verify(verify, in_place, until, until_time)
        source = namespace_settings(namespace)
        target = rebuild_target(source) if in_place else target_settings(
            source, into or f"{source.topic_prefix}.replay-{uuid.uuid4().hex[:8]}")
        cut, point_in_time = resolve_cut(source, until, until_time)
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[rate]}"), TimeRemainingColumn())
        with Progress(*columns, console=console, disable=as_json) as progress:
            report = run_replay(source, target, cut, point_in_time, _Bar(progress))
        out = report.to_json()
        if in_place:
            out["switch"] = _switch(source, target)
        elif verify:
            out["digests_equal"], out["digests"] = _compare(source, target)
    except (MemwardenError, ValueError) as exc:
        fail(exc)
    differ = verify and not out["digests_equal"]
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        raise typer.Exit(1 if differ else 0)
    console.print(f"replayed {out['commands']} commands and {out['events']} events of {source.topic_prefix} into "
                  f"{target.topic_prefix} in {out['seconds']} s ({out['records_per_s']} records/s; "
                  f"{out['reused']} vectors reused, {out['embedded']} embedded)")
    if in_place:
        sw = out["switch"]
        console.print(f"switched {sw['namespace']} to the rebuild in one step (caught up {sw['caught_up_commands']}"
                      f" commands; paused {sw['paused_s']} s{', by its worker' if sw.get('by_worker') else ''})")
    elif verify:
        console.print("[red]digests differ[/red]" if differ else "digests equal")
    if differ:
        raise typer.Exit(1)


def _check_verify(verify: bool, in_place: bool, until: str | None, until_time: datetime | None) -> None:
    """Refuse ``--verify`` where no digest of the replay can equal the live one (a usage error, exit 2)."""
    if not verify:
        return
    if in_place:
        raise typer.BadParameter("an in-place rebuild becomes the namespace itself: there is no second namespace"
                                 " to compare (run `memwarden state digest` before and after)",
                                 param_hint=["--verify", "--in-place"])
    if until or until_time:
        other = "--until" if until else "--until-time"
        raise typer.BadParameter("a point-in-time replay is the state as the ledger stood then, which cannot equal"
                                 " the live state: compare whole-ledger replays only", param_hint=["--verify", other])


def _worker_serves(settings: Settings) -> bool:
    """Whether the worker at ``settings.worker_url`` answers ``/health`` for this namespace."""
    from memwarden.ops.worker_process import worker_serves

    return worker_serves(settings)


def _live_workers(settings: Settings) -> list[int]:
    """Pids of the running workers of ``settings``' namespace (from their pid files)."""
    from memwarden.ops.pidfiles import read_pidfile, run_dir

    paths = run_dir(settings).glob(f"worker-{settings.topic_prefix}-*.pid")
    return [pid for pid in (read_pidfile(p) for p in paths) if pid is not None]


def _switch(live: Settings, rebuilt: Settings) -> dict[str, Any]:
    """The switch of ``live`` to ``rebuilt``: through the namespace's running worker, or here when
    none runs. The rebuild is dropped when the switch fails."""
    import asyncio

    import httpx

    from memwarden.bootstrap import Container, drop_projections
    from memwarden.errors import StackUnavailable, ValidationError
    from memwarden.processors.rebuild import switch

    try:
        if _worker_serves(live):
            response = httpx.post(f"{live.worker_url}/switch", json={"rebuilt": rebuilt.topic_prefix}, timeout=3600.0)
            body = response.json()
            if response.status_code == 400:
                raise ValidationError(body.get("field") or "rebuilt", body.get("error", "refused"))
            if response.status_code != 200:
                raise StackUnavailable(f"the worker of {live.topic_prefix} cannot switch: {body.get('error')}")
            return {**body, "by_worker": True}
        running = _live_workers(live)
        if running:  # e.g. a gate-only worker: it serves no HTTP and would write the state being retired
            raise StackUnavailable(f"a worker of {live.topic_prefix} runs (pid {', '.join(map(str, running))}) but its"
                                   " read API does not answer: stop it, then run --in-place again")
        container = Container(live)
        try:
            return {**asyncio.run(switch(container, rebuilt)), "by_worker": False}
        finally:
            container.close()
    except BaseException:
        drop_projections(rebuilt)
        raise


def _compare(source: Settings, target: Settings) -> tuple[bool, dict[str, Any]]:
    remedy = (f"the replay into {target.topic_prefix} is done: stop the worker, then compare `memwarden state digest"
              f" --namespace {source.topic_prefix}` with `... --namespace {target.topic_prefix}`")
    a, b = _digests(source, remedy), _digests(target, remedy)
    return a == b, {"source": a, "target": b}


def _digests(settings: Settings, remedy: str = "stop the worker, then run this again") -> dict[str, dict[str, Any]]:
    """:func:`memwarden.bootstrap.namespace_digests`, failing in one line that names the cause and
    ``remedy`` when another process (the namespace's running worker) holds its embedded index: one
    process at a time may open a shard, its WAL is locked. Raises ``StackUnavailable`` then."""
    from memwarden.bootstrap import namespace_digests
    from memwarden.errors import StackUnavailable
    from memwarden.projections.vector_index import IndexUnavailable

    try:
        return namespace_digests(settings)
    except IndexUnavailable as exc:
        if "WouldBlock" not in str(exc):
            raise
        pids = _live_workers(settings)
        holder = (f"its running worker (pid {', '.join(map(str, pids))})" if pids
                  else "another process (the namespace's running worker?)")
        raise StackUnavailable(f"no digests: the embedded index of {settings.topic_prefix} is held open by {holder};"
                               f" {remedy}") from None


@state_app.command("digest")
def state_digest(
    namespace: Annotated[str | None, typer.Option(help="namespace (default MEMWARDEN_TOPIC_PREFIX)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """One digest per projection (profile, index, registry, grants, gate) over its canonical rows and
    points, never over plaintext. The embedded index must not be held by a running worker: while the
    namespace's worker runs it fails in one line saying so (stop the worker first), exit 1."""
    from memwarden.errors import MemwardenError

    try:
        found = _digests(namespace_settings(namespace))
    except MemwardenError as exc:
        fail(exc)
    if as_json:
        typer.echo(json.dumps(found, indent=2))
        return
    table = Table("projection", "rows", "digest")
    for name, d in found.items():
        table.add_row(name, str(d["rows"]), d["digest"])
    Console().print(table)


def recall(
    principal: str, query: str,
    namespace: Annotated[str | None, typer.Option(help="namespace (default MEMWARDEN_TOPIC_PREFIX)")] = None,
    k: Annotated[int, typer.Option(help="how many")] = 10,
    as_of: Annotated[datetime | None, typer.Option("--as-of", help="valid time (ISO with offset)")] = None,
    known_at: Annotated[datetime | None, typer.Option("--known-at", help="as the ledger knew it then")] = None,
    purpose: Annotated[str, typer.Option(help="purpose of the read")] = "general",
    mode: Annotated[str, typer.Option(help="hybrid, dense or lexical")] = "hybrid",
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Recall as PRINCIPAL in a namespace (audited on the namespace's ledger like every read): through the
    namespace's running worker when one serves it (signed with PRINCIPAL's local key when this host holds one),
    else in this process (the operator's read of a stopped or replayed namespace). Prints one line per memory, or
    says that nothing was found (``[]`` with ``--json``)."""
    from memwarden.errors import MemwardenError, StackUnavailable
    from memwarden.projections.vector_index import IndexUnavailable
    from memwarden.read_api.local import local_recall

    try:
        s = namespace_settings(namespace)
        if _worker_serves(s):
            found = _recall_through_worker(s, principal, query, k, as_of, known_at, purpose, mode)
        else:
            try:
                found = local_recall(s, principal, query, k, as_of, known_at, purpose, mode)
            except IndexUnavailable as exc:  # a worker starting or stopping holds the index: say so, no engine text
                if "WouldBlock" not in str(exc):
                    raise
                raise StackUnavailable(f"the embedded index of {s.topic_prefix} is held open by another process (its "
                                       "worker, starting or stopping?); try again once it serves, or stop it") from None
    except (MemwardenError, ValueError) as exc:
        fail(exc)
    if as_json:
        typer.echo(json.dumps([m.to_json() for m in found]))
        return
    for m in found:
        typer.echo(f"{m.score:7.3f}  {m.memory_id}  v{m.version}  {cut_text(m.text, 300)}")
    if not found:
        typer.echo(f"no memory {principal} may read for {purpose!r} matches the query")


def _recall_through_worker(s: Settings, principal: str, query: str, k: int, as_of: datetime | None,
                           known_at: datetime | None, purpose: str, mode: str) -> list[Any]:
    """:meth:`MemwardenClient.recall` against the namespace's worker, signed with ``principal``'s key file when
    this host holds one (a worker that wants signed reads refuses an unsigned one, naming ``auth``)."""
    from memwarden.keystore import local_signer
    from memwarden.producers.client import MemwardenClient

    signer = local_signer(s, principal)
    with MemwardenClient(s, signers=[signer] if signer is not None else []) as client:
        return list(client.recall(principal, query, k=k, as_of=as_of, known_at=known_at, purpose=purpose,
                                  mode=mode))  # type: ignore[arg-type]


def eval_replay(
    data: Annotated[str, typer.Option(help="LoCoMo JSON file (e.g. ../shared/data/locomo/locomo7.json)")],
    conversations: Annotated[str | None, typer.Option(help="comma-separated sample ids, e.g. conv-26")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    keep: Annotated[bool, typer.Option(help="keep both namespaces")] = False,
) -> None:
    """Ingest LoCoMo turns, replay the ledger into a fresh namespace, compare digests and recalls."""
    from pathlib import Path

    from memwarden.errors import MemwardenError
    from memwarden.evals.replay_eval import run_replay_eval

    ids = [c.strip() for c in conversations.split(",")] if conversations else None
    try:
        result = run_replay_eval(Settings(), Path(data), ids, keep=keep, progress=not as_json)
    except (MemwardenError, ValueError, FileNotFoundError) as exc:
        fail(exc)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    for key in ("turns", "ingest_per_s", "replay_per_s", "replay_s", "vectors_reused", "embedded_on_replay",
                "digests_equal", "recall_equal"):
        typer.echo(f"{key:>20}: {result[key]}")


def reconcile(
    namespace: Annotated[str | None, typer.Option(help="namespace (default MEMWARDEN_TOPIC_PREFIX)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Compare the projections with the ledger and repair every divergence (SSGM Eq. 7), now: through
    the namespace's running worker, or in this process when none holds the index."""
    import asyncio

    import httpx

    from memwarden.errors import MemwardenError

    try:
        s = namespace_settings(namespace)
        if _worker_serves(s):
            response = httpx.post(f"{s.worker_url}/reconcile", timeout=3600.0)
            run = response.json()
        else:
            from memwarden.bootstrap import Container
            from memwarden.processors.reconciler import reconcile as run_reconcile
            from memwarden.read_api.local import publish_now

            container = Container(s)
            try:
                run = asyncio.run(run_reconcile(container, publish=lambda r: asyncio.to_thread(publish_now, s, r)))
            finally:
                container.close()
            run["started_at"] = run["started_at"].isoformat()
    except (MemwardenError, httpx.HTTPError) as exc:
        fail(exc)
    if as_json:
        typer.echo(json.dumps(run, indent=2))
        return
    console.print(f"checked {run['checked_versions']} versions and {run['checked_points']} points; diverged "
                  f"{run['diverged'] or 'nothing'}; repaired {run['repaired']}; drift before repair "
                  f"{run['drift']:.4f} ({run['duration_ms']} ms)")


def eval_drift(
    steps: Annotated[int, typer.Option(help="workload steps (one command each)")] = 300,
    fault_rate: Annotated[float, typer.Option("--fault-rate", help="probability of a fault per step")] = 0.3,
    sync: Annotated[int, typer.Option(help="reconcile every SYNC steps")] = 10,
    base: Annotated[int, typer.Option(help="memories recorded before the first step")] = 200,
    seed: Annotated[int, typer.Option(help="seed of the workload and the faults")] = 7,
    plot_path: Annotated[str | None, typer.Option("--plot", help="draw both curves into this PNG")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    keep: Annotated[bool, typer.Option(help="keep the namespaces")] = False,
) -> None:
    """H1 of SSGM: drift δ over steps with faults injected into the projections, with and without
    reconciliation every SYNC steps, against the bound of Theorem 1."""
    from memwarden.errors import MemwardenError
    from memwarden.evals.drift import plot, run_drift

    try:
        result = run_drift(Settings(), steps, fault_rate, sync, base, seed, keep=keep, progress=not as_json)
        if plot_path:
            plot(result, plot_path)
    except (MemwardenError, ValueError, RuntimeError) as exc:
        fail(exc)
    if as_json:
        typer.echo(json.dumps({k: v for k, v in result.items() if k != "series"} | {"series": result["series"]}))
        return
    for key in ("faults", "reconciliations", "bound", "delta_max_with", "delta_max_without", "delta_mean_with",
                "delta_mean_without"):
        typer.echo(f"{key:>20}: {result[key]}")



def regate(
    policy: Annotated[str | None, typer.Option(help="a write-policy JSON file to judge with (default: today's)")]
    = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list, retract nothing")] = False,
    namespace: Annotated[str | None, typer.Option(help="namespace (default MEMWARDEN_TOPIC_PREFIX)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Run today's gate (detector, policy, keys) over the recorded commands; list the admitted memories
    it would now refuse or quarantine, and (without --dry-run) retract them with signed forgets."""
    import asyncio
    from pathlib import Path

    from memwarden.commands.policy import PolicyError, parse_policy
    from memwarden.errors import MemwardenError
    from memwarden.processors.regate import find
    from memwarden.retractions import retract

    try:
        s = namespace_settings(namespace)
        judged = parse_policy(Path(policy).read_text()) if policy else None
        findings = asyncio.run(find(s, judged))
        retracted = retract(s, findings) if findings and not dry_run else []
    except (MemwardenError, PolicyError, OSError) as exc:
        fail(exc)
    out = {"findings": [f.to_json() for f in findings], "retracted": retracted, "dry_run": dry_run}
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    table = Table("position", "memory", "subject", "then", "now", "reasons")
    for f in findings:
        table.add_row(f.position, f.memory_id, f.subject, f.then, f.now, ",".join(f.reasons))
    Console().print(table)
    console.print(f"{len(findings)} admitted memories would not be admitted today; "
                  f"{'nothing retracted (dry run)' if dry_run else f'{len(retracted)} forgets published'}")
