"""What a run of ``memwarden eval forgetting`` measured, and whether it passed
(:mod:`memwarden.evals.forgetting_eval`): :func:`finish` (readability at the end, receipts, the keys'
departure from disk, the table per path), :func:`scan_all` (every data folder scanned for the
workload's markers, and where each canary was found) and :func:`verdict` (the goals)."""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from memwarden.evals.forgetting_eval_plan import (
    EXPIRY,
    GOAL_P99_MS,
    KEPT,
    LINEAGE,
    MODES,
    PATHS,
    REPAIR,
    TAGS,
    new_marker,
)
from memwarden.evals.forgetting_eval_probes import modes_returning, percentiles
from memwarden.evals.forgetting_eval_run import Run, receipt_complete
from memwarden.evals.forgetting_scan import namespace_topic_dirs, scan, scan_areas, scan_records, scan_rows
from memwarden.settings import Settings


def _ms(value: Any) -> float:
    if isinstance(value, datetime):
        return value.timestamp() * 1000.0
    return float(value)


def _path_table(ev: Run, forgotten_now: set[str], readable_after: set[str], receipted: set[str],
                kept_readable: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path in PATHS:
        mems = ev.of(path)
        out[path] = {"forgets": sum(f.path == path for f in ev.forgets), "memories": len(mems),
                     "forgotten": sum(m.memory_id in forgotten_now for m in mems),
                     "readable_at_end": sum(m.memory_id in readable_after for m in mems),
                     "receipts": sum(m.memory_id in receipted for m in mems)}
        timed = [f.ms for f in ev.forgets if f.path == path and f.ms is not None]
        if timed:
            out[path]["unreadable_ms_max"] = round(max(timed), 1)
            out[path]["from_call_ms_max"] = round(max(f.call_ms or 0.0 for f in ev.forgets if f.path == path), 1)
    out[LINEAGE]["via"] = [TAGS, REPAIR]
    for path, how in ev.how.items():
        out[path]["how"] = how
    kept = ev.of(KEPT)
    out[KEPT] = {"forgets": 0, "memories": len(kept), "forgotten": sum(m.memory_id in forgotten_now for m in kept),
                 "readable_at_end": sum(m.memory_id in kept_readable for m in kept), "receipts": 0}
    return out


def scan_all(ev: Run, canaries: dict[str, str]) -> dict[str, Any]:
    """Scan every area (files raw, Kafka records decompressed, the schema's rows) and a temporary
    canary file; survivals of forgotten and kept markers."""
    from memwarden.ops.kafka_files import kafka_paths

    found: dict[str, set[str]] = {}
    stats: dict[str, dict[str, int]] = {}

    def note(area: str, hits: dict[str, set[str]]) -> None:
        for token, where in hits.items():
            found.setdefault(token, set()).update(f"{area}:{w}" for w in where)

    for area, roots in scan_areas(ev.s, ev.r.worker.log_path).items():
        hits, files, size = scan(roots)
        stats[area] = {"files": files, "bytes": size}
        note(area, hits)
    hits, decoded, failed = scan_records(kafka_paths(ev.s).data)
    stats["kafka_records"] = {"segments": decoded, "unparsed": failed}
    note("kafka_records", hits)
    hits, tables, rows = scan_rows(ev.s)
    stats["postgres_rows"] = {"tables": tables, "rows": rows}
    note("postgres_rows", hits)
    with tempfile.TemporaryDirectory(prefix="mw-eval-canary-") as tmp:
        plain = new_marker()
        (Path(tmp) / "canary.txt").write_text(f"kept on purpose: {plain}\n")
        temp_hits, _, _ = scan([Path(tmp)])
    by_marker = {x: m for m in ev.mems for x in m.markers}
    survivals = {t: sorted(w)[:6] for t, w in found.items() if t in by_marker}  # not another run's tokens
    topic_dirs = namespace_topic_dirs(ev.s)
    return {
        "areas": stats, "namespace_topic_dirs": len(topic_dirs),
        "dead_letter_dirs": sum(d.startswith(ev.s.topic("deadletter") + "-") for d in topic_dirs),
        "markers": {"forgotten": sum(len(m.markers) for m in ev.mems if m.path != KEPT),
                    "kept": sum(len(m.markers) for m in ev.mems if m.path == KEPT),
                    "in_fact_values": sum(bool(m.fact_marker) for m in ev.mems)},
        "found": {"forgotten": sum(by_marker[t].path != KEPT for t in survivals),
                  "kept": sum(by_marker[t].path == KEPT for t in survivals)},
        "survivals": [{"marker": t, "of": by_marker[t].markers[t], "path": by_marker[t].path, "where": w}
                      for t, w in survivals.items()],
        "canaries": _canaries(ev.s, found, canaries, plain in temp_hits),
        "_survived_markers": set(survivals),
    }


def _canaries(settings: Settings, found: dict[str, set[str]], canaries: dict[str, str], temp: bool) -> dict[str, bool]:
    """Where each canary was found: each must be, or the scan of that area proves nothing."""
    kafka, pg = found.get(canaries["kafka"], set()), found.get(canaries["postgres"], set())

    def topic(area: str, logical: str) -> bool:
        return any(w.startswith(f"{area}:{settings.topic(logical)}-") for w in kafka)

    return {"temp_file": temp, "kafka_commands_raw": topic("kafka_segments", "commands"),
            "kafka_deadletter_raw": topic("kafka_segments", "deadletter"),
            "kafka_commands_records": topic("kafka_records", "commands"),
            "kafka_deadletter_records": topic("kafka_records", "deadletter"),
            "postgres_wal_raw": any(w.startswith("postgres_data:pg_wal/") for w in pg),
            "postgres_rows": any(w.startswith("postgres_rows:") for w in pg)}


def finish(ev: Run, wrapped: dict[str, bytes], canaries: dict[str, str]) -> dict[str, Any]:
    """Readability at the end, receipts, the keys' departure from disk."""
    from memwarden.stores.pg import connect

    forgotten = [m for m in ev.mems if m.path != KEPT]
    kept = [m for m in ev.mems if m.path == KEPT]
    ev.say("final reads: every forgotten memory in every mode, every kept one")
    readable_after = {m.memory_id for m in forgotten if modes_returning(ev.client, m)}
    readable_after |= {m.memory_id for f in ev.forgets for m in f.late} | {m.memory_id for m in ev.expiry_late}
    kept_readable = {m.memory_id for m in kept if len(modes_returning(ev.client, m)) == len(MODES)}
    ev.say("waiting for the erasure receipts")
    complete, receipts = ev.receipts(forgotten)
    receipted = {m.memory_id for m in forgotten if receipt_complete(m, receipts, [])}
    with connect(ev.s) as conn:
        gone = {str(r[0]) for r in conn.execute("SELECT memory_id FROM gate_memories WHERE forgotten").fetchall()}
    ev.say(f"waiting for the shredded keys to leave the keys topic's files (lag {ev.s.keys_compaction_lag_s} s)")
    keys = ev.keys_leave_disk(forgotten, kept, wrapped)
    expiring = {m.memory_id: _ms(m.args["expires_at"]) for m in ev.of(EXPIRY)}
    retention_ms = [_ms(r["forget_decided_at"]) - expiring[r["memory_id"]] for r in receipts
                    if r["memory_id"] in expiring]
    expected = {f.command_id: sorted(m.memory_id for m in f.expected) for f in ev.forgets}
    mismatched = [{"path": f.path, "outcome": f.outcome, "expected": len(expected[f.command_id]),
                   "forgotten": len(f.forgotten_ids)} for f in ev.forgets
                  if sorted(f.forgotten_ids) != expected[f.command_id] or f.outcome != "ACCEPTED"]
    latencies = [f.ms for f in ev.forgets if f.ms is not None]
    from_call = [f.call_ms for f in ev.forgets if f.call_ms is not None]
    paths = _path_table(ev, gone, readable_after, receipted, kept_readable)
    paths[EXPIRY]["forgets"] = len({r["command_id"] for r in receipts if r["memory_id"] in expiring})
    paths[EXPIRY]["by"] = "the gate worker's retention sweep (ForgetMatching expired_before, root admin)"
    return {
        "namespace": ev.s.topic_prefix,
        "readable_after_forget": len(readable_after),
        "receipts_complete": round(complete / len(forgotten), 4) if forgotten else 1.0,
        "legitimate_kept": round(len(kept_readable) / len(kept), 4) if kept else 1.0,
        "forget_to_unreadable_ms": {**percentiles(latencies), "unmeasured": sum(f.ms is None for f in ev.forgets)},
        "call_to_unreadable_ms": percentiles(from_call),
        "paths": paths,
        "decisions_not_as_expected": mismatched,
        "not_readable_before_forget": sum(not m.readable_before for m in ev.mems),
        "legal_hold": ev.hold,
        "expiry": {"n": len(ev.of(EXPIRY)), **ev.expiry, "readable_long_after_expiry": len(ev.expiry_late),
                   "retention_forget_after_expires_at_ms": percentiles(retention_ms)},
        "keys": keys,
        "maintenance": {"keys": f"waited for compaction (keys topic lag {ev.s.keys_compaction_lag_s} s, README bound"
                                " about 2 lags plus a few seconds)",
                        "postgres": "none: the README documents no WAL maintenance (Postgres only receives sealed"
                                    " text); no CHECKPOINT, VACUUM or pg_switch_wal was run"},
    }


def verdict(result: dict[str, Any], scanned: dict[str, Any], memories: int, settings: Settings,
             elapsed_s: float) -> dict[str, Any]:
    """The goals of the evaluation checked on ``result`` and ``scanned``, with the headline figures
    (memories, plaintext survivals, the scan, the goals, passed, elapsed seconds) to add to the result."""
    canaries = scanned["canaries"]
    p99 = result["forget_to_unreadable_ms"]["p99"]
    survivals = scanned["found"]["forgotten"] + scanned["found"]["kept"]
    keys = result["keys"]
    goals = {
        "plaintext_survivals == 0": survivals == 0,
        "readable_after_forget == 0": result["readable_after_forget"] == 0,
        "receipts_complete == 1.0": result["receipts_complete"] == 1.0,
        "legitimate_kept == 1.0": result["legitimate_kept"] == 1.0,
        f"forget_to_unreadable p99 <= {GOAL_P99_MS:.0f} ms": p99 is not None and p99 <= GOAL_P99_MS
        and result["forget_to_unreadable_ms"]["unmeasured"] == 0,
        "canaries found (scan not vacuous)": all(canaries.values()),
        "every memory readable before its forget": result["not_readable_before_forget"] == 0
        and bool(result["expiry"].get("readable_just_before")),
        "held memory preserved until the lift": result["legal_hold"].get("forget_outcome") == "DEFERRED"
        and bool(result["legal_hold"].get("readable_while_held")),
        "shredded keys left the disk within the bound": keys["forgotten_keys_on_disk"] == 0
        and keys["kept_keys_on_disk"] == keys["kept_keys"],
        "every forget decided as planned": not result["decisions_not_as_expected"],
    }
    return {"memories": memories, "plaintext_survivals": survivals, "scan": scanned, "goals": goals,
            "passed": all(goals.values()), "elapsed_s": round(elapsed_s, 1)}
