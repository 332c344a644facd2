"""JSON forms of the registry records and grants the gate stores (``gate_principals.record``,
``grants.record``): every field, enums as their values, times in epoch ms, public keys base64."""

from __future__ import annotations

import base64
from typing import Any

from memwarden.commands.model import PrincipalKind
from memwarden.commands.principals import KeyRecord, PrincipalRecord
from memwarden.commands.readmodel.permission import Grant


def principal_to_json(p: PrincipalRecord) -> dict[str, Any]:
    """JSON form of a registry record (public keys base64)."""
    return {
        "principal_id": p.principal_id, "kind": p.kind.value, "roles": sorted(p.roles),
        "attributes": dict(p.attributes),
        "keys": [{"key_id": k.key_id, "public_key": base64.b64encode(k.public_key).decode(),
                  "valid_from_ms": k.valid_from_ms, "valid_to_ms": k.valid_to_ms, "revoked_at_ms": k.revoked_at_ms}
                 for k in p.keys],
    }


def principal_from_json(d: dict[str, Any]) -> PrincipalRecord:
    """Inverse of :func:`principal_to_json`."""
    return PrincipalRecord(
        d["principal_id"], PrincipalKind(d["kind"]), frozenset(d["roles"]), dict(d["attributes"]),
        tuple(KeyRecord(k["key_id"], base64.b64decode(k["public_key"]), k["valid_from_ms"], k["valid_to_ms"],
                        k["revoked_at_ms"]) for k in d["keys"]))


def grant_to_json(g: Grant) -> dict[str, Any]:
    """JSON form of a grant (every field; enums as their names, times in epoch ms)."""
    return {
        "grant_id": g.grant_id, "grantee": g.grantee, "rights": sorted(r.value for r in g.rights),
        "scopes": list(g.scopes), "subjects": list(g.subjects), "purposes": list(g.purposes),
        "store_kinds": [k.value for k in g.store_kinds], "sensitivity_ceiling": g.sensitivity_ceiling.value,
        "valid_from_ms": g.valid_from_ms, "valid_to_ms": g.valid_to_ms, "revoked_at_ms": g.revoked_at_ms,
        "granted_by": g.granted_by, "relationship": g.relationship,
    }


def grant_from_json(d: dict[str, Any]) -> Grant:
    """Inverse of :func:`grant_to_json`."""
    return Grant(**d)
