"""``memwarden serve`` (the REST API, issue 10) and ``memwarden token issue | revoke | list`` (its bearer
tokens: governance commands on the ledger, signed by the root admin or the token's principal)."""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer

from memwarden.cli_ledger import fail, namespace_settings

token_app = typer.Typer(no_args_is_help=True, help="Bearer tokens of the REST API: issue (shown once), revoke, list.")
_Namespace = Annotated[str | None, typer.Option(help="namespace (default MEMWARDEN_TOPIC_PREFIX)")]


def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8080,
    no_worker: Annotated[bool, typer.Option("--no-worker", help="exit when no worker of the namespace answers,"
                                            " instead of starting one")] = False,
    namespace: _Namespace = None,
) -> None:
    """Serve the REST API (OpenAPI at /openapi.json, docs at /docs) over the namespace's worker,
    starting one when none answers."""
    from memwarden.api.serve import serve as run
    from memwarden.errors import MemwardenError

    try:
        run(namespace_settings(namespace), host, port, start_worker=not no_worker,
            say=lambda line: typer.echo(line, err=True))
    except MemwardenError as exc:
        fail(exc)


@token_app.command("issue")
def issue(
    principal: Annotated[str, typer.Argument(help="the registered principal the token acts for, e.g. user:alice")],
    expires_days: Annotated[float | None, typer.Option(help="days until it expires (default: until revoked)")]
    = None,
    note: Annotated[str, typer.Option(help="what it is for (kept on the ledger)")] = "",
    namespace: _Namespace = None,
) -> None:
    """Issue a token for PRINCIPAL (signed by the root admin) and print it once on stdout; only its
    SHA-256 goes on the ledger. The token id and the decision go to stderr."""
    from memwarden.commands.tokens import make_token, token_hash
    from memwarden.errors import MemwardenError
    from memwarden.keystore import admin_signer
    from memwarden.producers.client import MemwardenClient

    if expires_days is not None and expires_days <= 0:
        raise typer.BadParameter("must be positive", param_hint="--expires-days")
    token = make_token(secrets.token_bytes(32))
    expires = datetime.now(UTC) + timedelta(days=expires_days) if expires_days is not None else None
    try:
        s = namespace_settings(namespace)
        admin = admin_signer(s)
        with MemwardenClient(s, signers=[admin]) as client:
            receipt = client.issue_token(principal, by=admin.principal_id, token_sha256=token_hash(token),
                                         expires_at=expires, note=note)
            decision = client.decided([receipt.command_id], timeout_s=60)[receipt.command_id]
    except MemwardenError as exc:
        fail(exc)
    if decision["outcome"] != "ACCEPTED":
        codes = ", ".join(f"{r['code']}: {r['message']}" for r in decision["reasons"])
        typer.echo(f"token not issued: {decision['outcome']} ({codes})", err=True)
        raise typer.Exit(1)
    until = expires.isoformat(timespec="seconds") if expires else "until revoked"
    typer.echo(f"token {receipt.memory_id} for {principal}, {until}; shown once below (only its SHA-256 is kept)",
               err=True)
    from memwarden.keystore import key_path

    if not key_path(s.data_dir, principal).exists() and principal != s.admin_principal:
        typer.echo(f"note: this host holds no signing key for {principal} ({key_path(s.data_dir, principal)}): a"
                   " server here answers its requests 409 NO_SIGNING_KEY until the key is there", err=True)
    typer.echo(token)


@token_app.command("revoke")
def revoke(
    token_id: Annotated[str, typer.Argument(help="the token id `token issue` printed (tok_...)")],
    as_principal: Annotated[str | None, typer.Option("--as", help="revoke as this principal (its own token; "
                                                     "default: the root admin)")] = None,
    reason: Annotated[str, typer.Option(help="why (kept on the ledger)")] = "",
    namespace: _Namespace = None,
) -> None:
    """Revoke TOKEN_ID: it authenticates nothing from the gate's decision on."""
    from memwarden.cli_forget import _signer
    from memwarden.errors import MemwardenError
    from memwarden.producers.client import MemwardenClient
    from memwarden.stores.pg import connect
    from memwarden.stores.tokens import token_by_id

    try:
        s = namespace_settings(namespace)
        with connect(s) as conn:
            found = token_by_id(conn, token_id)
        if found is None:
            raise typer.BadParameter(f"no token {token_id!r} in namespace {s.topic_prefix}", param_hint="TOKEN_ID")
        signer = _signer(s, as_principal)
        with MemwardenClient(s, signers=[signer]) as client:
            receipt = client.revoke_token(token_id, by=signer.principal_id, principal=found.principal, reason=reason)
            decision = client.decided([receipt.command_id], timeout_s=60)[receipt.command_id]
    except MemwardenError as exc:
        fail(exc)
    codes = ", ".join(r["code"] for r in decision["reasons"])
    typer.echo(f"revoke {token_id}: {decision['outcome']} ({codes})")
    if decision["outcome"] != "ACCEPTED":
        raise typer.Exit(1)


@token_app.command("list")
def list_tokens(
    principal: Annotated[str | None, typer.Option(help="only this principal's tokens")] = None,
    namespace: _Namespace = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON lines")] = False,
) -> None:
    """Tokens of the namespace: id, principal, issued, expires, revoked (never a token)."""
    from memwarden.epoch import from_ms
    from memwarden.stores.pg import connect
    from memwarden.stores.tokens import tokens_of

    def when(ms: int | None) -> str | None:
        return from_ms(ms).isoformat(timespec="seconds") if ms is not None else None

    try:
        with connect(namespace_settings(namespace)) as conn:
            found = tokens_of(conn, principal)
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        fail(exc)
    rows = [{"token_id": t.token_id, "principal": t.principal, "issued_by": t.issued_by,
             "issued_at": when(t.issued_at_ms), "expires_at": when(t.expires_ms), "revoked_at": when(t.revoked_at_ms)}
            for t in found]
    if rows and not as_json:  # a header names the columns of the plain form
        typer.echo("  ".join(rows[0]))
    for row in rows:
        typer.echo(json.dumps(row) if as_json else "  ".join(f"{v or '-'}" for v in row.values()))
    if not found and not as_json:
        typer.echo("no tokens", err=True)


__all__ = ["issue", "list_tokens", "revoke", "serve", "token_app"]
