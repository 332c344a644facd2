"""memwarden: governed long-term memory for LLM agents on an Apache Kafka ledger.

``from memwarden import connect; client = connect("user:alice")`` gives a connected
:class:`~memwarden.producers.client.MemwardenClient` (settings from the environment, alice's signing
key from the local keystore); ``connect_async`` the same as an
:class:`~memwarden.producers.async_client.AsyncMemwardenClient` for asyncio. Imported lazily:
``import memwarden`` loads no client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memwarden.errors import Refused
    from memwarden.producers.async_client import AsyncMemwardenClient, connect_async
    from memwarden.producers.client import MemwardenClient, connect

__version__ = "0.1.0"
__all__ = ["AsyncMemwardenClient", "MemwardenClient", "Refused", "__version__", "connect", "connect_async"]


def __getattr__(name: str) -> Any:
    if name in ("connect", "MemwardenClient"):
        from memwarden.producers import client

        return getattr(client, name)
    if name in ("connect_async", "AsyncMemwardenClient"):
        from memwarden.producers import async_client

        return getattr(async_client, name)
    if name == "Refused":
        from memwarden.errors import Refused

        return Refused
    raise AttributeError(f"module 'memwarden' has no attribute {name!r}")
