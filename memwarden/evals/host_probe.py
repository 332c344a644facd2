"""How fast the host is right now: a fixed CPU workload timed in milliseconds.

On the shared 2-core machines these benchmarks run on, identical runs of ``memwarden bench recall``
differ by up to half (p50 12.9 against 19.3 ms in one hour, 2026-12-05) and every stage of the call
(Postgres, the engine, the embedding) slows down together, while the load average and the CPU steal
counter stay flat. The probe makes that visible in the JSON beside the figures: a run whose probe is
30 % slower ran on a 30 % slower host. It is not a benchmark of memwarden and is never compared
across machines.
"""

from __future__ import annotations

import hashlib
import statistics
import time

#: Bytes hashed per round (C code, one core) and pure-Python additions per round (the interpreter).
HASH_BYTES = 4 * 1024 * 1024
LOOP = 200_000


def host_probe_ms(rounds: int = 5) -> float:
    """Median wall time in ms of ``rounds`` rounds of the fixed workload (SHA-256 over
    :data:`HASH_BYTES` zero bytes, then :data:`LOOP` integer additions in Python). Raises
    ``ValueError`` when ``rounds < 1``."""
    if rounds < 1:
        raise ValueError("rounds: must be >= 1")
    data = bytes(HASH_BYTES)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        hashlib.sha256(data).digest()
        total = 0
        for i in range(LOOP):
            total += i
        times.append((time.perf_counter() - t0) * 1000.0)
    return round(statistics.median(times), 2)
