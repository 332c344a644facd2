"""``memwarden forget`` and ``memwarden hold place | lift``: the operator's forgets and legal holds
(issue 14 part 3). Each publishes one signed command and prints the gate's decision; a refusal exits
non-zero with its reason codes (a refusal never looks like success)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from memwarden.cli_ledger import fail, namespace_settings
from memwarden.settings import Settings

hold_app = typer.Typer(no_args_is_help=True, help="Legal holds: forgets of held memories wait until lifted.")

_Many = Annotated[list[str] | None, typer.Option()]


def _signer(s: Settings, principal: str | None) -> Any:
    """The signer of ``principal`` from the local key files (default: the root admin)."""
    from memwarden.keystore import admin_signer, key_path, local_signer

    if principal is None or principal == s.admin_principal:
        return admin_signer(s)
    signer = local_signer(s, principal)
    if signer is None:
        raise typer.BadParameter(f"no signing key for {principal!r} under {key_path(s.data_dir, principal).parent}",
                                 param_hint="--as")
    return signer


def _when(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not an ISO 8601 time", param_hint=option) from None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _report(client: Any, receipt: Any, as_json: bool) -> None:
    decision = client.decided([receipt.command_id], timeout_s=120)[receipt.command_id]
    out = {"command_id": receipt.command_id, "position": f"{receipt.topic}:{receipt.partition}:{receipt.offset}",
           **{k: decision[k] for k in ("outcome", "reasons", "memory_ids")}}
    if as_json:
        typer.echo(json.dumps(out, indent=2))
    else:
        typer.echo(f"{out['outcome']} at {out['position']} (command {receipt.command_id})")
        for r in decision["reasons"]:
            typer.echo(f"  {r['code']}: {r['message']}")
        for m in decision["memory_ids"]:
            typer.echo(f"  {m}")
    if decision["outcome"] == "REJECTED":
        raise typer.Exit(1)


#: The option of ``memwarden forget`` behind each field a client error names (``selector.memory_ids.0`` ...).
_FORGET_OPTIONS = {"memory_ids": "--memory", "subjects": "--subject", "scopes": "--scope", "tags": "--tag",
                   "source_references": "--source-ref", "writers": "--writer", "key_ids": "--key-id",
                   "observed_from": "--from", "observed_to": "--to", "query": "--query", "purposes": "--purpose",
                   "expired_before": "--expired", "reason": "--reason"}


def option_error(exc: Exception, options: dict[str, str]) -> Exception:
    """``exc`` with the CLI option in place of the client's field when it is a ``ValidationError`` naming one of
    ``options`` (a dotted path: ``selector.observed_to`` -> ``--to``; a list item keeps its value in the reason),
    else ``exc``. Newcomer trial, twenty-fifth session: errors named fields no CLI user typed."""
    from memwarden.errors import ValidationError

    if not isinstance(exc, ValidationError):
        return exc
    parts = [p for p in exc.field.split(".") if p not in ("selector", "envelope") and not p.isdigit()]
    option = options.get(parts[0]) if parts else None
    if option is None:
        return exc
    reason = re.sub(r"\b(" + "|".join(map(re.escape, options)) + r")\b", lambda m: options[m.group(1)], exc.reason)
    return ValidationError(option, reason.removeprefix("Value error, "))


def forget(
    memory: _Many = None,
    subject: Annotated[str | None, typer.Option(help="forget everything about this subject (ForgetSubject) or, "
                                                "with other criteria, only its memories")] = None,
    scope: _Many = None,
    tag: _Many = None,
    source_ref: _Many = None,
    writer: _Many = None,
    key_id: _Many = None,
    since: Annotated[str | None, typer.Option("--from", help="observed at or after (ISO 8601)")] = None,
    until: Annotated[str | None, typer.Option("--to", help="observed before (ISO 8601)")] = None,
    query: Annotated[str | None, typer.Option(help="memories whose text contains this (resolved by a read as "
                                              "--as; the words never go on the ledger)")] = None,
    purpose: Annotated[list[str] | None, typer.Option(help="with --query: also read for this purpose (a memory "
                                                      "tagged with purposes is read only for one of them)")] = None,
    expired: Annotated[bool, typer.Option("--expired", help="every memory past its expires_at (retention)")]
    = False,
    reason: Annotated[str, typer.Option(help="why (kept on the ledger)")] = "",
    as_principal: Annotated[str | None, typer.Option("--as", help="issuing principal (default: root admin)")]
    = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list what would go, forget nothing")] = False,
    namespace: Annotated[str | None, typer.Option(help="namespace (default MEMWARDEN_TOPIC_PREFIX)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Forget memories through the gate: by id (--memory), everything about a subject (--subject
    alone), or every memory matching all the criteria given. Derivatives go too; legal holds make the
    forget wait (DEFERRED). With no criterion it refuses: a forget never means "everything"."""
    from memwarden.errors import MemwardenError
    from memwarden.producers.client import MemwardenClient

    criteria = [memory, scope, tag, source_ref, writer, key_id, since, until, query, expired or None]
    if subject is None and not any(criteria):
        raise typer.BadParameter("name what to forget: --memory, --subject, --scope, --tag, --source-ref, --writer,"
                                 " --key-id, --from/--to, --query or --expired", param_hint="criteria")
    try:
        s = namespace_settings(namespace)
        signer = _signer(s, as_principal)
        with MemwardenClient(s, signers=[signer]) as client:
            who = signer.principal_id
            if subject is not None and not any(criteria):
                receipt = client.forget_subject(subject, principal=who, reason=reason, dry_run=dry_run, wait=False)
            else:
                receipt = client.forget_matching(
                    principal=who, subjects=[subject] if subject else [], scopes=scope or [], tags=tag or [],
                    source_references=source_ref or [], writers=writer or [], key_ids=key_id or [],
                    memory_ids=memory or [], observed_from=_when(since, "--from"), observed_to=_when(until, "--to"),
                    expired_before=datetime.now(UTC) if expired else None, query=query, purposes=purpose or [],
                    reason=reason, dry_run=dry_run, wait=False)
            _report(client, receipt, as_json)
    except MemwardenError as exc:
        fail(option_error(exc, _FORGET_OPTIONS))


def _as_admin(namespace: str | None, as_json: bool, publish: Callable[[Any, str], Any]) -> None:
    """Publish one command as the namespace's root admin (``publish(client, admin_id)`` returns its
    receipt) and report the gate's decision; an unreachable stack or a refused key is one line."""
    from memwarden.errors import MemwardenError
    from memwarden.producers.client import MemwardenClient

    try:
        s = namespace_settings(namespace)
        admin = _signer(s, None)
        with MemwardenClient(s, signers=[admin]) as client:
            _report(client, publish(client, admin.principal_id), as_json)
    except MemwardenError as exc:
        fail(exc)


@hold_app.command("place")
def place(
    hold_id: str,
    subject: _Many = None,
    scope: _Many = None,
    reason: Annotated[str, typer.Option(help="why (kept on the ledger)")] = "",
    namespace: Annotated[str | None, typer.Option(help="namespace (default MEMWARDEN_TOPIC_PREFIX)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Place legal hold HOLD_ID (root admin) on subjects and/or scopes: their forgets wait."""
    if not subject and not scope:
        raise typer.BadParameter("a hold names at least one --subject or --scope", param_hint="--subject")
    _as_admin(namespace, as_json, lambda client, admin: client.place_hold(
        hold_id, by=admin, subjects=subject or [], scopes=scope or [], reason=reason, wait=False))


@hold_app.command("lift")
def lift(
    hold_id: str,
    reason: Annotated[str, typer.Option(help="why (kept on the ledger)")] = "",
    namespace: Annotated[str | None, typer.Option(help="namespace (default MEMWARDEN_TOPIC_PREFIX)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Lift legal hold HOLD_ID (root admin): the forgets it kept waiting run now."""
    _as_admin(namespace, as_json, lambda client, admin: client.lift_hold(hold_id, by=admin, reason=reason,
                                                                          wait=False))


def prune(
    theta: Annotated[float, typer.Option(help="freshness threshold theta_fresh in [0, 1]")] = 0.05,
    grace_days: Annotated[float, typer.Option(help="days a memory stays below theta before it is pruned")] = 30.0,
    store_kind: _Many = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list, forget nothing")] = False,
    namespace: Annotated[str | None, typer.Option(help="namespace (default MEMWARDEN_TOPIC_PREFIX)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Budgeted pruning (SSGM 4.3): memories whose freshness stayed below THETA for the grace period
    are forgotten (EVENT, EXPERIENCE; with receipts) or archived (PROFILE: left to the read filter)."""
    from memwarden.commands.model import StoreKind
    from memwarden.errors import MemwardenError, ValidationError
    from memwarden.pruning import prune as run

    if not grace_days >= 0:
        fail(ValidationError("--grace-days", f"must be a number of days >= 0, got {grace_days:g}"))
    kinds = [k.value for k in StoreKind]
    unknown = [k for k in store_kind or [] if k not in kinds]
    if unknown:
        fail(ValidationError("--store-kind", f"{unknown[0]!r} is not a store kind: one of {', '.join(kinds)}"))
    try:
        out = run(namespace_settings(namespace), theta, grace_days * 86_400.0, store_kind or [], dry_run)
    except (MemwardenError, ValueError) as exc:
        fail(exc)
    if as_json:
        typer.echo(json.dumps(out, indent=2, default=str))
        return
    typer.echo(f"forget: {len(out['forget'])}  archive: {len(out['archive'])}" + ("  (dry run)" if dry_run else ""))
    if out["decision"] is not None:
        typer.echo(f"  {out['decision']['outcome']}: {[r['code'] for r in out['decision']['reasons']]}")


__all__ = ["forget", "hold_app", "lift", "place", "prune"]
