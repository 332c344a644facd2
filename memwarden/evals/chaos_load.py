"""The steady load and the probes of the chaos evaluation (issue 13 part 4), each a daemon thread with
its own client: writes (records, supersessions, forgets), reads (recalls) and readiness probes
(``GET /ready`` of each worker). Every outcome is kept with its wall time (``time.time()``, seconds)
so that :mod:`memwarden.evals.chaos_score` can cut it by fault window afterwards.

A write counts as *acknowledged* when the broker acknowledged it (``acks=all``): the client returned a
receipt with its ledger position. A write whose publish failed is kept as an error, never as
acknowledged (the caller was told).
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

import httpx

from memwarden.errors import MemwardenError
from memwarden.producers.client import MemwardenClient

#: Shares of the write mix (records, supersessions, forgets).
WRITE_MIX = (("record", 0.7), ("supersede", 0.2), ("forget", 0.1))


@dataclass(frozen=True)
class Ack:
    """An acknowledged write: kind (``record`` / ``supersede`` / ``forget``), ids, the unique marker
    word of its text (``""`` for a forget), ledger position and wall time of the acknowledgement."""

    kind: str
    command_id: str
    memory_id: str
    marker: str
    partition: int
    offset: int
    at: float


@dataclass(frozen=True)
class Outcome:
    """One call of a probe or a read: when it was sent (``at``) and answered (``done``; the send time
    for an error kept without it), whether it succeeded, what went wrong."""

    at: float
    ok: bool
    error: str = ""
    done: float = 0.0


@dataclass(eq=False)  # a thread must stay hashable
class WriteLoad(threading.Thread):
    """Writes at ``rate_hz`` as ``who`` about ``who``: a record of a new memory, a supersession or a
    forget of a live one (:data:`WRITE_MIX`), none of them waiting for the gate (``wait=False``)."""

    client: MemwardenClient
    who: str
    rate_hz: float = 4.0
    seed: int = 13
    acks: list[Ack] = field(default_factory=list)
    errors: list[Outcome] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        threading.Thread.__init__(self, name="chaos-writes", daemon=True)
        self._rng = random.Random(self.seed)
        self._live: list[str] = []  # memory ids not forgotten, in order of recording
        self._n = 0

    def run(self) -> None:
        period = 1.0 / self.rate_hz
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                self._one()
            except MemwardenError as exc:  # StackUnavailable included: the caller was told
                now = time.time()
                self.errors.append(Outcome(now, False, str(exc).splitlines()[0][:200], now))
            self.stopping.wait(max(0.0, period - (time.monotonic() - started)))

    def _one(self) -> None:
        kind = self._rng.choices([k for k, _ in WRITE_MIX], [w for _, w in WRITE_MIX])[0]
        if kind != "record" and len(self._live) < 5:
            kind = "record"
        self._n += 1
        marker = f"cx{self._n:05d}q"
        text = f"chaos note {marker}: an ordinary fact number {self._n}"
        if kind == "record":
            r = self.client.record(principal=self.who, subject=self.who, text=text)
            self._live.append(r.memory_id)
        elif kind == "supersede":
            mid = self._rng.choice(self._live)
            r = self.client.supersede(mid, principal=self.who, subject=self.who, text=text, wait=False)
        else:
            mid = self._live.pop(self._rng.randrange(len(self._live)))
            r = self.client.forget(mid, principal=self.who, subject=self.who, reason="chaos", wait=False)
            marker = ""
        self.acks.append(Ack(kind, r.command_id, r.memory_id, marker, r.partition, r.offset, time.time()))


@dataclass(eq=False)
class ReadLoad(threading.Thread):
    """A recall as ``who`` every ``period_s`` seconds; each outcome kept (a 503 or no answer is an
    error)."""

    client: MemwardenClient
    who: str
    period_s: float = 0.5
    outcomes: list[Outcome] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        threading.Thread.__init__(self, name="chaos-reads", daemon=True)

    def run(self) -> None:
        while not self.stopping.is_set():
            at = time.time()
            try:
                self.client.recall(self.who, "chaos note ordinary fact", k=5)
                self.outcomes.append(Outcome(at, True, "", time.time()))
            except MemwardenError as exc:
                self.outcomes.append(Outcome(at, False, str(exc).splitlines()[0][:200], time.time()))
            self.stopping.wait(self.period_s)


@dataclass(eq=False)
class ReadyProbe(threading.Thread):
    """``GET <url>/ready`` every ``period_s`` seconds; ``ok`` is "answered 200" (ready), anything else
    (503, no answer) is not ready."""

    name_: str
    url: str
    period_s: float = 0.25
    outcomes: list[Outcome] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        threading.Thread.__init__(self, name=f"chaos-ready-{self.name_}", daemon=True)

    def run(self) -> None:
        with httpx.Client(timeout=6.0) as http:
            while not self.stopping.is_set():
                at = time.time()
                try:
                    answer = http.get(f"{self.url}/ready")
                    self.outcomes.append(Outcome(at, answer.status_code == 200,
                                                 "" if answer.status_code == 200 else str(answer.status_code),
                                                 time.time()))
                except httpx.HTTPError as exc:
                    self.outcomes.append(Outcome(at, False, type(exc).__name__, time.time()))
                self.stopping.wait(self.period_s)
