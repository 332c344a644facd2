"""The read API: a small app of its own over the read side, served by the projector worker.

- :mod:`.requests` — request parsing (a malformed request is a 400 naming the field);
- :mod:`.audit` — the read-audit record (ids only) and ``MemoryUsed`` batches;
- :mod:`.service` — authentication, recall, audit and usage, decision lookups: framework-free;
- :mod:`.views` — the HTTP routes on the worker's web server.
"""
