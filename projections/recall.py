"""The read path (SSGM Eq. 5): ``recall(principal, query, k, as_of, known_at, purpose)``.

Isolation before candidate generation: what the principal may read for the requested purpose, what
was valid at ``as_of``, what the ledger knew at ``known_at``, expiry, and freshness become one filter
*inside* the vector search (:func:`memwarden.commands.readmodel.read_filter.read_filter`); nothing is
filtered after ranking. Candidates are then verified against Postgres with the same rules as SQL
(:func:`memwarden.commands.readmodel.sql.read_filter_sql`) before return, and each result carries
its score, its relevance (one scale for every query; ``min_score`` floors it, issue 12), provenance
and ledger position.

Grants and roles are read from Postgres on every recall, so a ``RevokeAccess`` holds from the next
read on. Texts are stored sealed under each version's data key and opened here with the key ring
(``keys``): a version whose key is shredded returns nothing, from the moment the key tombstone is on
the keys topic, whether or not the projectors have applied the forget yet (issue 14, step 2).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np
import psycopg

from memwarden.commands.readmodel.episodes import EPISODE_LIFT, episode_lift
from memwarden.commands.readmodel.filters import Condition, FieldIn, Filter, evaluate
from memwarden.commands.readmodel.permission import ReadContext
from memwarden.commands.readmodel.query import DEFAULT_PURPOSE, Recalled, RecalledMemory, RecallMode, check_query
from memwarden.commands.readmodel.query_parts import CONTEXT_WEIGHT, interleave, query_parts
from memwarden.commands.readmodel.questions import demote_questions
from memwarden.commands.readmodel.read_filter import read_filter
from memwarden.commands.readmodel.recency import by_recency, recency_weight
from memwarden.commands.readmodel.relevance import coverage
from memwarden.commands.readmodel.relevance import relevance as score_relevance
from memwarden.commands.readmodel.repeats import REPEAT_POOL, demote_repeats
from memwarden.commands.readmodel.sql import read_filter_sql
from memwarden.commands.readmodel.thread_context import (
    FOLLOW_LIFT,
    Lifted,
    Scored,
    inherited_relevance,
    lifts,
    predecessors,
    without_lifts,
)
from memwarden.crypto import ContentUnreadable, decrypt_text
from memwarden.epoch import to_ms
from memwarden.errors import ValidationError
from memwarden.projections.embedder import Embedder
from memwarden.projections.sparse import Bm25Encoder, tokens
from memwarden.projections.vector_index import PREFETCH_FACTOR, Hit, SparseVector, VectorIndex
from memwarden.stores.profile_rows import verify_candidates
from memwarden.stores.registry import ReaderContext, ServedRequest, reader_context
from memwarden.timing import stage


class DataKeys(Protocol):
    """Where the read path finds data keys (:class:`memwarden.stores.keyring.KeyRing`)."""

    def lookup(self, key_ids: list[str], timeout_s: float = 30.0) -> dict[str, bytes | None]:
        """Data keys for ``key_ids`` (``None`` for shredded or unknown ones); may block briefly."""
        ...


def open_text(key_id: str, nonce: bytes | None, sealed: bytes | None, keys: Mapping[str, bytes | None]) -> str | None:
    """The text of a stored version, or ``None`` when it holds none or its key is gone."""
    key = keys.get(key_id)
    if key is None or nonce is None or sealed is None:
        return None
    try:
        return decrypt_text(nonce, sealed, key, key_id)
    except ContentUnreadable:
        return None


@dataclass(frozen=True)
class InContext:
    """What :func:`hybrid_in_context` found: ``ranked``, every candidate with its thread-context lift,
    best first (:class:`Lifted`); ``cosines``, the dense cosine of the query with every candidate by
    command id (the hits' relevance); ``memory_cosines``, the best cosine of each fused memory by
    memory id (a predecessor's relevance when it is not a hit itself); ``recency``, the weight of the
    candidates' recency in :meth:`top` (current-value questions)."""

    ranked: list[Lifted]
    cosines: dict[str, float] = field(default_factory=dict)
    memory_cosines: dict[str, float] = field(default_factory=dict)
    recency: float = 0.0
    episode: float = EPISODE_LIFT
    #: the whole re-scored ranking by ``invalid``: a recall asks for it again while it verifies the top k
    _scored: dict[frozenset[str], list[Lifted]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def top(self, k: int, invalid: frozenset[str] = frozenset()) -> list[Lifted]:
        """The top ``k`` candidates, without the lifts of the predecessors in ``invalid`` (memory ids),
        re-scored by ``recency`` (:func:`memwarden.commands.readmodel.recency.by_recency`; 0: not), then
        lifted by their episodes' best candidates (``episode``: the weight,
        :func:`memwarden.commands.readmodel.episodes.episode_lift`; ``invalid`` lifts nothing there either;
        after recency, so that a lift shared by a whole episode leaves recency's order within it alone)."""
        if invalid not in self._scored:
            ranked = without_lifts(self.ranked, set(invalid)) if invalid else self.ranked
            ranked = by_recency(ranked, self.recency) if self.recency else ranked
            self._scored[invalid] = episode_lift(ranked, self.episode, exclude=invalid)
        return self._scored[invalid][:k]

    def hits(self, k: int) -> list[Hit]:
        """The top ``k`` as hits."""
        return [Hit(e.point_id, e.score, e.payload) for e in self.top(k)]


def hybrid_in_context(index: VectorIndex, vector: Sequence[float], sparse: SparseVector, where: Filter, k: int,
                      weight: float = FOLLOW_LIFT, episode: float = EPISODE_LIFT) -> InContext:
    """Every hybrid candidate with its thread-context lift (:mod:`memwarden.commands.readmodel.thread_context`)
    and the cosines the relevance needs (:class:`InContext`); ``InContext.hits(k)`` is the top ``k``.

    The engine's hybrid query gives every fused candidate (both prefetch stages, ``PREFETCH_FACTOR * k``
    points each); one dense search then scores the fused candidates (by command id: they passed
    ``where`` a moment ago; a hit of that leg counts only if it is a fused point) *and* finds the
    points that follow one of them under the same read filter ``where`` (each follower is checked
    against ``where`` again with :func:`evaluate`, the engine's reference semantics). A fused candidate
    the search's limit left without a cosine gets it from one more search. ``episode``: the weight of the
    episode lift :meth:`InContext.top` applies. ``weight`` and ``episode`` 0: the plain hybrid ranking.
    Raises ``IndexUnavailable``."""
    prefetch = PREFETCH_FACTOR * k
    fused = [(h.point_id, h.score, h.payload) for h in index.query(vector, sparse, where, 2 * prefetch, prefetch)]
    if not fused:
        return InContext([])
    fused_ids = {pid for pid, _, _ in fused}
    commands = tuple(dict.fromkeys(str(p["command_id"]) for _, _, p in fused))
    ids = predecessors(fused) if weight else ()
    legs: list[Condition | Filter] = [FieldIn("command_id", commands)]
    if ids:
        legs.append(Filter(must=(FieldIn("follows", ids), where)))
    near = index.search(vector, Filter(should=tuple(legs)), len(fused) + 4 * len(ids))
    wanted = set(ids)
    followers: list[Scored] = [(h.point_id, h.score, h.payload) for h in near
                               if h.point_id not in fused_ids and h.payload.get("follows") in wanted
                               and evaluate(where, h.payload)]
    cosines: dict[str, float] = {}

    def note(hits: Sequence[Hit], accepted: set[str]) -> None:
        for h in hits:
            if h.point_id in accepted:
                cid = str(h.payload["command_id"])
                cosines[cid] = max(cosines.get(cid, 0.0), h.score)

    note(near, fused_ids | {pid for pid, _, _ in followers})
    missing = tuple(c for c in commands if c not in cosines)
    if missing:  # many followers took the search's limit
        note(index.search(vector, Filter(must=(FieldIn("command_id", missing),)), len(missing)), fused_ids)
    memory_cosines: dict[str, float] = {}
    for _, _, p in fused:
        mid = str(p["memory_id"])
        memory_cosines[mid] = max(memory_cosines.get(mid, 0.0), cosines.get(str(p["command_id"]), 0.0))
    return InContext(lifts(fused, followers, weight), cosines, memory_cosines, episode=episode)


#: Dense cosine of the query with each hit, by command id.
Cosines = dict[str, float]
#: (hits, their verified rows, the data keys, memory id -> the verified predecessor that lifted it).
_Verified = tuple[list[Hit], list[tuple[Any, ...]], dict[str, bytes | None], dict[str, str]]


def _inherit(found: list[RecalledMemory], lifted: Mapping[str, str], memory_cosines: Mapping[str, float]
             ) -> list[RecalledMemory]:
    """The lifted memories (``lifted``: memory id -> the verified predecessor that lifted it) with the
    relevance they inherit (:func:`inherited_relevance`): the predecessor's own relevance when it is
    among ``found``, else its cosine with the query (its text is not opened for this)."""
    own = {m.memory_id: m.relevance for m in found}
    out = []
    for m in found:
        prev = lifted.get(m.memory_id)
        if prev is not None:
            m = replace(m, relevance=inherited_relevance(m.relevance, own.get(prev, memory_cosines.get(prev))))
        out.append(m)
    return out


def _parts(query: str, mode: RecallMode, decompose: bool) -> tuple[str, ...]:
    """The parts an enumerating ``query`` is recalled by (hybrid mode with ``decompose`` only), else ``()``."""
    return tuple(query_parts(query)) if decompose and mode == "hybrid" else ()


def _retrieved(task: asyncio.Task[Any]) -> None:
    """Mark ``task``'s outcome as seen (its awaiter, if any, still gets it)."""
    if not task.cancelled():
        task.exception()


@dataclass(frozen=True)
class QueryEmbedding:
    """A query's embedding started ahead of its recall (:meth:`Recaller.start_embedding`): the query,
    its enumerated parts, and the task that yields one dense vector per text (the query's first)."""

    query: str
    parts: tuple[str, ...]
    task: asyncio.Task[list[list[float]]]


class Recaller:
    """Runs recall over an ``Embedder``, a ``VectorIndex``, the profile state in Postgres (one
    connection, used by one call at a time) and the data keys that open the stored texts."""

    def __init__(self, embedder: Embedder, index: VectorIndex, conn: psycopg.AsyncConnection,
                 lexical: Bm25Encoder | None = None, *, keys: DataKeys) -> None:
        self._embedder = embedder
        self._lexical = lexical or Bm25Encoder()
        self._index = index
        self._conn = conn
        self._keys = keys
        self._lock = asyncio.Lock()

    async def reader(self, principal: str, served: ServedRequest | None = None) -> ReaderContext:
        """The registry record, roles and grants of ``principal`` in one statement: what read
        authentication checks and what a recall's filter is built from (pass it to :meth:`recall`);
        with ``served``, the statement claims the signed request in the shared replay window
        (``ReaderContext.first_use``)."""
        async with self._lock:
            return await reader_context(self._conn, principal, served)

    def start_embedding(self, query: str, mode: RecallMode = "hybrid", decompose: bool = True) -> QueryEmbedding:
        """Start embedding ``query`` (and, when a hybrid recall would split it, its parts) in a thread now,
        for a :meth:`recall` of the same ``query``, ``mode`` and ``decompose`` to take (``embedding=``).
        The read API starts it before the reader is authenticated, so the query embedding (ONNX Runtime
        outside the GIL) overlaps the registry read in Postgres instead of following it; a request that
        fails authentication only cancels the task (its cost is bounded: one query of at most
        ``MAX_QUERY_CHARS`` characters, nothing read, returned or audited). Call it on the event loop
        that will run the recall; the caller cancels the task if it never recalls."""
        parts = _parts(query, mode, decompose)
        task = asyncio.create_task(self._embed(query, parts))
        task.add_done_callback(_retrieved)  # an embedding nobody awaits (auth failed) logs no stray error
        return QueryEmbedding(query, parts, task)

    async def _embed(self, query: str, parts: Sequence[str] = ()) -> list[list[float]]:
        """The query's dense vector (every mode needs it: the dense leg and the relevance), then, for
        an enumerating ``query``, one per part: the part's embedding plus :data:`CONTEXT_WEIGHT` times
        the whole question's, normalised (the dense counterpart of :meth:`Bm25Encoder.part_query`).
        The question and its parts are embedded in one call, by the 8-bit query model if any."""
        with stage("embed"):
            embed = getattr(self._embedder, "embed_query", self._embedder.embed)
            found = await asyncio.to_thread(embed, [query, *parts])
        out: list[list[float]] = [found[0].tolist()]
        whole = np.asarray(found[0], dtype=np.float64)
        for row in found[1:]:
            mixed = np.asarray(row, dtype=np.float64) + CONTEXT_WEIGHT * whole
            norm = float(np.linalg.norm(mixed))
            out.append((mixed / norm if norm > 0 else mixed).tolist())
        return out

    async def _candidates(self, query: str, where: Filter, k: int, mode: RecallMode,
                          vector: list[float], recency: float = 0.0, keep: int | None = None,
                          lexical: SparseVector | None = None) -> tuple[list[Hit], list[float], InContext | None]:
        """Top-``k`` candidates of ``mode`` among the points matching ``where`` (filter inside the
        search), the dense vector ``vector`` it searched with, and
        the hybrid search's :class:`InContext` (cosines, lifts) in hybrid mode, else ``None``.
        ``recency`` > 0 re-scores the candidates by recency (:func:`by_recency`) before the top ``k``
        is taken: over every fused candidate in hybrid mode, over ``PREFETCH_FACTOR * k`` hits in the
        other modes (``max(PREFETCH_FACTOR * k, keep)`` hits). ``keep`` (default ``k``): how many
        candidates to return (the pool the repeats are demoted in). ``lexical``: the sparse query
        (default: ``query``'s own)."""
        keep = keep or k
        sparse = lexical if lexical is not None else self._lexical.query(query)
        with stage("index"):
            if mode == "hybrid":
                found = await asyncio.to_thread(hybrid_in_context, self._index, vector, sparse, where, k)
                found = replace(found, recency=recency)
                return found.hits(keep), vector, found
            pool = max(PREFETCH_FACTOR * k if recency else k, keep)
            if mode == "lexical":
                hits = await asyncio.to_thread(self._index.search_lexical, sparse, where, pool)
            else:
                hits = await asyncio.to_thread(self._index.search, vector, where, pool)
            if recency:
                ranked = by_recency([Lifted(h.point_id, h.score, h.payload, h.score) for h in hits], recency)
                hits = [Hit(e.point_id, e.score, e.payload) for e in ranked]
            return hits[:keep], vector, None

    async def _verified_in_context(self, found: InContext, k: int, sql: Any, params: Any) -> _Verified:
        """The top ``k`` of ``found`` whose lifts come from verified predecessors: the hits and every
        predecessor that lifted one are verified in Postgres in one query (``sql``/``params``: the read
        filter as SQL) and their data keys looked up; a predecessor that fails (not readable in
        Postgres, or its key shredded: forgotten before the projectors caught up) lifts nothing, and the
        top ``k`` is taken again without its lifts (the newcomers verified in a second query); so does the
        candidate whose score lifted a hit's episode (:mod:`memwarden.commands.readmodel.episodes`). Returns
        (hits, their verified rows, the keys, memory id -> predecessor for the hits a verified
        predecessor lifted)."""
        verified: dict[str, tuple[Any, ...]] = {}
        keys: dict[str, bytes | None] = {}

        async def check(command_ids: list[str]) -> None:
            todo = [c for c in dict.fromkeys(command_ids) if c not in verified]
            if todo:
                rows, found_keys = await self._verify(todo, sql, params)
                verified.update({str(r[2]): r for r in rows})
                keys.update(found_keys)

        def top(invalid: frozenset[str]) -> tuple[list[Lifted], list[str]]:
            ranked = found.top(k, invalid)
            return ranked, [str(e.payload["command_id"]) for e in ranked] + [
                c for e in ranked for c in (e.by_command, e.episode_by_command) if c]

        def fails(command: str | None) -> bool:
            return command not in verified or keys.get(verified[command][3]) is None

        def failed(entries: list[Lifted]) -> frozenset[str]:
            thread = {e.by for e in entries if e.by is not None and fails(e.by_command)}
            episode = {e.episode_by for e in entries if e.episode_by is not None and fails(e.episode_by_command)}
            return frozenset(thread | episode)

        entries, wanted = top(frozenset())
        await check(wanted)
        invalid = failed(entries)
        if invalid:
            entries, wanted = top(invalid)
            await check(wanted)
            invalid |= failed(entries)
            # a newcomer lifted by another failed predecessor: every lift of ``invalid`` taken back on the
            # un-rescored ranking, then recency again (found.top), among the entries verified so far
            present = {e.point_id for e in entries}
            entries = [e for e in found.top(len(found.ranked), invalid) if e.point_id in present]
        hits = [Hit(e.point_id, e.score, e.payload) for e in entries]
        rows = [verified[str(h.payload["command_id"])] for h in hits if str(h.payload["command_id"]) in verified]
        lifted = {str(e.payload["memory_id"]): e.by for e in entries if e.by is not None}
        return hits, rows, keys, lifted

    async def _verify(self, command_ids: list[str], sql: Any, params: Any
                      ) -> tuple[list[tuple[Any, ...]], dict[str, bytes | None]]:
        """The rows of ``command_ids`` that pass the read filter in Postgres (``sql``/``params``) and the
        data keys of their texts (``None`` for a shredded one)."""
        with stage("verify"):
            async with self._lock:
                rows = await verify_candidates(self._conn, command_ids, sql, params)
        with stage("keys"):
            keys = await asyncio.to_thread(self._keys.lookup, sorted({r[3] for r in rows})) if rows else {}
        return rows, keys

    async def _cosines(self, vector: list[float], hits: list[Hit], where: Filter, mode: RecallMode) -> dict[str, float]:
        """The dense cosine of the query with each hit, by command id: the hit scores themselves in
        ``dense`` mode, else one dense search restricted to the hits' command ids. The hits passed the
        read filter ``where`` a moment ago inside the search, and every one is verified again in
        Postgres before it is returned: evaluating ``where`` a second time here (the costliest part
        of a search at scale: every grant's sub-filter) would only repeat it."""
        if mode == "dense":
            return {h.payload["command_id"]: h.score for h in hits}
        ids = tuple(dict.fromkeys(str(h.payload["command_id"]) for h in hits))
        only = Filter(must=(FieldIn("command_id", ids),))
        dense = await asyncio.to_thread(self._index.search, vector, only, len(hits))
        out: dict[str, float] = {}
        for h in dense:
            cid = h.payload["command_id"]
            out[cid] = max(out.get(cid, 0.0), h.score)
        return out

    async def recall(self, principal: str, query: str, k: int = 10, as_of: datetime | None = None,
                     known_at: datetime | None = None, purpose: str = DEFAULT_PURPOSE,
                     freshness: bool = True, include_untrusted: bool = False,
                     mode: RecallMode = "hybrid", min_score: float = 0.0,
                     reader: ReaderContext | None = None, recency: float | None = None,
                     repeats: bool = True, decompose: bool = True,
                     embedding: QueryEmbedding | None = None, every_version: bool = False) -> Recalled:
        """Top-``k`` memories ``principal`` may read for ``purpose`` and ``query``, valid at ``as_of``
        (default now) as the ledger knew them at ``known_at`` (default now), best first. Content
        tagged ``untrusted`` comes back only with ``include_untrusted`` (and keeps its tag).

        ``mode`` picks the retrieval path (:data:`RecallMode`): ``hybrid`` (``VectorIndex.query``,
        score = fused, plus the thread-context lift of a memory whose predecessor was fused:
        :mod:`memwarden.commands.readmodel.thread_context`), ``dense`` (``VectorIndex.search``, score =
        cosine) or ``lexical`` (``VectorIndex.search_lexical``, score = BM25; only memories sharing a term
        with the query); each times its recency factor when ``recency`` applies (below).
        The read filter is the same on every path. In hybrid mode the best ``2k`` candidates are verified and opened,
        and a memory whose words nearly repeat a better-ranked one's moves behind every memory that
        repeats nothing (:mod:`memwarden.commands.readmodel.repeats`) before the top ``k`` is taken;
        ``repeats=False`` keeps the rank order (forget by query: every copy of a value counts).

        Each memory also carries its ``relevance`` in [0, 1] (:mod:`memwarden.commands.readmodel.relevance`:
        the larger of the query/memory cosine and the share of the query's terms the memory holds), the
        same scale for every query. ``min_score`` drops the memories whose relevance is below it,
        after the read filter, verification and ranking (it never adds or reorders); the result says
        how many it dropped (``below_floor``). ``0`` (the default) keeps every memory.

        ``repeats``: demote near-repeats (above; default on). With it, a question about a present state (one
        ``recency`` applies to) also moves the stored questions (memories ending with a question mark) behind
        every other memory of the pool (:mod:`memwarden.commands.readmodel.questions`).

        ``decompose`` (hybrid mode, default on): a question that enumerates what it asks for ("the
        current date, current amount, safe wording, and current blocker":
        :func:`~memwarden.commands.readmodel.query_parts.query_parts`) is recalled as a whole and once
        per part (the part's words first, the whole question's after them, in both legs), and the
        rankings are merged in turn (the best of the whole, the best of each part, then the second of
        each, ...; each memory once, a ranking whose next memory was taken already giving its next one),
        so every item asked for gets places among the ``k``. The
        memories keep the score and relevance of the ranking that found them first (a part's relevance
        is measured against the part: the item asked for), so the merged list is not sorted by score,
        and ``min_score`` floors each memory by that relevance. Near-repeats are demoted within each
        ranking, not across them. Costs one hybrid search and one verification per part; any other
        question is recalled as a whole only.

        ``recency``: the weight of recency in the ranking of current-value questions
        (:mod:`memwarden.commands.readmodel.recency`: each candidate's score times
        ``1 + recency * its rank in time among the candidates``); ``None`` (the default) applies
        :data:`~memwarden.commands.readmodel.recency.CURRENT_WEIGHT` when the query asks for a current,
        latest or final value and 0 otherwise; 0 ranks by relevance alone. It reorders what the read
        filter let through and never adds a candidate.

        ``embedding``: the query's embedding started ahead (:meth:`start_embedding`), taken when it is of
        the same texts (else cancelled and embedded again).

        ``every_version``: every version ``principal`` may read now, whenever it was valid (superseded and
        closed ones too, :func:`~memwarden.commands.readmodel.read_filter.read_filter`), so one memory may come
        back once per version; no ``as_of``, ``known_at`` or freshness with it (forget by query: a value only an
        earlier version holds).

        ``reader``: the reader's roles and grants as :meth:`reader` read them for this call's
        authentication a moment ago (read again here when ``None``; one of another principal is a
        ``ValidationError``).

        Raises ``ValidationError`` for bad arguments.
        """
        check_query(principal, query, k, as_of, known_at, purpose, mode, min_score, recency)
        if every_version and (as_of is not None or known_at is not None):
            raise ValidationError("every_version", "a read of every version takes no as_of or known_at")
        weight = recency_weight(query, recency)
        if reader is not None and reader.principal != principal:
            raise ValidationError("reader", f"the reader context of {reader.principal!r} given for {principal!r}")
        now = datetime.now(UTC)
        at = (as_of or now).astimezone(UTC)
        known = (known_at or now).astimezone(UTC)
        parts = _parts(query, mode, decompose)
        # the query is embedded (in a thread, outside the GIL) while the filter is built (and the grants
        # read, when no reader context came with the call); an enumeration's parts in the same call.
        # One started ahead (``embedding``) is taken when it embeds the same texts.
        if embedding is not None and (embedding.query, embedding.parts) == (query, parts):
            embedding_task = embedding.task
        else:
            if embedding is not None:
                embedding.task.cancel()
            embedding_task = asyncio.create_task(self._embed(query, parts))
        try:
            if reader is None:
                with stage("grants"):
                    reader = await self.reader(principal)
            roles, grants = reader.roles, reader.grants
            with stage("filter"):
                if as_of is not None:  # a read of the past uses grants valid then *and* now (a revocation holds)
                    grants = tuple(g for g in grants if g.valid_at(to_ms(at)))
                where = read_filter(principal, at, now, purpose=purpose, roles=roles, grants=grants,
                                    known_at=known_at, freshness=freshness and not every_version,
                                    include_untrusted=include_untrusted, every_version=every_version)
                sql, params = read_filter_sql(ReadContext(principal, roles, purpose, to_ms(now), grants), at, now,
                                              known, include_untrusted, every_version=every_version)
        except BaseException:
            embedding_task.cancel()
            raise
        repeats = repeats and mode == "hybrid"  # dense and lexical rank by their own score alone
        vectors = await embedding_task
        asked_known = known if known_at is not None else None
        ranked = await self._ranked(query, None, vectors[0], where, k, mode, weight, repeats, sql, params,
                                    asked_known)
        if parts:  # the whole question's ranking first, then each part's, merged in turn
            rankings = [ranked] + [await self._ranked(part, self._lexical.part_query(part, query, CONTEXT_WEIGHT),
                                                      vector, where, k, mode, weight, repeats, sql, params,
                                                      asked_known)
                                   for part, vector in zip(parts, vectors[1:], strict=True)]
            ranked = interleave(rankings, key=lambda m: m.memory_id, limit=sum(len(r) for r in rankings))
        # the floor acts on the whole verified pool (a memory below it never takes a place of the top k);
        # below_floor counts those the floor took out of the top k it would have been
        kept = [m for m in ranked if m.relevance >= min_score][:k]
        return Recalled(kept, float(min_score), sum(1 for m in ranked[:k] if m.relevance < min_score))

    async def _ranked(self, query: str, lexical: SparseVector | None, vector: list[float],
                      where: Filter, k: int, mode: RecallMode, weight: float, repeats: bool, sql: Any,
                      params: Any, known: datetime | None = None) -> list[RecalledMemory]:
        """The verified and opened candidates of one query (``lexical``: its sparse vector, ``None``
        for ``query``'s own), best first, near-repeats demoted when ``repeats``; the caller takes
        the top ``k`` after the floor. ``sql``/``params``: the read filter as SQL. ``known``: a
        ``known_at`` read's time (each version shown as the ledger knew it then)."""
        keep = REPEAT_POOL * k if repeats else k  # the repeats are demoted among twice as many candidates
        hits, vector, searched = await self._candidates(query, where, k, mode, vector, weight, keep, lexical)
        if not hits:
            return []
        with stage("relevance"):
            cosines = searched.cosines if searched is not None else await self._cosines(vector, hits, where, mode)
        query_terms = tokens(query)
        lifted: dict[str, str] = {}
        if searched is not None:
            hits, rows, keys, lifted = await self._verified_in_context(searched, keep, sql, params)
        else:
            rows, keys = await self._verify([h.payload["command_id"] for h in hits], sql, params)
        scores = {h.payload["command_id"]: h.score for h in hits}
        with stage("open"):
            out = self._opened(rows, keys, scores, cosines, query_terms, known)
            if lifted:
                out = _inherit(out, lifted, searched.memory_cosines if searched is not None else {})
        ranked = sorted(out, key=lambda m: (-m.score, m.memory_id))
        if repeats:
            ranked = [ranked[i] for i in demote_repeats([m.text for m in ranked])]
            if weight:  # a question about a present state: the stored questions state no value
                ranked = [ranked[i] for i in demote_questions([m.text for m in ranked])]
        return ranked

    @staticmethod
    def _opened(rows: list[tuple[Any, ...]], keys: Mapping[str, bytes | None], scores: Mapping[str, float],
                cosines: Mapping[str, float], query_terms: list[str],
                known: datetime | None = None) -> list[RecalledMemory]:
        """The verified rows whose text opens, as recalled memories with their relevance. With ``known``
        (a ``known_at`` read), a version closed after it shows as the ledger knew it then: current
        (``status`` active, no ``valid_to``), not with a close nobody knew of yet."""
        out = []
        for r in rows:
            text = open_text(r[3], r[18], r[19], keys)
            if text is None:  # shredded: forgotten, whether or not the projectors know it yet
                continue
            valid_to, status = r[11], r[12]
            if known is not None and r[20] is not None and r[20] > known:
                valid_to, status = None, "active"
            relevance = score_relevance(cosines.get(r[2], 0.0), coverage(query_terms, tokens(text)))
            out.append(RecalledMemory(
                memory_id=r[0], version=r[1], text=text, score=float(scores[r[2]]), principal=r[4], subject=r[5],
                scope=r[6], source_kind=r[7], source_ref=r[8], observed_at=r[9].isoformat(),
                valid_from=r[10].isoformat(), valid_to=valid_to.isoformat() if valid_to else None, status=status,
                ledger_topic=r[13], ledger_partition=r[14], ledger_offset=r[15], unverified=r[16], tags=tuple(r[17]),
                relevance=relevance,
            ))
        return out
