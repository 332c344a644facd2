"""The REST API (issue 10): a FastAPI service over a namespace's running worker and the client, for
agents in any language. ``memwarden serve`` runs it (:mod:`.serve`); OpenAPI at ``/openapi.json``,
docs at ``/docs``.

- :mod:`.app` — the application: routes, error handlers, the body limit;
- :mod:`.gateway` — what every route uses: the client, the token and signer lookup, the audit of refusals;
- :mod:`.auth` — the bearer-token dependency;
- :mod:`.bodies` — request bodies (unknown fields refused, limits);
- :mod:`.writes` — records, supersessions, forgets and grants (202, or the decision with ``?wait=true``);
- :mod:`.reads` — recall, history, decisions, audit, health;
- :mod:`.errors` — one error shape ``{"error", "code", "field"}``, no stack traces.

Every write is still a signed command decided by the gate (signed here with the principal's key from
the server's key store, ``envelope.attributes["gateway"] = "rest"``); every read still goes through the
worker's filtered, audited read API. The pure rules are in :mod:`memwarden.commands.tokens`,
:mod:`memwarden.commands.gateway_status` and :mod:`memwarden.commands.gateway_checks`.
"""
