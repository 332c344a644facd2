"""The MCP server (issue 10, item 2): memwarden's memory as tools of an MCP host (Claude Desktop, an
IDE, an agent framework), over stdio or streamable HTTP, built with the official ``mcp`` SDK.

- :mod:`.command` — ``memwarden mcp [--transport stdio|http] [--host H] [--port N]`` (light: imports
  the server only when run);
- :mod:`.server` — the tools ``remember``, ``recall``, ``supersede``, ``forget``, ``history``, ``why``,
  thin adapters over the REST API's routes (:mod:`memwarden.api.writes`, :mod:`memwarden.api.reads`)
  and its :class:`~memwarden.api.gateway.Gateway` (token lookup, signer lookup, pre-checks), so the two
  doors cannot drift apart;
- :mod:`.http_auth` — over streamable HTTP, a request without a bearer token audited like a refused
  one (``AuthRefused``) and every 401 naming its reason code, as the REST API's;
- :mod:`.answers` — pure mappings: a route's answer or refusal to a tool result, the server token
  from the environment, which forget a ``forget`` call is, what ``why`` shows of a memory's audit.

The principal is the one of the token in ``MEMWARDEN_MCP_TOKEN`` (checked at start and on every tool
call: known, not revoked, not expired), never a tool argument. Every write is a command signed with
that principal's key from the server's key store, marked ``envelope.attributes["gateway"] = "mcp"``,
and waits for the gate's decision; a refusal is an error result (``isError``) with the reason codes.
"""
