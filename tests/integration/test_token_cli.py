"""``memwarden token issue`` and ``memwarden token list`` against the real broker, worker and database: the token
is printed once on stdout, and the plain list names its columns in a header line (``--json`` gives JSON lines)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

from memwarden.keystore import key_path
from memwarden.ops.worker_process import WorkerProcess
from memwarden.settings import Settings
from tests.integration.conftest import run_cli


def test_an_issued_token_is_listed_under_a_header_and_never_shown_again(
        namespace: Settings, worker: WorkerProcess) -> None:
    principal = f"user:tok-{uuid.uuid4().hex[:8]}"
    try:
        assert run_cli(namespace, "principal", "register", principal).exit_code == 0
        issued = run_cli(namespace, "token", "issue", principal)
        assert issued.exit_code == 0, issued.output
        token = issued.stdout.strip().splitlines()[-1]
        assert token.startswith("mwt_") and "no signing key" not in issued.stderr

        listed = run_cli(namespace, "token", "list", "--principal", principal)
        assert listed.exit_code == 0, listed.output
        header, *rows = listed.stdout.strip().splitlines()
        assert header.split() == ["token_id", "principal", "issued_by", "issued_at", "expires_at", "revoked_at"]
        assert len(rows) == 1 and rows[0].split()[1] == principal and token not in listed.stdout

        as_json = run_cli(namespace, "token", "list", "--principal", principal, "--json")
        assert [json.loads(line)["principal"] for line in as_json.stdout.strip().splitlines()] == [principal]
    finally:
        key_path(namespace.data_dir, principal).unlink(missing_ok=True)


def test_a_token_for_a_principal_whose_key_this_host_lacks_says_so(
        namespace: Settings, worker: WorkerProcess, principal: Callable[..., str]) -> None:
    """Newcomer trial, nineteenth session: a token issued for a principal whose key is elsewhere was issued
    silently, and every request then answered 409 NO_SIGNING_KEY."""
    elsewhere = principal()  # registered with a key held in memory only, never in this host's key folder
    issued = run_cli(namespace, "token", "issue", elsewhere)
    assert issued.exit_code == 0 and issued.stdout.strip().startswith("mwt_"), issued.output
    assert f"holds no signing key for {elsewhere}" in " ".join(issued.stderr.split()), issued.stderr
