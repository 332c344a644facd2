"""``memwarden repair`` and ``memwarden eval repair`` (issue 14 part 4): selective repair through
lineage of what a compromised source, key or principal put into memory (the logic is
:mod:`memwarden.repair`, the evaluation :mod:`memwarden.evals.repair_eval`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from memwarden.cli_ledger import console, fail, namespace_settings

if TYPE_CHECKING:
    from memwarden.repair import RepairReport


#: The option behind each field a ``RepairTarget`` or ``check_action`` names in a ``ValidationError``.
_OPTION = {"source_refs": "--source-ref", "key_ids": "--key-id", "principals": "--principal",
           "admitted_from": "--from", "admitted_to": "--to", "action": "--action",
           "target": "--source-ref/--key-id/--principal"}


def _when(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not an ISO time (e.g. 2026-07-01T09:00:00+00:00)",
                                 param_hint=option) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def repair(
    source_ref: Annotated[list[str] | None, typer.Option("--source-ref", help="source reference found compromised "
                                                         "(repeatable)")] = None,
    key_id: Annotated[list[str] | None, typer.Option("--key-id", help="signing key id found compromised "
                                                     "(repeatable)")] = None,
    principal: Annotated[list[str] | None, typer.Option("--principal", help="writing principal found compromised "
                                                        "(repeatable)")] = None,
    since: Annotated[str | None, typer.Option("--from", help="admitted by the gate from (ISO time; UTC if no offset)")]
    = None,
    until: Annotated[str | None, typer.Option("--to", help="admitted by the gate before (ISO time; UTC if no "
                                              "offset)")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list what would go and the reads affected; change "
                                          "nothing")] = False,
    action: Annotated[str, typer.Option(help="forget (the only action: see `memwarden.repair` for why not "
                                        "quarantine)")] = "forget",
    reason: Annotated[str, typer.Option(help="why, recorded with the forget")] = "",
    namespace: Annotated[str | None, typer.Option(help="namespace (default MEMWARDEN_TOPIC_PREFIX)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Forget every memory admitted from a compromised source (--source-ref), signing key (--key-id) or
    principal (--principal, optionally within --from/--to), and every memory derived from one, in one
    ForgetMatching signed by the root admin; then list the audited reads that returned any of them.
    Criteria given together must all match. Without one of the three: an error, never "everything"."""
    from memwarden.errors import MemwardenError, ValidationError
    from memwarden.repair import RepairTarget, check_action
    from memwarden.repair import repair as run_repair

    if not (source_ref or key_id or principal):
        raise typer.BadParameter("name what was compromised: --source-ref, --key-id or --principal (an empty "
                                 "repair never means everything)", param_hint="--source-ref/--key-id/--principal")
    try:
        check_action(action)
        target = RepairTarget(tuple(source_ref or ()), tuple(key_id or ()), tuple(principal or ()),
                              _when(since, "--from"), _when(until, "--to"))
    except ValidationError as exc:
        raise typer.BadParameter(exc.reason, param_hint=_OPTION.get(exc.field, exc.field)) from None
    try:
        report = run_repair(namespace_settings(namespace), target, dry_run=dry_run, reason=reason)
    except MemwardenError as exc:
        fail(exc)
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2, default=str))
    else:
        _render(report)
    if report.refused:
        raise typer.Exit(1)


def _render(report: RepairReport) -> None:
    out = Console()
    verb = "would forget" if report.dry_run else "forgot"
    codes = ", ".join(f"{r['code']}: {r['message']}" for r in report.reasons)
    out.print(f"repair {report.target.describe()} -> {report.outcome} ({codes}) at {report.position}")
    out.print(f"{verb} {len(report.memory_ids)} memories: {len(report.matched)} matched, "
              f"{len(report.derived)} derived from them")
    table = Table("memory", "why")
    for m in report.matched:
        table.add_row(m, "matched")
    for m in report.derived:
        table.add_row(m, "derived (lineage)")
    if report.memory_ids:
        out.print(table)
    reads = Table("audit position", "read at", "principal", "purpose", "memories returned")
    for r in report.affected_reads:
        reads.add_row(r.position, r.read_at, r.principal, r.purpose, ", ".join(r.memory_ids))
    since = report.first_recorded_at.isoformat() if report.first_recorded_at else "-"
    out.print(f"{len(report.affected_reads)} audited reads returned them (first recorded {since}); tell: "
              + (", ".join(f"{p} ({n})" for p, n in report.affected_principals().items()) or "nobody"))
    if report.affected_reads:
        out.print(reads)


def eval_repair(
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    keep: Annotated[bool, typer.Option(help="keep the evaluation namespace")] = False,
) -> None:
    """A poisoned import feed among legitimate history, with derivatives of both and agents' reads:
    repair by source reference through the real pipeline; poisoned and derived readable, legitimate
    kept, affected reads found, on every read path."""
    from memwarden.errors import MemwardenError
    from memwarden.evals.repair_eval import render, run_repair_eval
    from memwarden.settings import Settings

    try:
        result = run_repair_eval(Settings(), progress=not as_json, keep=keep)
    except (MemwardenError, ValueError) as exc:
        fail(exc)
    if as_json:
        typer.echo(json.dumps(result, indent=2, default=str))
    else:
        render(result, Console())
    if not result["passed"]:
        console.print("[red]repair evaluation failed[/red]: see the figures above")
        raise typer.Exit(1)
