"""``memwarden`` command line: the local stack, workers, schema migrations and evaluations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from memwarden.cli_bench import bench_app
from memwarden.cli_ledger import fail
from memwarden.errors import MemwardenError
from memwarden.settings import Settings

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
stack_app = typer.Typer(no_args_is_help=True, help="The local stack: Kafka (KRaft) and PostgreSQL.")
eval_app = typer.Typer(no_args_is_help=True, help="Evaluations on real data.")
app.add_typer(stack_app, name="stack")
app.add_typer(eval_app, name="eval")
audit_app = typer.Typer(no_args_is_help=True, help="Audit by ledger position: records, lineage, principals, reads.")
app.add_typer(audit_app, name="audit")
principal_app = typer.Typer(no_args_is_help=True, help="Principals and their signing keys (issue 3).")
app.add_typer(principal_app, name="principal")
review_app = typer.Typer(no_args_is_help=True, help="Quarantine review: list, show, approve, reject.")
app.add_typer(review_app, name="review")
app.add_typer(bench_app, name="bench")
console = Console(stderr=True)


@stack_app.command("up")
def stack_up(worker: Annotated[bool, typer.Option(
        "--worker", help="also run the namespace's worker, supervised (restarted whenever it exits non-zero)")]
        = False,
        api: Annotated[bool, typer.Option("--api", help="also run the REST API (implies --worker)")] = False,
        api_port: Annotated[int, typer.Option(help="port of the REST API on 127.0.0.1")] = 8080) -> None:
    """Start Kafka and PostgreSQL (installing the Kafka jars with Maven on first use); idempotent."""
    from memwarden.ops import stack

    try:
        settings = Settings()
        stack.up(settings)
        if worker or api:
            console.print(stack.start_supervised_worker(settings))
        if api:
            console.print(stack.start_api(settings, port=api_port))
    except MemwardenError as exc:
        fail(exc)
    stack_status()


@stack_app.command("down")
def stack_down(
    workers: Annotated[bool, typer.Option("--workers", help="stop only the workers (with their supervisors), the "
                                          "REST gateway and the MCP server; Kafka and PostgreSQL keep running")]
    = False,
) -> None:
    """Stop workers, Kafka and PostgreSQL; leaves no process of ours running (``--workers``: the workers, REST
    and MCP only, e.g. before ``state digest`` or a rebuild)."""
    from memwarden.ops import stack

    if workers:
        stopped = stack.stop_workers(Settings())
        console.print(f"stopped {', '.join(stopped)}" if stopped else "no worker was running")
        return
    stack.down(Settings())
    console.print("stack down")


@stack_app.command("status")
def stack_status() -> None:
    """Show each service: running, pid, address; for each live worker its readiness (/ready) and the
    state of its agents. Workers that are gone are forgotten."""
    from memwarden.ops import stack

    table = Table("service", "running", "ready", "pid", "address", "agents")
    for name, info in stack.status(Settings()).items():
        ready = info.get("ready")
        agents = ", ".join(f"{a}: {v.get('state')}" for a, v in (info.get("agents") or {}).items())
        table.add_row(name, "yes" if info.get("running") else "no",
                      "-" if ready is None else ("yes" if ready else "no"), str(info.get("pid") or "-"),
                      str(info.get("address") or "-"), agents or "-")
    Console().print(table)


@app.command("worker")
def worker(role: Annotated[list[str] | None, typer.Option(help="gate and/or projector (default both)")] = None,
           supervise: Annotated[bool, typer.Option(help="run it as a child and restart it whenever it exits"
                                                        " non-zero (backoff 1 s doubling to 60 s)")] = False) -> None:
    """Run a Faust worker (gate, projector and the read endpoint) in the foreground."""
    from memwarden.processors.run import ROLES, run_worker

    roles = tuple(role or ROLES)
    if supervise:
        from memwarden.processors.run import run_supervised

        try:
            raise typer.Exit(run_supervised(Settings(), roles))
        except (MemwardenError, ValueError) as exc:
            fail(exc)
    try:
        run_worker(Settings(), roles)
    except (MemwardenError, ValueError) as exc:
        fail(exc)


@app.command("migrate")
def migrate() -> None:
    """Create the namespace's Postgres schema and topics."""
    from memwarden.ops.topics import ensure_topics
    from memwarden.stores.pg import migrate as run

    settings = Settings()
    console.print(f"migrations applied: {run(settings)}; topics created: {ensure_topics(settings)}")


@eval_app.command("locomo")
def eval_locomo(
    data: Annotated[Path, typer.Option(help="LoCoMo JSON file (e.g. ../shared/data/locomo/locomo7.json)")],
    conversations: Annotated[str | None, typer.Option(help="comma-separated sample ids, e.g. conv-26")] = None,
    k: Annotated[str, typer.Option(help="comma-separated cut-offs")] = "5,10",
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    keep: Annotated[bool, typer.Option(help="keep the evaluation namespace (topics, schema, index)")] = False,
) -> None:
    """Ingest LoCoMo conversations as RecordMemory commands and score evidence recall@k."""
    from memwarden.evals.locomo import render, run_locomo

    try:
        ks = tuple(sorted({int(x) for x in k.split(",") if x.strip()}))
    except ValueError:
        fail(ValueError("k: comma-separated integers"))
    ids = [c.strip() for c in conversations.split(",") if c.strip()] if conversations else None
    try:
        result = run_locomo(Settings(), data, ids, ks, keep=keep, progress=not as_json)
    except (MemwardenError, ValueError, FileNotFoundError) as exc:
        fail(exc)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        render(result, Console())


@eval_app.command("poisoning")
def eval_poisoning(
    data: Annotated[Path | None, typer.Option(help="labelled JSONL (default: the packaged set)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    keep: Annotated[bool, typer.Option(help="keep the evaluation namespace")] = False,
    detector: Annotated[str, typer.Option(help="rules (the rules alone), combined (rules OR the trained "
                                          "logistic-regression classifier), finetuned (rules OR the "
                                          "fine-tuned MiniLM classifier) or multilingual (finetuned OR the "
                                          "multilingual classifier on texts not in English; the "
                                          "default)")] = "multilingual",
    locomo: Annotated[Path | None, typer.Option(help="LoCoMo JSON: every turn joins the false-alarm set")] = None,
    gatemem: Annotated[Path | None, typer.Option(help="GateMem folder: every turn joins the false-alarm set")] = None,
    pipeline: Annotated[bool, typer.Option(help="run the items through Kafka and the gate (reached_read, "
                                           "reached_procedure)")] = True,
    benign_set: Annotated[list[Path] | None, typer.Option(help="a written benign set (JSONL; repeatable; 'report' "
                                                          "is the packaged one: 400 ordinary texts in 20 "
                                                          "languages): flagged and suspected texts")] = None,
) -> None:
    """Detector precision/recall on the labelled set; share of injected items reaching reads or procedures;
    false-alarm rate on every LoCoMo and GateMem turn (with --locomo / --gatemem) and on written benign sets
    in other languages (with --benign-set)."""
    import json

    from memwarden.errors import MemwardenError
    from memwarden.evals.benign_sets import packaged_report_set
    from memwarden.evals.poisoning import run_poisoning
    from memwarden.settings import Settings

    sets = [packaged_report_set() if str(p) == "report" else p for p in benign_set or ()]
    choices = {"rules": "rules", "combined": "rules+classifier", "finetuned": "rules+finetuned",
               "multilingual": "rules+finetuned+multilingual"}
    if detector not in choices:
        fail(ValueError(f"--detector must be rules, combined, finetuned or multilingual, got {detector!r}"))
    try:
        result = run_poisoning(Settings(), data, progress=not as_json, keep=keep,
                               detector=choices[detector],  # type: ignore[arg-type]
                               locomo=locomo, gatemem=gatemem, pipeline=pipeline, benign_sets=sets)
    except (MemwardenError, ValueError, FileNotFoundError) as exc:
        fail(exc)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        for key in ("detector", "items", "precision", "recall", "f1", "false_alarm_rate", "reached_read",
                    "reached_procedure", "benign_readable", "outcomes"):
            if key in result:
                typer.echo(f"{key:>18}: {result[key]}")
        for name, b in result.get("benign_sets", {}).items():
            typer.echo(f"{'benign set':>18}: {name}: {b['flagged']} of {b['items']} flagged, {b['suspected']} of "
                       f"{b['suspicion_items']} suspected")


@eval_app.command("gatemem")
def eval_gatemem(
    data: Annotated[Path, typer.Option(help="GateMem folder (e.g. ../shared/data/gatemem)")],
    domains: Annotated[str | None, typer.Option(help="comma-separated domain folders under --data (default: "
                                                 "every one found)")] = None,
    k: Annotated[int, typer.Option(help="records returned per checkpoint")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    keep: Annotated[bool, typer.Option(help="keep the evaluation namespace")] = False,
    split: Annotated[str, typer.Option(help="episodes to run: all, dev or heldout (per domain, by SHA-256 of "
                                            "the episode id: even ranks dev, odd held-out)")] = "all",
    details: Annotated[Path | None, typer.Option(help="write one JSON line per checkpoint (score, hidden "
                                                      "fields, returned texts) to this file")] = None,
    access_labels: Annotated[Path | None, typer.Option(help="an access-label layer (JSON lines, e.g. memwarden/"
                                                            "evals/labels/gatemem_access_labels.jsonl) deciding "
                                                            "who reads each turn instead of the rules")] = None,
) -> None:
    """GateMem access control: context-leak rate, utility and over-refusal through the real pipeline."""
    import json

    from memwarden.errors import MemwardenError
    from memwarden.evals.gatemem import run_gatemem
    from memwarden.settings import Settings

    names = [d.strip() for d in domains.split(",") if d.strip()] if domains else None
    try:
        result = run_gatemem(Settings(), data, names, k=k, progress=not as_json, keep=keep, split=split,
                             details=details, labels=access_labels)
    except (MemwardenError, ValueError, FileNotFoundError) as exc:
        fail(exc)
    if as_json:
        print(json.dumps(result, indent=2, default=str))
    else:
        for key in ("leak_rate", "forget_leak_rate", "forget_leak_rate_adjusted", "forget_leaks_by_attack_type",
                    "utility", "over_refusal", "skipped_safety", "by_domain", "pipeline", "split"):
            typer.echo(f"{key:>27}: {result.get(key)}")


@audit_app.command("reads")
def audit_reads(
    memory: Annotated[str, typer.Option(help="memory id")],
    as_json: Annotated[bool, typer.Option("--json", help="print JSON lines")] = False,
) -> None:
    """List every audited read that returned memory ``--memory`` (a memory id, a UUID): when, who, for what
    purpose."""
    import json
    import uuid

    from memwarden.errors import ValidationError
    from memwarden.ops.audit import reads_of
    from memwarden.settings import Settings

    try:
        try:
            memory = str(uuid.UUID(memory))
        except ValueError:
            raise ValidationError("--memory", f"{memory!r} is not a memory id (a UUID)") from None
        found = reads_of(Settings(), memory)
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        fail(exc)
    for r in found:
        typer.echo(json.dumps(r) if as_json else f"{r['read_at']}  {r['principal']:<30} purpose={r['purpose']:<16}"
                   f" rank={r['rank']} policy={r['policy_version']}")
    if not found and not as_json:
        typer.echo(f"no audited read returned {memory}")


def _review_commands() -> None:
    from memwarden import cli_review

    principal_app.command("register")(cli_review.principal_register)
    review_app.command("list")(cli_review.review_list)
    review_app.command("show")(cli_review.review_show)
    review_app.command("approve")(cli_review.review_approve)
    review_app.command("reject")(cli_review.review_reject)


def _ledger_commands() -> None:
    from memwarden import cli_audit, cli_ledger

    app.command("replay")(cli_ledger.replay)
    app.command("recall")(cli_ledger.recall)
    app.command("reconcile")(cli_ledger.reconcile)
    app.command("regate")(cli_ledger.regate)
    app.add_typer(cli_ledger.state_app, name="state")
    eval_app.command("replay")(cli_ledger.eval_replay)
    eval_app.command("drift")(cli_ledger.eval_drift)
    audit_app.command("at")(cli_audit.audit_at)
    audit_app.command("memory")(cli_audit.audit_memory)
    audit_app.command("principal")(cli_audit.audit_principal)


def _forget_commands() -> None:
    from memwarden import cli_eval_api_load, cli_eval_chaos, cli_eval_forgetting, cli_forget, cli_repair

    app.command("forget")(cli_forget.forget)
    app.command("prune")(cli_forget.prune)
    app.add_typer(cli_forget.hold_app, name="hold")
    app.command("repair")(cli_repair.repair)
    eval_app.command("repair")(cli_repair.eval_repair)
    eval_app.command("forgetting")(cli_eval_forgetting.eval_forgetting)
    eval_app.command("chaos")(cli_eval_chaos.eval_chaos)
    eval_app.command("api-load")(cli_eval_api_load.eval_api_load)


def _api_commands() -> None:
    from memwarden import cli_api
    from memwarden.mcp.command import mcp

    app.command("serve")(cli_api.serve)
    app.command("mcp")(mcp)
    app.add_typer(cli_api.token_app, name="token")


_review_commands()
_ledger_commands()
_forget_commands()
_api_commands()


def main() -> None:
    """Entry point of the ``memwarden`` script."""
    app()


if __name__ == "__main__":
    main()
