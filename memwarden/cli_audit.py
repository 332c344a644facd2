"""``memwarden audit at | memory | principal``: the forensic audit by ledger position (issue 9 part 7)
as rich tables on a terminal, or JSON with ``--json``. The audit never prints forgotten content."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from memwarden.cli_ledger import console, cut_text, fail, namespace_settings
from memwarden.settings import Settings


def _ledger_of(namespace: str | None) -> tuple[Settings, Any]:
    from memwarden.bootstrap import Container
    from memwarden.ops.forensics import read_ledger

    s = namespace_settings(namespace)
    c = Container(s)
    return s, read_ledger(s, c.codec, c.kek)


def _aware(value: datetime | None, option: str) -> None:
    """Refuse a time without a UTC offset (as ``replay --until-time`` does): one line naming ``option``."""
    from memwarden.errors import ValidationError

    if value is not None and value.tzinfo is None:
        fail(ValidationError(option, f"must carry a UTC offset (e.g. {value.isoformat()}+00:00)"))


#: Characters of a value the ``audit at`` table shows (``--json`` shows it whole).
CELL_CHARS = 160


def _print(report: dict[str, Any], as_json: bool, rows: Sequence[tuple[str, ...]], header: tuple[str, ...]) -> None:
    if as_json:
        typer.echo(json.dumps(report, indent=2, default=str))
        return
    table = Table(*header)
    for row in rows:
        table.add_row(*row)
    Console().print(table)


def audit_at(
    position: str,
    as_principal: Annotated[str | None, typer.Option("--as", help="show content if this principal may read it")]
    = None,
    namespace: Annotated[str | None, typer.Option(help="namespace (default MEMWARDEN_TOPIC_PREFIX)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Forensic audit of the record at TOPIC:PARTITION:OFFSET: signer and key, the gate's decision and
    reasons, events produced, rows citing it, reads that returned it, what came later. Content only
    with ``--as`` a principal allowed to read it, while its data key exists."""
    from memwarden.errors import MemwardenError
    from memwarden.ops.forensics import WITHHELD
    from memwarden.ops.forensics_report import audit_at as report_at

    try:
        s, ledger = _ledger_of(namespace)
        report = report_at(s, ledger, position, as_principal)
    except MemwardenError as exc:
        fail(exc)
    if report.get("content") == WITHHELD:
        report["content"] = ("(withheld: name a principal allowed to read it with --as)" if as_principal is None
                             else f"(withheld: {as_principal} may not read it)")
    rows = [(k, cut_text(json.dumps(v, default=str), CELL_CHARS)) for k, v in report.items()]
    _print(report, as_json, rows, ("field", "value"))


def audit_memory(
    memory_id: str,
    namespace: Annotated[str | None, typer.Option(help="namespace (default MEMWARDEN_TOPIC_PREFIX)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """The lineage of a memory as a timeline: commands, decisions, events, reads, erasure receipts;
    never content (``audit at <position> --as P`` shows a command's content to P). An id the ledger
    does not know: one line saying so, exit 1."""
    from memwarden.errors import MemwardenError
    from memwarden.ops.forensics import WITHHELD
    from memwarden.ops.forensics_report import audit_memory as report_memory

    try:
        s, ledger = _ledger_of(namespace)
        report = report_memory(s, ledger, memory_id)
    except MemwardenError as exc:
        fail(exc)
    if not (report["timeline"] or report["reads"] or report["erasure_receipts"]):
        fail(ValueError(f"no memory {memory_id} on the ledger of {s.topic_prefix}"))
    for e in report["timeline"]:
        if e["content"] == WITHHELD:
            e["content"] = f"(withheld: see `memwarden audit at {e['at']} --as <principal>`)"
    rows = [(e["at"], e["command"]["kind"], (e["decision"] or {}).get("outcome", "-"),
             ",".join(x["code"] for x in (e["decision"] or {}).get("reasons", [])), e["content"])
            for e in report["timeline"]]
    rows += [(r["at"], "read", r["principal"], r["purpose"], r["read_at"]) for r in report["reads"]]
    rows += [(r["at"], "erasure receipt", "verified" if r["verified"] else "NOT verified",
              ", ".join(sorted(r["stores"])), r["completed_at"]) for r in report["erasure_receipts"]]
    _print(report, as_json, rows, ("position", "what", "outcome / who", "reasons / purpose", "content / when"))


def audit_principal(
    principal: str,
    since: Annotated[datetime | None, typer.Option("--from", help="from (ISO time with offset)")] = None,
    until: Annotated[datetime | None, typer.Option("--to", help="to (ISO time with offset)")] = None,
    namespace: Annotated[str | None, typer.Option(help="namespace (default MEMWARDEN_TOPIC_PREFIX)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Everything a principal wrote, read, granted and was refused (``--from``/``--to``: decision or
    read times, each with a UTC offset). Nothing recorded: one line saying so, exit 0."""
    from memwarden.errors import MemwardenError, ValidationError
    from memwarden.ops.forensics_report import audit_principal as report_principal

    _aware(since, "--from")
    _aware(until, "--to")
    if not principal.strip():
        fail(ValidationError("principal", "must name a principal, e.g. user:alice"))
    if since is not None and until is not None and until < since:
        fail(ValidationError("--to", f"{until.isoformat()} is before --from {since.isoformat()}: an empty window"))
    try:
        _, ledger = _ledger_of(namespace)
        report = report_principal(ledger, principal, since, until)
    except MemwardenError as exc:
        fail(exc)
    if not as_json and not any(report[part] for part in ("wrote", "read", "granted", "refused")):
        window = "".join(f" {word} {t.isoformat()}" for word, t in (("from", since), ("to", until)) if t)
        console.print(f"nothing recorded for {principal}{window}")
        return
    rows = [(e["at"], part, e.get("kind", "read"), str(e.get("outcome", "")), ",".join(e.get("reasons", [])))
            for part in ("wrote", "granted", "refused") for e in report[part]]
    rows += [(r["at"], "read", r["purpose"], str(len(r["returned"])), r["read_at"]) for r in report["read"]]
    _print(report, as_json, rows, ("position", "what", "kind", "outcome", "reasons"))
