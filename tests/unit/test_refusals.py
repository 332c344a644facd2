"""Field case Q3 (issue 12) and issue 10 item 4: the obvious grant works and a refusal never looks like
success.

The gate's grant rule: a non-admin's ``GrantAccess`` naming no ``subjects`` covers the grantor's own
memories, an admin's covers any subject, a non-admin naming another subject is ``NOT_GRANTOR``; the
recorded form folds to the same grant on replay. The client: calls that change governance, forget or
supersede wait for the decision and raise ``Refused`` with its reason codes; ``wait=False`` does not
wait; ``connect()`` builds a client from settings and the local keystore."""

from __future__ import annotations

import base64
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memwarden.commands.gate import GateState, GrantUpsert, Outcome
from memwarden.commands.gate.governance import grant_subjects
from memwarden.commands.model import GrantAccess, RevokeAccess
from memwarden.crypto import Kek
from memwarden.errors import MemwardenError, Refused, ValidationError
from memwarden.keystore import admin_signer, initialise, key_path, load_or_create_signer
from memwarden.producers.building import Receipt
from memwarden.producers.client import DecidedReceipt, MemwardenClient
from memwarden.settings import Settings
from tests import factories as f
from tests.unit.test_governed_gate import codes, run
from tests.unit.test_recorded import Ledger, _replay

KEK = Kek(b"q" * 32)


def _grant(principal: str = "user:alice", grant_id: str = "g-q3", **over: Any) -> GrantAccess:
    return GrantAccess(envelope=f.envelope(principal=principal, subject="agent:helper"), grant_id=grant_id,
                       grantee="agent:helper", rights=("READ",), scopes=("account:default",),
                       purposes=("support",), **over)


# -- the gate's rule ----------------------------------------------------------------------------------------
def test_a_subjects_grant_naming_no_subjects_covers_its_own_memories() -> None:
    d = run(_grant())
    assert d.outcome is Outcome.ACCEPTED
    effect = d.effects[0]
    assert isinstance(effect, GrantUpsert) and effect.grant.subjects == ("user:alice",)
    assert effect.grant.granted_by == "user:alice" and effect.grant.purposes == ("support",)


def test_an_admins_grant_naming_no_subjects_still_covers_any_subject() -> None:
    d = run(_grant("service:admin"))
    assert d.admitted and isinstance(d.effects[0], GrantUpsert) and d.effects[0].grant.subjects == ()


def test_a_non_admin_naming_someone_else_is_still_not_the_grantor() -> None:
    assert codes(run(_grant(subjects=("user:bob",)))) == ["NOT_GRANTOR"]
    assert codes(run(_grant(subjects=("user:alice", "user:bob")))) == ["NOT_GRANTOR"]
    assert run(_grant(subjects=("user:alice",))).admitted  # naming itself: as before


def test_grant_subjects_is_the_pure_rule() -> None:
    assert grant_subjects(_grant(), admin=False) == ("user:alice",)
    assert grant_subjects(_grant(), admin=True) == ()
    assert grant_subjects(_grant(subjects=("user:bob",)), admin=True) == ("user:bob",)


def test_the_recorded_default_grant_folds_to_the_same_grant_on_replay() -> None:
    led = Ledger()
    own = led.run(_grant())
    anyone = led.run(_grant("service:admin", grant_id="g-admin"))
    led.run(_grant("user:bob", grant_id="g-bob", subjects=("user:alice",)))  # NOT_GRANTOR, no effect
    led.run(RevokeAccess(envelope=f.envelope(), grant_id="g-q3"))
    assert own.admitted and anyone.admitted
    replayed = _replay(led)  # asserts every step's effects equal the live ones
    assert replayed == led.state
    grants = {g.grant_id: g for g in replayed.grants}
    assert grants["g-q3"].subjects == ("user:alice",) and grants["g-q3"].revoked_at_ms is not None
    assert grants["g-admin"].subjects == () and "g-bob" not in grants
    assert isinstance(led.state, GateState)


# -- the client: waiting for the decision -------------------------------------------------------------------
@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MemwardenClient]:
    settings = Settings(bootstrap_servers="127.0.0.1:1", data_dir=tmp_path, topic_prefix="unit")
    with MemwardenClient(settings, kek=KEK) as c:
        c.add_signer(f.signer("user:alice"))
        c.add_signer(f.signer("user:bob"))
        monkeypatch.setattr(c, "_send", lambda records, ids, timeout_s=60.0: [
            Receipt(i, "", "unit.commands", 0, n) for n, i in enumerate(ids)])
        yield c


def _decides(client: MemwardenClient, monkeypatch: pytest.MonkeyPatch, outcome: str,
             *reasons: str) -> list[str]:
    asked: list[str] = []

    def decided(command_ids: Any, timeout_s: float = 60.0) -> dict[str, dict[str, Any]]:
        asked.extend(command_ids)
        return {cid: {"outcome": outcome, "reasons": [{"code": c, "message": f"because {c}", "field": None}
                                                      for c in reasons]} for cid in command_ids}

    monkeypatch.setattr(client, "decided", decided)
    return asked


def test_a_rejected_governance_call_raises_with_the_gates_codes(client: MemwardenClient,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _decides(client, monkeypatch, "REJECTED", "NOT_GRANTOR")
    with pytest.raises(Refused) as caught:
        client.revoke_access("g1", by="user:bob", grantee="agent:helper")
    err = caught.value
    assert err.outcome == "REJECTED" and err.codes == ("NOT_GRANTOR",) and err.command_id == asked[0]
    assert err.reasons[0]["message"] == "because NOT_GRANTOR" and "NOT_GRANTOR" in str(err)
    again = pickle.loads(pickle.dumps(err))
    assert (again.outcome, again.codes, again.command_id) == (err.outcome, err.codes, err.command_id)


def test_a_rejected_forget_raises(client: MemwardenClient, monkeypatch: pytest.MonkeyPatch) -> None:
    _decides(client, monkeypatch, "REJECTED", "NOT_OWNER")
    with pytest.raises(Refused) as caught:
        client.forget("7b0c7c1e-9f32-4c57-9d1e-2f2f6c1d9a10", principal="user:bob", subject="user:bob")
    assert caught.value.codes == ("NOT_OWNER",)
    with pytest.raises(Refused):
        client.forget_subject("user:alice", principal="user:bob")


def test_a_quarantined_supersede_raises_but_a_deferred_forget_does_not(client: MemwardenClient,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _decides(client, monkeypatch, "QUARANTINED", "INSTRUCTION_LIKE")
    with pytest.raises(Refused) as caught:
        client.supersede("7b0c7c1e-9f32-4c57-9d1e-2f2f6c1d9a10", principal="user:alice", subject="user:alice",
                         text="now lives in Rome")
    assert caught.value.outcome == "QUARANTINED"
    _decides(client, monkeypatch, "DEFERRED", "LEGAL_HOLD")
    waiting = client.forget("7b0c7c1e-9f32-4c57-9d1e-2f2f6c1d9a10", principal="user:alice", subject="user:alice")
    assert waiting.outcome == "DEFERRED" and waiting.codes == ("LEGAL_HOLD",)


def test_an_accepted_call_returns_its_receipt_with_the_decision(client: MemwardenClient,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _decides(client, monkeypatch, "ACCEPTED")
    receipt = client.grant_access("agent:helper", by="user:alice", rights=["READ"], scopes=["account:default"],
                                  purposes=["support"], grant_id="g-own")
    assert isinstance(receipt, DecidedReceipt) and receipt.memory_id == "g-own"
    assert receipt.decision is not None and receipt.outcome == "ACCEPTED" and receipt.codes == ()


def test_wait_false_returns_at_once_and_record_never_waits(client: MemwardenClient,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _decides(client, monkeypatch, "REJECTED", "NOT_OWNER")
    receipt = client.forget("7b0c7c1e-9f32-4c57-9d1e-2f2f6c1d9a10", principal="user:bob", subject="user:bob",
                            wait=False)
    assert receipt.decision is None and receipt.outcome is None and receipt.command_id
    client.record(principal="user:alice", subject="user:alice", text="prefers tea")
    assert asked == []


# -- connect() ----------------------------------------------------------------------------------------------
def test_connect_builds_a_client_with_the_local_keystores_signers(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import memwarden

    monkeypatch.setenv("MEMWARDEN_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("MEMWARDEN_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    initialise(Settings(data_dir=tmp_path))  # what `memwarden stack up` does to its data folder
    signer = load_or_create_signer(key_path(tmp_path, "user:alice"), "user:alice")
    with memwarden.connect("user:alice") as client:
        assert client.settings.data_dir == tmp_path
        assert client._signers["user:alice"].key_id == signer.key_id
    with pytest.raises(ValidationError) as caught:
        memwarden.connect("user:nobody", settings=Settings(data_dir=tmp_path, bootstrap_servers="127.0.0.1:1"))
    assert caught.value.field == "principals"
    assert memwarden.Refused is Refused


def test_a_client_in_a_folder_the_stack_never_set_up_makes_no_keys_and_says_where_to_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Newcomer trial (twenty-fourth session): a script run from another directory than the checkout made a
    key-encryption key and a root admin key of its own in ``./.memwarden`` there; every write it sent was then
    refused ``CONTENT_UNREADABLE`` (the worker never had that KEK) or ``UNKNOWN_KEY``. Now it makes none and
    each entry point names the data folder and ``MEMWARDEN_DATA_DIR``."""
    import memwarden

    elsewhere = Settings(data_dir=tmp_path / "elsewhere" / ".memwarden", bootstrap_servers="127.0.0.1:1")
    with pytest.raises(MemwardenError, match="MEMWARDEN_DATA_DIR.*MEMWARDEN_KEK"):
        MemwardenClient(elsewhere)
    with pytest.raises(MemwardenError, match="root admin key.*MEMWARDEN_DATA_DIR"):
        admin_signer(elsewhere)
    with pytest.raises(ValidationError, match="MEMWARDEN_DATA_DIR") as caught:
        memwarden.connect("user:carol", settings=elsewhere)
    assert caught.value.field == "principals"
    assert not (tmp_path / "elsewhere").exists()  # nothing made there
    initialise(elsewhere)  # the stack's own step
    with MemwardenClient(elsewhere) as client:
        assert client.settings.data_dir == elsewhere.data_dir
    assert admin_signer(elsewhere).principal_id == elsewhere.admin_principal


def test_initialise_leaves_an_admin_key_held_elsewhere_alone(tmp_path: Path) -> None:
    held = Settings(data_dir=tmp_path, admin_public_key=base64.b64encode(bytes(32)).decode())
    initialise(held)
    assert (tmp_path / "keys" / "kek").exists()
    assert not key_path(tmp_path, held.admin_principal).exists()
