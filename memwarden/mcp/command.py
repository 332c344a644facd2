"""``memwarden mcp``: the MCP server of a namespace (imports the SDK only when run)."""

from __future__ import annotations

from typing import Annotated, Literal

import typer


def mcp(
    transport: Annotated[str, typer.Option(help="stdio (an MCP host spawns the server) or http (streamable"
                                           " HTTP at /mcp)")] = "stdio",
    host: Annotated[str, typer.Option(help="address to listen on (http)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on (http)")] = 8090,
    namespace: Annotated[str | None, typer.Option(help="namespace (default MEMWARDEN_TOPIC_PREFIX)")] = None,
) -> None:
    """Serve memwarden's memory as MCP tools (remember, recall, supersede, forget, history, why) for
    the principal of the token in MEMWARDEN_MCP_TOKEN. Over http the server records itself in the data
    folder's ``run/`` (``mcp-<namespace>-<port>.pid``), so that ``memwarden stack down`` stops it with the
    rest and ``stack status`` lists it (newcomer trial, twenty-fourth session: ``make down`` left it running)."""
    import os

    from memwarden.cli_ledger import namespace_settings
    from memwarden.errors import MemwardenError
    from memwarden.ops.pidfiles import write_pidfile

    if transport not in ("stdio", "http"):
        raise typer.BadParameter("stdio or http", param_hint="--transport")
    kind: Literal["stdio", "http"] = "http" if transport == "http" else "stdio"
    recorded = None
    try:
        from memwarden.mcp.server import serve

        settings = namespace_settings(namespace)
        if kind == "http":
            recorded = write_pidfile(settings, f"mcp-{settings.topic_prefix}-{port}", os.getpid())
        serve(settings, kind, host, port)
    except MemwardenError as exc:
        typer.echo(f"error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", err=True)
        raise typer.Exit(1) from None
    finally:
        if recorded is not None:
            recorded.unlink(missing_ok=True)


__all__ = ["mcp"]
