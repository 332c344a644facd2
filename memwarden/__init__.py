"""memwarden: governed long-term memory for LLM agents on an Apache Kafka ledger.

``from memwarden import connect; client = connect("user:alice")`` gives a connected
:class:`~memwarden.producers.client.MemwardenClient` (settings from the environment, alice's signing
key from the local keystore). Imported lazily: ``import memwarden`` loads no client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memwarden.errors import Refused
    from memwarden.producers.client import MemwardenClient, connect

__version__ = "0.1.0"
__all__ = ["MemwardenClient", "Refused", "__version__", "connect"]


def __getattr__(name: str) -> Any:
    if name in ("connect", "MemwardenClient"):
        from memwarden.producers import client

        return getattr(client, name)
    if name == "Refused":
        from memwarden.errors import Refused

        return Refused
    raise AttributeError(f"module 'memwarden' has no attribute {name!r}")
