"""Local storage of principals' Ed25519 signing keys, and the registry's trust anchor.

A key file holds ``<key_id>\\n<base64 raw private key>\\n`` and is created atomically with mode 0600,
under ``data_dir/keys/principals/``. The root admin's key (``Settings.admin_principal``) is the
trust anchor: the gate trusts its public key (``Settings.admin_public_key``, or the local key file)
and every other principal is registered by an admin through ``RegisterPrincipal``.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
from pathlib import Path
from typing import Any

from memwarden.commands.model import PrincipalKind, to_avro
from memwarden.commands.principals import ADMIN_ROLE, KeyRecord, PrincipalRecord
from memwarden.commands.signing import Signer
from memwarden.crypto import load_kek, uninitialised
from memwarden.errors import MemwardenError
from memwarden.schemas.codec import AvroCodec
from memwarden.settings import Settings


def key_path(data_dir: Path, principal_id: str) -> Path:
    """File of ``principal_id``'s signing key (the id made file-name safe)."""
    return data_dir / "keys" / "principals" / (re.sub(r"[^A-Za-z0-9._-]", "_", principal_id) + ".ed25519")


def load_or_create_signer(path: Path, principal_id: str) -> Signer:
    """The signer stored at ``path``, created once (0600, atomic) if absent.

    Raises ``MemwardenError`` when the file exists but is malformed.
    """
    if not path.exists():
        fresh = Signer.generate(principal_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}-{os.getpid()}-{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(f"{fresh.key_id}\n{base64.b64encode(fresh.private_bytes()).decode()}\n")
        try:
            os.link(tmp, path)
        except FileExistsError:  # another process won the race; use its key
            pass
        finally:
            tmp.unlink()
    try:
        key_id, raw = path.read_text().splitlines()  # the key id on its own line, whatever it holds
        return Signer.from_private_bytes(principal_id, key_id, base64.b64decode(raw))
    except ValueError as exc:
        raise MemwardenError(f"{path}: not a memwarden signing key file ({exc})") from None


def signed_command(codec: AvroCodec, command: Any, signer: Signer) -> bytes:
    """Single-object bytes of ``command`` with ``envelope.signature`` by ``signer`` over the
    canonical unsigned bytes (SSGM Principle 2; what the gate's ``check_signature`` verifies)."""
    record = to_avro(command)
    unsigned = codec.encode(command.kind, record)
    record["envelope"]["signature"] = {"key_id": signer.key_id, "algorithm": "Ed25519", "value": signer.sign(unsigned)}
    return codec.encode(command.kind, record)


def local_signer(settings: Settings, principal_id: str) -> Signer | None:
    """``principal_id``'s signer when its key file is in this host's key folder, else ``None`` (never creates one:
    what ``memwarden principal register`` wrote)."""
    path = key_path(settings.data_dir, principal_id)
    return load_or_create_signer(path, principal_id) if path.exists() else None


def local_admin_signer(settings: Settings) -> Signer | None:
    """The root admin's signer when its key file is here, else ``None`` (never creates one)."""
    return local_signer(settings, settings.admin_principal)


def admin_signer(settings: Settings, create: bool = False) -> Signer:
    """The root admin's signer from the local key file; created when missing only with ``create`` (the stack
    and the worker's trust anchor, which own the data folder).

    Raises ``MemwardenError`` when the file is missing and ``create`` is false (naming the data folder: a
    script run from another directory must not make a root key the gate does not trust), or malformed."""
    path = key_path(settings.data_dir, settings.admin_principal)
    if not create and not path.exists():
        raise MemwardenError(uninitialised(f"root admin key ({settings.admin_principal})", path, settings.data_dir))
    return load_or_create_signer(path, settings.admin_principal)


def initialise(settings: Settings) -> None:
    """Create the data folder's key material if missing (``memwarden stack up``): the key-encryption key
    (unless ``MEMWARDEN_KEK`` gives it) and the root admin's key (unless ``MEMWARDEN_ADMIN_PUBLIC_KEY`` names
    a key held elsewhere)."""
    load_kek(settings.kek, settings.data_dir, create=True)
    if not settings.admin_public_key:
        admin_signer(settings, create=True)


def trust_anchor(settings: Settings) -> PrincipalRecord:
    """The root admin as a registry record: SERVICE kind, ``admin`` role, its public key valid from
    the epoch. From ``Settings.admin_public_key`` when set, else from the local key file."""
    if settings.admin_public_key:
        try:
            public = base64.b64decode(settings.admin_public_key, validate=True)
        except ValueError:
            raise MemwardenError("MEMWARDEN_ADMIN_PUBLIC_KEY: not base64") from None
        key_id = f"{settings.admin_principal}#anchor"
    else:
        signer = admin_signer(settings, create=True)
        public, key_id = signer.public_key, signer.key_id
    if len(public) != 32:
        raise MemwardenError("admin public key: must be 32 raw bytes")
    return PrincipalRecord(settings.admin_principal, PrincipalKind.SERVICE, frozenset({ADMIN_ROLE}), {},
                           (KeyRecord(key_id, public, 0),))
