"""``memwarden token issue`` and ``memwarden token list`` against the real broker, worker and database: the token
is printed once on stdout, and the plain list names its columns in a header line (``--json`` gives JSON lines)."""

from __future__ import annotations

import json
import uuid

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
        assert token.startswith("mwt_")

        listed = run_cli(namespace, "token", "list", "--principal", principal)
        assert listed.exit_code == 0, listed.output
        header, *rows = listed.stdout.strip().splitlines()
        assert header.split() == ["token_id", "principal", "issued_by", "issued_at", "expires_at", "revoked_at"]
        assert len(rows) == 1 and rows[0].split()[1] == principal and token not in listed.stdout

        as_json = run_cli(namespace, "token", "list", "--principal", principal, "--json")
        assert [json.loads(line)["principal"] for line in as_json.stdout.strip().splitlines()] == [principal]
    finally:
        key_path(namespace.data_dir, principal).unlink(missing_ok=True)
