"""The workload of ``memwarden eval forgetting`` (:mod:`memwarden.evals.forgetting_eval`): its constants
and forgetting paths, the memories it records (:class:`Mem`) and the forget commands it times
(:class:`ForgetRun`), the run's principals and shared labels (:class:`Cast`), the repair and pruning
commands when installed, and :func:`plan`, which memories each path forgets."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Keys compaction lag of the evaluation namespace, in seconds (the README's bound scales with it).
LAG_S = 3.0
#: Retention sweep interval of the evaluation's gate worker, in seconds.
RETENTION_S = 1.0
#: How far ahead ``expires_at`` is set for the memories forgotten by expiry, in seconds.
EXPIRY_S = 8.0
#: A forget that has not made its memories unreadable by then counts as readable after forget.
UNREADABLE_TIMEOUT_S = 15.0
#: Pause between two rounds of probes, in seconds: the recalls run on the worker that also decides the
#: forget, and back-to-back probes would keep its event loop busy (the goal is at light load).
PROBE_PAUSE_S = 0.02
#: Goal for the p99 of ``forget_to_unreadable_ms`` at light load.
GOAL_P99_MS = 1000.0
#: Stores every erasure receipt must list.
REQUIRED_STORES = frozenset({"keys", "profile", "vector_cache", "index"})
#: Smallest and largest workload (below: too few memories for every path; above: a user's memories
#: no longer fit in one recall of ``MAX_K``, so a probe could miss a readable memory).
MIN_MEMORIES, MAX_MEMORIES = 20, 200
MODES = ("hybrid", "dense", "lexical")
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
_TOPICS = ("garden log", "reading list", "travel diary", "kitchen notes", "workout plan", "music practice",
           "budget sheet", "pet care", "language lessons", "bird sightings", "recipe box", "film notes")

ID, QUERY, TAGS, SCOPE, SOURCE = "id", "selector:query", "selector:tags", "selector:scope", "selector:source_ref"
SUBJECT, HOLD, REPAIR, LINEAGE, EXPIRY, PRUNING = "subject", "legal_hold", "repair", "lineage", "expiry", "pruning"
KEPT = "kept"
#: Every forgetting path, in the order of the report.
PATHS = (ID, QUERY, TAGS, SCOPE, SOURCE, SUBJECT, HOLD, REPAIR, LINEAGE, EXPIRY, PRUNING)


def new_marker() -> str:
    """A unique marker: ``qx`` + 20 random lowercase letters and digits + ``zq`` (what the scan looks for)."""
    return "qx" + "".join(secrets.choice(_ALPHABET) for _ in range(20)) + "zq"


@dataclass
class Mem:
    """One memory of the workload: who owns it, which path forgets it (or ``kept``), its text."""

    owner: str
    path: str
    text: str
    marker: str
    args: dict[str, Any]
    parent: Mem | None = None
    memory_id: str = ""
    key_ids: tuple[str, ...] = ()
    forget_id: str = ""  # the forget command its receipt names ("" = the retention sweep's, not known ahead)
    readable_before: bool = False
    fact_marker: str = ""  # the marker in its typed fact's value, if it has one

    @property
    def markers(self) -> dict[str, str]:
        """``marker -> what carries it`` (the text, the typed fact's value)."""
        return {self.marker: "text", **({self.fact_marker: "fact value"} if self.fact_marker else {})}


@dataclass
class ForgetRun:
    """One forget command: what it should forget, how long from its publication until unreadable
    (``ms``) and from the call (``call_ms``), what the gate decided."""

    path: str
    command_id: str
    expected: list[Mem]
    ms: float | None
    call_ms: float | None = None
    outcome: str = ""
    forgotten_ids: list[str] = field(default_factory=list)
    late: list[Mem] = field(default_factory=list)


@dataclass(frozen=True)
class Cast:
    """The principals and the shared labels of one run."""

    run: str

    def who(self, name: str) -> str:
        return f"user:{name}-{self.run}"

    @property
    def scope(self) -> str:
        return f"personal:shared-{self.run}"

    @property
    def tag(self) -> str:
        return f"trip-{self.run}"

    @property
    def chat_ref(self) -> str:
        return f"chat:{self.run}-7"

    @property
    def tainted_ref(self) -> str:
        return f"import:{self.run}-tainted"

    @property
    def hold_id(self) -> str:
        return f"case-{self.run}"


def repair_command() -> Callable[..., Any] | None:
    """``memwarden.repair.repair`` when that module is installed, else ``None`` (the evaluation then
    issues the selector a repair would, itself)."""
    try:
        from memwarden.repair import repair
    except ImportError:
        return None
    return repair


def prune_command() -> Callable[..., Any] | None:
    """``memwarden.pruning.prune`` when that module is installed, else ``None`` (pruning: not built)."""
    try:
        from memwarden.pruning import prune
    except ImportError:
        return None
    return prune


def path_counts(n: int, pruning: bool = True) -> dict[str, int]:
    """How many memories each path forgets in a workload of ``n`` (two of them are the derived
    records of ``lineage``; the rest are kept). ``pruning``: a pruning command exists."""
    return {ID: max(2, n // 10), QUERY: max(1, n // 20), TAGS: max(1, n // 15), SCOPE: max(1, n // 15),
            SOURCE: max(1, n // 15), SUBJECT: max(2, n // 10), HOLD: 1, REPAIR: max(2, n // 12),
            EXPIRY: max(1, n // 15), PRUNING: max(1, n // 20) if pruning else 0}


def plan(n: int, cast: Cast, pruning: bool = True) -> list[Mem]:
    """The workload of ``n`` memories (see the module doc); ``pruning``: include the memories pruning
    forgets (EVENT store kind; every other memory is PROFILE, which pruning archives, never forgets)."""
    if not MIN_MEMORIES <= n <= MAX_MEMORIES:
        raise ValueError(f"memories: between {MIN_MEMORIES} and {MAX_MEMORIES}")
    mems: list[Mem] = []

    def add(name: str, path: str, **extra: Any) -> Mem:
        marker = new_marker()
        i = len(mems)
        text = f"{name.title()}'s {_TOPICS[i % len(_TOPICS)]} entry {i}. The reference written on it reads {marker}."
        owner = cast.who(name)
        m = Mem(owner, path, text, marker, {"principal": owner, "subject": owner, "text": text, **extra})
        if i % 3 == 0 and path != LINEAGE:  # a typed fact whose value is sealed like the text
            m.fact_marker = new_marker()
            m.args["fact"] = {"entity": "profile", "attribute": f"reference_{i}", "value": f"code {m.fact_marker}"}
        mems.append(m)
        return m

    def derive(parent: Mem) -> None:
        m = add(parent.owner.split(":")[1].split("-")[0], LINEAGE, source_kind="MODEL_INFERENCE",
                quoted_span=f"reads {parent.marker}", epistemic_status="INFERRED")
        m.text = m.args["text"] = f"Summary inferred from entry {mems.index(parent)}: {m.text}"
        m.parent = parent

    counts = path_counts(n, pruning)
    for path, name, extra in ((ID, "ana", {}), (QUERY, "ana", {}), (TAGS, "ana", {"tags": [cast.tag]}),
                              (SCOPE, "cleo", {"scope": cast.scope}), (SOURCE, "cleo", {"source_ref": cast.chat_ref}),
                              (SUBJECT, "ben", {}), (HOLD, "dev", {}), (EXPIRY, "eli", {}),
                              (PRUNING, "eli", {"store_kind": "EVENT"})):
        for _ in range(counts[path]):
            add(name, path, **extra)
    derive(next(m for m in mems if m.path == TAGS))
    repair = [add(("ana", "cleo", "eli")[i % 3], REPAIR, source_ref=cast.tainted_ref) for i in range(counts[REPAIR])]
    derive(repair[0])
    kept_extras: tuple[dict[str, Any], ...] = ({"scope": cast.scope}, {"tags": [cast.tag]},
                                               {"source_ref": cast.chat_ref})
    for i in range(n - len(mems)):
        add(("ana", "cleo", "dev", "eli")[i % 4], KEPT, **(kept_extras[i] if i < len(kept_extras) else {}))
    return mems
