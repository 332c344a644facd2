"""``memwarden principal register`` and ``memwarden review list | show | approve | reject``: principals with
their local signing keys (issue 3) and the quarantine review they sign."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Annotated

import typer

from memwarden.cli_ledger import fail

if TYPE_CHECKING:
    from memwarden.commands.signing import Signer
    from memwarden.settings import Settings


def principal_register(
    principal_id: Annotated[str, typer.Argument(help="e.g. user:rita")],
    kind: Annotated[str, typer.Option(help="USER, AGENT, SERVICE or REVIEWER")] = "USER",
    role: Annotated[list[str] | None, typer.Option(help="role (repeatable), e.g. reviewer, approver, admin")] = None,
) -> None:
    """Register a principal (signed by the root admin); its private key is kept in the local key folder.

    Prints ``<principal>: ACCEPTED (key …, file …)`` and exits 0 once the gate accepted it. A refusal is no success:
    it prints the gate's reason codes (``PRINCIPAL_EXISTS``: registered before, maybe with a key this host does not
    hold) and exits 1, and a key file this call created for it is removed again. The worker is asked first, so
    nothing is published when it does not answer (exit 1)."""
    from memwarden.errors import Refused, ValidationError
    from memwarden.keystore import admin_signer, key_path, load_or_create_signer
    from memwarden.producers.client import MemwardenClient
    from memwarden.settings import Settings

    if not principal_id.strip() or any(ch.isspace() or not ch.isprintable() for ch in principal_id):
        fail(ValueError(f"principal_id: {principal_id!r} must be a non-empty id without spaces or control "
                        "characters, e.g. user:rita"))
    s = Settings()
    path = key_path(s.data_dir, principal_id)
    created = not path.exists()
    try:
        with MemwardenClient(s, signers=[admin_signer(s)]) as client:
            client.decisions_now([])  # the worker answers before anything is published (StackUnavailable if not)
            signer = load_or_create_signer(path, principal_id)
            r = client.register_principal(principal_id, by=s.admin_principal, kind=kind.upper(), roles=role or (),
                                          public_key=signer.public_key, key_id=signer.key_id)
    except Refused as exc:
        if created:
            path.unlink(missing_ok=True)  # the key of a refused registration verifies nothing: keep no orphan
        fail(ValueError(f"{principal_id}: {exc.outcome} ({', '.join(exc.codes) or 'no reason given'}); "
                        f"command {exc.command_id}"))
    except ValidationError as exc:  # refused before anything was published (a bad kind ...): no key kept either
        if created:
            path.unlink(missing_ok=True)
        fail(exc)
    except Exception as exc:  # noqa: BLE001 - reported, not raised (a key of a published registration stays)
        fail(exc)
    typer.echo(f"{principal_id}: {r.outcome} (key {signer.key_id}, file {path})")


def review_list() -> None:
    """Quarantined memory commands awaiting review: command id, writer, subject, reasons."""
    from memwarden.settings import Settings
    from memwarden.stores.gate_state import pending_reviews
    from memwarden.stores.pg import connect

    try:
        with connect(Settings()) as conn:
            rows = pending_reviews(conn)
    except Exception as exc:  # noqa: BLE001
        fail(exc)
    for cid, writer, subject, reasons, at in rows:
        codes = ",".join(r["code"] for r in reasons)
        typer.echo(f"{cid}  {at:%Y-%m-%d %H:%M}  {writer} -> {subject}  {codes}")
    if not rows:
        typer.echo("nothing awaits review")


def _command_id(command_id: str) -> str:
    """``command_id`` as a canonical UUID; ``ValueError`` naming it, and where the held ones are listed."""
    try:
        return str(uuid.UUID(command_id))
    except ValueError:
        raise ValueError(f"command_id: {command_id!r} is not a command id (a UUID; `memwarden review list` shows "
                         "the held ones)") from None


def _reviewer_signer(s: Settings, by: str) -> Signer:
    """``by``'s signer from this host's key folder; ``ValueError`` saying how to register it when absent."""
    from memwarden.keystore import key_path, local_signer

    signer = local_signer(s, by)
    if signer is None:
        raise ValueError(f"no signing key for {by} at {key_path(s.data_dir, by)}; register it with `memwarden "
                         "principal register`")
    return signer


def review_show(command_id: str, by: Annotated[str, typer.Option(help="reviewer principal id")],
                as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False) -> None:
    """Show a write held for review, its text opened, to reviewer ``--by`` (signed with its local key; audited on
    the ledger with purpose ``review``): what the reviewer is asked to approve or reject.

    Exits 1 naming the reason when ``--by`` holds no reviewer role (``NOT_A_REVIEWER``), wrote it
    (``SELF_REVIEW``), or nothing is held under the id (``NOT_QUARANTINED``, ``ALREADY_REVIEWED``)."""
    import json

    from memwarden.producers.client import MemwardenClient
    from memwarden.settings import Settings

    s = Settings()
    try:
        command_id = _command_id(command_id)
        with MemwardenClient(s, signers=[_reviewer_signer(s, by)]) as client:
            held = client.held(by, command_id)
    except Exception as exc:  # noqa: BLE001
        fail(exc)
    if as_json:
        typer.echo(json.dumps(held, indent=2))
        return
    codes = ", ".join(f"{r.get('code')}" for r in held["reasons"])
    typer.echo(f"command {held['command_id']} ({held['kind']}), held {held['quarantined_at']}: {codes}")
    typer.echo(f"writer {held['writer']} -> subject {held['subject']}, scope {held['scope']}, "
               f"source {held['source_kind']}")
    typer.echo(held["text"] if held["text"] is not None else f"(text {held['withheld']})")


def _review(command_id: str, by: str, note: str, approve: bool) -> None:
    from memwarden.errors import Refused
    from memwarden.producers.client import MemwardenClient
    from memwarden.settings import Settings
    from memwarden.stores.gate_state import review_subject
    from memwarden.stores.pg import connect

    verb = "approve" if approve else "reject"
    s = Settings()
    try:
        command_id = _command_id(command_id)
        with connect(s) as conn:
            subject = review_subject(conn, command_id)
        if subject is None:
            raise ValueError(f"command {command_id} is not in quarantine")
        with MemwardenClient(s, signers=[_reviewer_signer(s, by)]) as client:
            act = client.approve_quarantined if approve else client.reject_quarantined
            r = act(command_id, by=by, subject=subject, note=note)  # waits; Refused when REJECTED
    except Refused as exc:
        detail = "; ".join(f"{x.get('code')}: {x['message']}" if x.get("message") else str(x.get("code"))
                           for x in exc.reasons)
        fail(ValueError(f"{verb} {command_id}: {exc.outcome} ({detail or 'no reason given'}); "
                        f"review command {exc.command_id}"))
    except Exception as exc:  # noqa: BLE001
        fail(exc)
    typer.echo(f"{verb} {command_id}: {r.outcome}")


def review_approve(command_id: str, by: Annotated[str, typer.Option(help="reviewer principal id")],
                   note: Annotated[str, typer.Option(help="why")] = "") -> None:
    """Release a quarantined memory command (signed by reviewer ``--by``; audited on the ledger).

    Prints ``approve <id>: <outcome>`` and exits 0 once the gate released it; a refusal (``NOT_A_REVIEWER``,
    ``ALREADY_REVIEWED`` ...) prints the gate's reason codes and messages and exits 1."""
    _review(command_id, by, note, approve=True)


def review_reject(command_id: str, by: Annotated[str, typer.Option(help="reviewer principal id")],
                  note: Annotated[str, typer.Option(help="why")] = "") -> None:
    """Reject a quarantined memory command: it never becomes readable and its data key is shredded.

    Prints ``reject <id>: ACCEPTED`` and exits 0; a refusal prints the gate's reason codes and messages and
    exits 1."""
    _review(command_id, by, note, approve=False)
