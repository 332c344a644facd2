"""Where the CPU of an ingest goes, and what it allows: issue 11 part 1 (``ingest_to_embed_ratio`` >= 0.8).

Runs ``memwarden eval locomo`` (stack up first: ``memwarden stack up``) and reads, from ``/proc``, the
CPU seconds (user + system) each process class spends between the first publish and the moment every
turn is recallable: the eval process (the client: encryption, signing, publishing), the namespace's
worker (gate, pre-embedding, projectors, read API), the Kafka broker and PostgreSQL. It then states
the budget the host gives: on ``cores`` cores a wall time of ``t`` seconds holds at most ``cores * t``
CPU seconds, and the raw embedding alone costs about ``cores * turns / embed_per_s`` (the raw rate is
measured with every core busy). So

* ``ratio_bound_at_this_cpu`` = the ratio if the measured CPU were spread perfectly over the cores;
* ``non_embedding_cpu_budget_s_for_0_8`` = the CPU everything but embedding may use for a ratio of 0.8.

Usage: ``python bench/ingest_cpu_budget.py [--conversations conv-26] [--json]`` (one JSON object).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo7.json"
TICK = os.sysconf("SC_CLK_TCK")


def _classify(pid: int, ppid: int, cmd: str, me: int) -> str | None:
    if pid == me:
        return "client"
    if "java" in cmd and "kafka" in cmd.lower():
        return "kafka_broker"
    if cmd.startswith("postgres"):
        return "postgres"
    if ppid == me:
        return "worker"
    return None


def cpu_by_class() -> dict[tuple[int, str], float]:
    """CPU seconds so far of every process of a known class, by (pid, class)."""
    out: dict[tuple[int, str], float] = {}
    me = os.getpid()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        cls = _classify(int(d.name), int(fields[1]), cmd, me)
        if cls is not None:
            out[(int(d.name), cls)] = (int(fields[11]) + int(fields[12])) / TICK
    return out


def measure(data: Path, conversations: Sequence[str]) -> dict[str, Any]:
    """One ``eval locomo`` run with the ingest window's CPU by process class."""
    import memwarden.evals.locomo as locomo
    import memwarden.ops.progress as progress
    from memwarden.settings import Settings

    marks: dict[str, tuple[float, dict[tuple[int, str], float]]] = {}
    ingest, wait = locomo.ingest, progress.wait_caught_up

    def timed_ingest(*args: Any, **kwargs: Any) -> float:
        marks["start"] = (time.perf_counter(), cpu_by_class())
        return ingest(*args, **kwargs)

    def timed_wait(*args: Any, **kwargs: Any) -> Any:
        lag = wait(*args, **kwargs)
        if "start" in marks and "end" not in marks:
            marks["end"] = (time.perf_counter(), cpu_by_class())
        return lag

    locomo.ingest, progress.wait_caught_up = timed_ingest, timed_wait  # type: ignore[assignment]
    try:
        result = locomo.run_locomo(Settings(), data, list(conversations), (10,))
    finally:
        locomo.ingest, progress.wait_caught_up = ingest, wait  # type: ignore[assignment]
    (t0, before), (t1, after) = marks["start"], marks["end"]
    cpu: dict[str, float] = {}
    for key, seconds in after.items():
        cpu[key[1]] = cpu.get(key[1], 0.0) + seconds - before.get(key, 0.0)
    cores = len(os.sched_getaffinity(0))
    wall, turns, embed = t1 - t0, int(result["turns"]), float(result["embed_per_s"])
    total = sum(cpu.values())
    embedding = cores * turns / embed
    return {
        "conversations": list(conversations), "turns": turns, "cores": cores, "wall_s": round(wall, 2),
        "ingest_per_s": round(turns / wall, 1), "embed_per_s": round(embed, 1),
        "ingest_to_embed_ratio": result["ingest_to_embed_ratio"],
        "cpu_s": {k: round(v, 2) for k, v in sorted(cpu.items())}, "cpu_total_s": round(total, 2),
        "host_busy_share": round(total / (cores * wall), 3),
        "raw_embedding_cpu_s": round(embedding, 2),
        "non_embedding_cpu_s": round(total - embedding, 2),
        "ratio_bound_at_this_cpu": round(turns / (total / cores) / embed, 3),
        "non_embedding_cpu_budget_s_for_0_8": round(cores * turns / (0.8 * embed) - embedding, 2),
        "recall_at_10": result["recall_at_k"]["10"]["all"],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversations", nargs="+", default=["conv-26"])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    out = measure(args.data, args.conversations)
    if args.json:
        print(json.dumps(out))
    else:
        for key, value in out.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
