"""Enrolment: generate keys for principals, register them through an admin, wait for the gate."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from memwarden.commands.model import PrincipalKind
from memwarden.commands.signing import Signer
from memwarden.errors import Refused
from memwarden.producers.client import MemwardenClient


def enroll(client: MemwardenClient, admin: Signer, principals: Iterable[tuple[str, PrincipalKind | str, Sequence[str]]],
           attributes: Mapping[str, Mapping[str, str]] | None = None, timeout_s: float = 60.0) -> dict[str, Signer]:
    """Generate keys for ``(principal_id, kind, roles)`` items, register them through ``admin`` and wait
    for the gate to decide; returns the signers (also added to ``client``). Raises
    ``memwarden.errors.Refused`` (``codes``: ``PRINCIPAL_EXISTS`` for a principal registered before ...) for
    the first registration not accepted, ``StackUnavailable`` when the gate does not decide in
    ``timeout_s`` seconds."""
    client.add_signer(admin)
    signers: dict[str, Signer] = {}
    receipts = []
    for principal_id, kind, roles in principals:
        signer = Signer.generate(principal_id)
        signers[principal_id] = signer
        client.add_signer(signer)
        receipts.append(client.register_principal(
            principal_id, by=admin.principal_id, kind=kind, roles=roles,
            attributes=(attributes or {}).get(principal_id), public_key=signer.public_key, key_id=signer.key_id,
            wait=False))
    decided = client.decided([r.command_id for r in receipts], timeout_s)
    for r in receipts:  # the first refusal, as a waited-for governance call raises it (codes and reasons)
        if decided[r.command_id]["outcome"] != "ACCEPTED":
            raise Refused.of(decided[r.command_id], r.command_id)
    return signers
