"""The read model's rules, side by side (SSGM Eq. 3 and Eq. 5; seed 004 "principal-aware isolation").

- :mod:`.filters` — the filter tree and its one evaluator (the test oracle);
- :mod:`.payload` — the payload schema of the derived index and how events change it;
- :mod:`.permission` — ABAC: grants, read context, ``may_read`` / ``may_write``, the permission filter;
- :mod:`.freshness` — the Weibull decay (Eq. 3) and its horizon;
- :mod:`.read_filter` — the Eq. 5 admissibility filter pushed into the search;
- :mod:`.sql` — the same rules as SQL over ``memory_versions`` (candidate verification);
- :mod:`.query` — recall arguments, their checks and the result row;
- :mod:`.usage` — batching of uses into ``MemoryUsed``.

Pure: the domain, the projections and the read API all import it downward.
"""
