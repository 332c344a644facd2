"""The concurrent HTTP clients of ``memwarden eval api-load`` (issue 10 part 5): each an
``httpx.AsyncClient`` with its own principal's bearer token, looping over a mix of records (some with
``?wait=true``), supersessions, recalls, forgets and decision lookups, plus a few intended refusals
(a forget or supersession of another client's memory: 403 ``NOT_OWNER``; an unknown token: 401), until
its deadline. Every request is kept as a :class:`~memwarden.evals.api_load_score.Call`, every
acknowledged write as an :class:`~memwarden.evals.api_load_score.Ack`.

A client supersedes or forgets only its own memories whose record it saw accepted (``?wait=true`` or a
``GET /v1/commands/{id}``), as an agent would: the API refuses, before publishing, a change of a memory
the gate has not yet admitted. Each client first records one *bait* memory with ``?wait=true``, which it
never changes: the target of the other clients' intended refusals.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import httpx

from memwarden.evals.api_load_score import ACCEPTED, CONTENT_REFUSAL, Ack, Call

#: Shares of the request mix (intended refusals included).
MIX: tuple[tuple[str, float], ...] = (("record", 0.30), ("record_wait", 0.08), ("supersede", 0.14),
                                      ("recall", 0.30), ("forget", 0.06), ("decision", 0.10), ("refusal", 0.02))
#: Seconds a client waits for an answer (above the 30 s a ``?wait=true`` write may wait for the gate).
TIMEOUT_S = 60.0
_TOPICS = ("green tea", "the Lisbon office", "a standing desk", "Thursday meetings", "the blue notebook",
           "cycling to work", "the quarterly report", "jazz records", "a gluten-free diet", "the night train")


@dataclass
class LoadClient:
    """One API client: ``index``, its ``token``, the shared ``baits`` (client index -> bait memory id)
    and what it collected (``calls``, ``acks``). ``base_url`` is the API's loopback address."""

    index: int
    token: str
    base_url: str
    baits: dict[int, str]
    seed: int = 10
    calls: list[Call] = field(default_factory=list)
    acks: list[Ack] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed * 1_000 + self.index)
        self._pending: deque[tuple[str, str, str]] = deque()  # (command id, memory id, kind), oldest first
        self._confirmed: list[str] = []  # own memories whose record was accepted, not being forgotten
        self._markers: list[str] = []
        self._n = 0
        self._http: httpx.AsyncClient | None = None

    async def __aenter__(self) -> LoadClient:
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=TIMEOUT_S,
                                       headers={"Authorization": f"Bearer {self.token}"},
                                       limits=httpx.Limits(max_connections=2, max_keepalive_connections=2))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._http is not None:
            await self._http.aclose()

    # -- requests -------------------------------------------------------------------------------
    async def _call(self, endpoint: str, method: str, url: str, *, keep: bool = True,
                    **kwargs: Any) -> tuple[int, dict[str, Any]]:
        """Send one request; keep its :class:`Call` (unless ``keep`` is false); return status and body
        (status 0 and ``{}`` when no answer came)."""
        assert self._http is not None
        started = time.perf_counter()
        try:
            answer = await self._http.request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            if keep:
                self.calls.append(Call(endpoint, 0, (time.perf_counter() - started) * 1000, None, type(exc).__name__))
            return 0, {}
        latency = (time.perf_counter() - started) * 1000
        try:
            body = answer.json()
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        if keep:
            code = body.get("code") if answer.status_code >= 400 else None
            self.calls.append(Call(endpoint, answer.status_code, latency, code if isinstance(code, str) else None))
        return answer.status_code, body

    def _text(self) -> tuple[str, str]:
        self._n += 1
        marker = f"lq{self.index:03d}x{self._n:05d}z"
        topic = self._rng.choice(_TOPICS)
        # an everyday sentence: the default gate's classifier read the older "load note <marker>: ..." header as
        # a note to the agent (8 % held for review)
        return marker, f"Client {self.index} noted ordinary fact {self._n} about {topic}; its marker is {marker}."

    def _ack(self, kind: str, body: dict[str, Any], memory_id: str, marker: str) -> None:
        self.acks.append(Ack(kind, str(body["command_id"]), memory_id, marker, self.index, len(self.acks)))

    async def bait(self) -> None:
        """Record the bait memory with ``?wait=true`` (outside the measured mix); a text the gate holds for
        review (:data:`~memwarden.evals.api_load_score.CONTENT_REFUSAL`) is replaced by the next, up to
        three times. Raises ``RuntimeError`` for any other answer."""
        for _ in range(3):
            marker, text = self._text()
            status, body = await self._call("record_wait", "POST", "/v1/memories", keep=False,
                                            params={"wait": "true"},
                                            json={"text": text, "source_ref": f"load:{self.index}"})
            if (status, body.get("code")) != CONTENT_REFUSAL:
                break
        if status != 201:
            raise RuntimeError(f"client {self.index}: bait record answered {status} {body.get('code')}")
        self._ack("record", body, str(body["memory_id"]), marker)
        self.baits[self.index] = str(body["memory_id"])

    async def record(self, wait: bool) -> None:
        marker, text = self._text()
        status, body = await self._call("record_wait" if wait else "record", "POST", "/v1/memories",
                                        params={"wait": "true"} if wait else None,
                                        json={"text": text, "source_ref": f"load:{self.index}"})
        if status in (201, 202) and "command_id" in body:
            mid = str(body["memory_id"])
            self._ack("record", body, mid, marker)
            self._markers.append(marker)
            if status == 201:
                self._confirmed.append(mid)
            else:
                self._pending.append((str(body["command_id"]), mid, "record"))

    async def supersede(self) -> None:
        if not self._confirmed:
            return await self.record(wait=True)
        mid = self._rng.choice(self._confirmed)
        marker, text = self._text()
        status, body = await self._call("supersede", "POST", f"/v1/memories/{mid}/supersede",
                                        json={"text": text, "source_ref": f"load:{self.index}"})
        if status in (201, 202) and "command_id" in body:
            self._ack("supersede", body, mid, marker)
            self._markers.append(marker)
            self._pending.append((str(body["command_id"]), mid, "supersede"))

    async def forget(self) -> None:
        if len(self._confirmed) < 3:
            return await self.record(wait=False)
        mid = self._confirmed.pop(self._rng.randrange(len(self._confirmed)))
        status, body = await self._call("forget", "DELETE", f"/v1/memories/{mid}", params={"reason": "load test"})
        if status in (200, 202) and "command_id" in body:
            self._ack("forget", body, mid, "")
            self._pending.append((str(body["command_id"]), mid, "forget"))

    async def recall(self) -> None:
        query = f"what did client {self.index} note about {self._rng.choice(_TOPICS)}?"
        if self._markers and self._rng.random() < 0.5:
            query = self._rng.choice(self._markers)
        await self._call("recall", "POST", "/v1/recall", json={"query": query, "k": 5})

    async def decision(self) -> None:
        if not self._pending:
            return await self.recall()
        cid, mid, kind = self._pending.popleft()
        status, body = await self._call("decision", "GET", f"/v1/commands/{cid}")
        if status == 404 and body.get("code") == "NOT_DECIDED":
            self._pending.appendleft((cid, mid, kind))
        elif status == 200 and kind == "record" and body.get("outcome") in ACCEPTED:
            self._confirmed.append(mid)

    async def refusal(self) -> None:
        others = [i for i in self.baits if i != self.index]
        kind = self._rng.choice(("forget_other", "supersede_other", "unknown_token") if others else ("unknown_token",))
        if kind == "forget_other":
            victim = self.baits[self._rng.choice(others)]
            await self._call("refusal:forget_other", "DELETE", f"/v1/memories/{victim}", params={"reason": "not mine"})
        elif kind == "supersede_other":
            victim = self.baits[self._rng.choice(others)]
            await self._call("refusal:supersede_other", "POST", f"/v1/memories/{victim}/supersede",
                             json={"text": f"client {self.index} tries to overwrite a memory of another"})
        else:
            await self._call("refusal:unknown_token", "GET", f"/v1/commands/{uuid.uuid4()}",
                             headers={"Authorization": f"Bearer mwt_{secrets.token_urlsafe(32)}"})
        return None

    async def run(self, deadline: float, think_s: float = 0.0) -> None:
        """Send the mix (:data:`MIX`) until ``deadline`` (``time.monotonic()``), pausing ``think_s``
        seconds (±50 %) between requests."""
        ops = {"record": lambda: self.record(wait=False), "record_wait": lambda: self.record(wait=True),
               "supersede": self.supersede, "recall": self.recall, "forget": self.forget,
               "decision": self.decision, "refusal": self.refusal}
        names, weights = [n for n, _ in MIX], [w for _, w in MIX]
        while time.monotonic() < deadline:
            await ops[self._rng.choices(names, weights)[0]]()
            if think_s > 0:
                await asyncio.sleep(think_s * self._rng.uniform(0.5, 1.5))


async def drive(base_url: str, tokens: list[str], duration_s: float, think_s: float = 0.0,
                seed: int = 10) -> tuple[list[Call], list[Ack], float]:
    """Run one :class:`LoadClient` per token: each records its bait memory, then all send the mix for
    ``duration_s`` seconds. Returns every call, every acknowledged write and the measured seconds
    (from the first mixed request to the last answer). Raises ``RuntimeError`` when a bait record is
    not accepted (nothing to measure then)."""
    baits: dict[int, str] = {}
    clients = [LoadClient(i, token, base_url, baits, seed) for i, token in enumerate(tokens)]
    for client in clients:
        await client.__aenter__()
    try:
        await asyncio.gather(*(c.bait() for c in clients))
        started = time.monotonic()
        await asyncio.gather(*(c.run(started + duration_s, think_s) for c in clients))
        measured = time.monotonic() - started
    finally:
        for client in clients:
            await client.__aexit__(None, None, None)
    return [c for cl in clients for c in cl.calls], [a for cl in clients for a in cl.acks], measured


async def unrecallable(base_url: str, tokens: dict[int, str], live: dict[str, Ack], deadline: float,
                       concurrency: int = 16) -> set[str]:
    """Memory ids of ``live`` whose current marker a lexical recall through the API (with its writer's
    token) does not return, asked again each second until ``deadline`` (``time.monotonic()``) while the
    projection catches up."""
    missing = dict(live)
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=base_url, timeout=TIMEOUT_S,
                                 limits=httpx.Limits(max_connections=concurrency)) as http:

        async def found(mid: str, ack: Ack) -> bool:
            async with gate:
                try:
                    answer = await http.post("/v1/recall", json={"query": ack.marker, "k": 3, "mode": "lexical"},
                                             headers={"Authorization": f"Bearer {tokens[ack.client]}"})
                except httpx.HTTPError:
                    return False
                return answer.status_code == 200 and mid in {m.get("memory_id") for m in answer.json()["memories"]}

        while missing:
            results = await asyncio.gather(*(found(mid, ack) for mid, ack in missing.items()))
            missing = {mid: ack for (mid, ack), ok in zip(missing.items(), results, strict=True) if not ok}
            if not missing or time.monotonic() > deadline:
                break
            await asyncio.sleep(1.0)
    return set(missing)


__all__ = ["MIX", "TIMEOUT_S", "LoadClient", "drive", "unrecallable"]
