"""``memwarden eval forgetting`` (issue 14 "done when"): every way a memory is forgotten, through the
real pipeline, and whether anything of it is left anywhere.

In a fresh namespace whose keys topic compacts within :data:`LAG_S` seconds and whose gate worker
sweeps retention every :data:`RETENTION_S` second, five users record a mixed workload. Every text
carries a unique random marker (``qx`` + 20 characters + ``zq``); scopes, tags and source references
are shared between owners, so a selector also matches memories its issuer may not forget (they must
stay); two derived records (model inferences whose ``quoted_span`` quotes their source's marker, as
attribution requires of a derivative) hang below memories forgotten by selector and by repair. Then
every path forgets, one forget at a time:

* ``expiry``: memories whose ``expires_at`` passes (a few seconds after they are recorded): the read
  filter hides them from then on, the gate worker's retention sweep forgets them;
* ``id``: ``ForgetMemory`` by the owner;
* ``selector:query``: ``ForgetMatching(query=<marker>)`` (resolved by the client into ids);
* ``selector:tags`` / ``selector:scope`` / ``selector:source_ref``: ``ForgetMatching`` by the owner;
* ``subject``: ``ForgetSubject`` (the right to erasure);
* ``legal_hold``: a forget of a held memory waits (``DEFERRED``, still readable); the lift carries it out;
* ``repair``: :func:`memwarden.repair.repair` of the tainted source reference, across owners (where
  that module is absent: the same ``ForgetMatching(source_references=...)`` signed by the root admin);
* ``lineage``: the derived records, forgotten with their sources (cascade);
* ``pruning``: :func:`memwarden.pruning.prune` with theta 1 and no grace over the EVENT store kind:
  every EVENT memory of the workload is prunable at once (the freshness decay is not what is measured
  here); every other memory is PROFILE, which pruning archives and never forgets. Where that module
  is absent the path is reported "not built", with no memory.

Measured and checked:

* ``forget_to_unreadable_ms``: from the moment the forget is published (the broker timestamp of the
  command, which the producer sets when it sends it) to the first moment no recall in any mode
  (hybrid, dense, lexical), queried by the owner with the memories' own words, returns any memory it
  forgets (probed in rounds from the call on, :func:`still_readable`; for the hold, from the lift).
  ``call_to_unreadable_ms`` counts from the call instead (for ``selector:query`` it includes the
  client's recalls that resolve the query; for repair and pruning, the command's own start-up). A
  forget whose memories are still readable after :data:`UNREADABLE_TIMEOUT_S`, or that failed, is
  ``unmeasured``;
* ``readable_after_forget``: forgotten memories any mode still returns, each queried alone with its
  own text, at the end (and those that never became unreadable within the timeout);
* ``receipts_complete``: share of forgotten memories with an ``ErasureReceipted`` event of their
  forget, verified, listing every store (:data:`REQUIRED_STORES`), their data keys and tombstones,
  and no marker;
* ``legitimate_kept``: share of never-forgotten memories every mode still returns to their owner;
* then the documented maintenance: the forgotten memories' wrapped data keys must leave the keys
  topic's segment files within about 2 × the compaction lag (README "When the key leaves the broker's
  disk"), while the kept memories' wrapped keys must still be found there (the key scan works). The
  README documents no Postgres maintenance (Postgres only ever receives sealed text), so none is run:
  no CHECKPOINT, VACUUM or ``pg_switch_wal``;
* ``plaintext_survivals``: markers of forgotten AND of kept memories found in any file of the Kafka
  data folder (every topic of the namespace, dead letters included), the Kafka logs, the Postgres
  data folder (heap and WAL) and log, the index shard, the worker's log and the worker's state
  folder, byte for byte (holes of sparse files skipped: they read as zeros); also in every Kafka
  record decompressed (lz4 can split a marker inside a batch) and in every row of the namespace's
  schema read through SQL (TOAST can compress one). A survival found in a command's
  ``source.quoted_span`` names that command. Canaries prove the scan is not vacuous: a marker in a
  plain file under a temporary folder, a marker published raw to the namespace's commands topic
  (dead-lettered, so in two topics) and a marker inserted in a table of the namespace's schema (in
  the WAL at commit) must each be found, raw and decoded.

The parts: the workload (:mod:`memwarden.evals.forgetting_eval_plan`), the probes
(:mod:`memwarden.evals.forgetting_eval_probes`), the run in its namespace
(:mod:`memwarden.evals.forgetting_eval_run`) and the results and goals
(:mod:`memwarden.evals.forgetting_eval_score`); this module runs them in order and renders the result.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from rich.console import Console
from rich.table import Table

from memwarden.evals.forgetting_eval_plan import EXPIRY, LAG_S, PATHS, RETENTION_S, Cast, plan, prune_command
from memwarden.evals.forgetting_eval_run import Run
from memwarden.evals.forgetting_eval_score import finish, scan_all, verdict
from memwarden.evals.forgetting_scan import quoted_in_commands, wrapped_keys
from memwarden.settings import Settings

_NAMES = ("ana", "ben", "cleo", "dev", "eli")


def run_forgetting(base: Settings, memories: int = 60, keep: bool = False, progress: bool = True,
                   lag_s: float = LAG_S) -> dict[str, Any]:
    """Run the evaluation (see the module doc); returns the JSON-ready result.

    Raises ``StackUnavailable`` when the stack is down, ``ValueError`` for a workload size out of
    range, ``MemwardenError`` when the gate refuses the planned workload."""
    from memwarden.evals.harness import eval_namespace
    from memwarden.keystore import admin_signer
    from memwarden.ops.progress import wait_caught_up
    from memwarden.producers.client import MemwardenClient
    from memwarden.producers.enroll import enroll

    cast = Cast(uuid.uuid4().hex[:6])
    mems = plan(memories, cast, pruning=prune_command() is not None)
    settings = base.model_copy(update={"keys_compaction_lag_s": lag_s, "retention_interval_s": RETENTION_S})
    began = time.monotonic()
    with eval_namespace(settings, "forget", keep, progress) as run, MemwardenClient(run.settings) as client:
        ev = Run(run, client, mems, cast)
        enroll(client, admin_signer(run.settings), [(cast.who(n), "USER", ()) for n in _NAMES])
        ev.say(f"recording {len(mems)} memories of {len(_NAMES)} users")
        ev.record_all()
        wrapped = wrapped_keys(run.settings)
        ev.say(f"expiry: {len(ev.of(EXPIRY))} memories readable in every mode, then past expires_at")
        ev.check_readable(ev.of(EXPIRY))
        ev.expire()
        ev.say("checking every other memory is readable in every mode")
        ev.check_readable([m for m in mems if m.path != EXPIRY])
        ev.say("forgetting by id, query, tags, scope, source reference, subject, legal hold, repair")
        ev.forget_every_path()
        canaries = ev.plant_canaries()
        wait_caught_up(run.settings, alive=run.worker.alive)
        result = finish(ev, wrapped, canaries)
        ev.say("stopping the worker, scanning every data folder")
        run.worker.stop()
        scanned = scan_all(ev, canaries)
        survived = scanned.pop("_survived_markers")
        quoted = quoted_in_commands(run.settings, survived) if survived else {}
    for found in scanned["survivals"]:
        found["in_quoted_span_of_command"] = quoted.get(found["marker"])
    result.update(verdict(result, scanned, memories, run.settings, time.monotonic() - began))
    return result


def render(result: dict[str, Any], console: Console) -> None:
    """A short table per path and the headline figures."""
    table = Table(title=f"forgetting, {result['memories']} memories ({result['namespace']})")
    keys = ("forgets", "memories", "forgotten", "readable_at_end", "receipts", "unreadable_ms_max")
    for col in ("path", *keys):
        table.add_column(col.replace("_", " "))
    for path, row in result["paths"].items():
        table.add_row(path, *(str(row.get(k, "-")) for k in keys))
    console.print(table)
    lat = result["forget_to_unreadable_ms"]
    console.print(f"forget → unreadable ms: p50 {lat['p50']}, p99 {lat['p99']}, max {lat['max']} (n {lat['n']})")
    for key in ("plaintext_survivals", "readable_after_forget", "receipts_complete", "legitimate_kept"):
        console.print(f"{key}: {result[key]}")
    exp, keys = result["expiry"], result["keys"]
    console.print(f"expiry: unreadable {exp.get('unreadable_after_expires_at_ms')} ms after expires_at, forgotten by"
                  f" retention {exp['retention_forget_after_expires_at_ms']['max']} ms after it")
    console.print(f"keys: {keys['forgotten_keys']} shredded keys off the keys topic's files"
                  f" {keys['left_disk_s_after_last_forget']} s after the last forget (bound {keys['bound_s']} s);"
                  f" {keys['kept_keys_on_disk']} of {keys['kept_keys']} live keys found")
    for found in result["scan"]["survivals"]:
        areas = sorted({w.split(":", 1)[0] for w in found["where"]})
        console.print(f"survival: {found['of']} of a {found['path']} memory in {', '.join(areas)}"
                      + (f" (quoted_span of command {found['in_quoted_span_of_command']})"
                         if found.get("in_quoted_span_of_command") else ""))
    for goal, ok in result["goals"].items():
        console.print(f"{'ok  ' if ok else 'FAIL'} {goal}")


__all__ = ["PATHS", "render", "run_forgetting"]
