"""Rules R9-R12 of :mod:`memwarden.evals.gatemem_mapping`: active forgetting from deletion requests
written in natural language in GateMem turns (pure, no I/O, no hidden checkpoint field).

R9 Deletion statements. A turn is cut into sentences (``.``, ``!``, ``?`` before a space or the end,
   closing quotes allowed) and each sentence into segments (at ``;``, ``:``, ``, while``, ``, but``,
   ``because``, ``now that``, ``rather than``, ``instead of``, ``and (do) not``, ``not the``, ``and
   keep`` / ``retain`` / ``use`` / ``switch`` / ``replace`` / ``only`` / ``rely``, ``, only``, and at a
   comma or ``and`` opening a clause with a verb of its own; never inside quotes). A sentence speaks
   of deletion when it says delete / deletion / erase / purge / scrub / wipe / forget, ``do not
   retain``, ``treated as deleted`` / ``unavailable`` or ``unavailable going forward``, or remove /
   removal *from* a memory, record, summary, file, history or layer (or opens with a ``Deletion
   ...:`` / ``Cleanup ...:`` / ``Pruning ...:`` header); ``post-deletion``, ``before deletion``,
   ``after deletion``, ``deletion boundary`` and the like are times or topics, not requests. A
   sentence that defers the deletion (``prep``, ``prepare``, ``planning``, ``queued``, ``once``,
   ``until``, ``when ready``, ``will`` (not ``will not``), ``may later``, ``ask to``) is not acted on:
   such requests are repeated with their values when they are carried out. A question (a sentence
   ending in ``?``) is never a deletion. A segment of a deletion sentence is a *deletion segment* when
   it says deletion itself, or when it says neither deletion nor keep / retain / current / active /
   only / remains / now (the memory's own adjectives, "retained active memory", do not count) and
   follows a deletion segment (a list, "and phrase X should not come back"); a segment saying keep /
   current ... names what stays. In a turn with a (not deferred) deletion sentence, a sentence saying
   a value is no longer active / valid / current or must not be disclosed / repeated / recalled /
   retrieved / restored / restated / reused is read as a deletion segment too ("The old code 7788
   should no longer be disclosed."). *Retirement*: a sentence saying a value must not come back
   (revive, bring / brought back, come back, unavailable for reuse, treated as historical / retired /
   obsolete, not be recovered, not be used in current / active answers; not deferred, not a
   question) is a deletion sentence, and in its turn a sentence saying a value is retired /
   historical / obsolete is read too ("The earlier label bridge-28 is retired from active use. Do not
   revive it."): of such sentences only the segments saying retirement or never-again and no keep
   word (once "from active use", "into active answers" and the never-again words are set aside) are
   deletion segments, so "The 9V6R code remains current ... and neither retired code should come
   back" deletes nothing. A value merely called retired, with nothing asking that it not come back
   ("AST-7704 is now retired from active use"), is not deleted.
R10 Values to forget: in deletion segments only, and never a principal's or track's name (R4's
   exclusions; a quoted phrase is excluded only when it *is* such a name): quoted strings (``'...'``,
   ``"..."``, curly quotes; not after safe / broad / public / say / use / only wording); both sides
   but a name of a mapping ``X = Y`` / ``X corresponds to Y`` / ``X maps to Y``, the whole quoted
   mapping too; token-like codes (R3's token and code shapes, room codes, labels such as
   ``bridge-17`` or ``bridge-copper-14``); amounts and percentages; clock times; numbered places
   (``North Annex room 216``; not ``PIN 5942`` or ``Delete 4416``); bare numbers of 4-8 digits (PINs;
   not years); a proper name given as the customer / sponsor / partner / host / mapping / name; the
   unquoted words after a kind noun (phrase, wording, label, note, location, spot, point, string,
   fallback) up to ``from``, a comma, a verb, ``and the`` / ``and never`` ..., ``removed`` /
   ``deleted``, when they are at least two words, do not open with an article, a verb or (but after
   location / spot / point) a preposition, and hold no clause word (not, is, does ...) nor a noun that
   only describes a value (code, PIN, keypad, phrase, minute ...); the unquoted object of an
   imperative ``delete`` / ``remove`` (a leading "the exact / old / earlier ..." dropped) under the
   same conditions and not opening with a capital or a possessive (``Remove rowan ash from ...``);
   ``at the <place>`` after a time. A value introduced as current / active / new / remaining ("the
   current amount 3,620 USD") is dropped unless a delete / remove verb comes before it in the segment
   ("Delete the current code 2748"); a value contained in a longer value of the same segment is
   dropped (``200`` of ``2,200 USD``). A request naming no value (``Delete the older guest PIN``)
   forgets nothing: the rules do not guess which earlier value a description meant.
R11 Who forgets, and when (an erasure workflow). Each deletion turn with at least one value not
   deleted before in the episode yields one :class:`ForgetSpec`: its speaker (R1 id) is the
   *requester*; the episode's ingest service, the controller that wrote and owns every record, is the
   *executor*: it forgets, through the gate, by query, each new value within the requester's
   *standing* (``ForgetMatching`` with ``query=value`` and ``scopes=standing``, signed by the ingest
   service, reason ``erasure request by <requester> at <episode>:<turn>``; the client resolves the
   query by a recall as the ingest service to the ids of its memories whose text contains the
   value, and the gate keeps those in the standing scopes; the value never reaches the ledger), at
   the turn's position: after every earlier turn is recorded, before any later turn is recorded and
   before any checkpoint asked as of this turn or later. Standing (:func:`standing_scopes`): the
   scopes the requester may read (its R7 READ grants valid at the turn), its own ``person:`` and
   ``private:`` circles (the data subject), and every circle, thread and facet of a track one of its
   own relationships names or that it is the case subject of, whatever that relationship's access
   scope (erasure discloses nothing: a household member may have the household's temporary code
   removed although its ceiling hides the credentials facet from it); never another person's circle
   or private notes, nor a track it has no relationship to. Without standing nothing is forgotten
   (``without_standing``). The gate is unchanged: the ingest service forgets as the owner, and every
   READ grant of R7 still carries ``FORGET`` for a principal's own direct forgets. The requester is
   never told which memories went (the decision goes to the executor).
R12 Redaction on write. The deletion turn and every later turn of the episode are recorded with each
   deleted value (case and spacing folded, on word boundaries) replaced by ``[deleted]``: the request
   says the value is "unavailable going forward", so a later repetition is not stored either. Scope
   and sensitivity are still decided on the turn as spoken (R2-R6), so redaction never moves a
   record to a wider circle. *Redacted copies*: a forget removes whole memories, also the current
   facts a turn stated next to the deleted value; so, once the gate has decided the forgets of a
   turn, the harness records for each memory it forgot a copy of its record with every value deleted
   so far in the episode replaced (same writer, subject, scope, sensitivity, observed time and
   attributes, plus ``redacted_copy``), unless nothing but the redaction is left or a deleted value
   would survive (:func:`memwarden.evals.gatemem.redacted_copies`). A later forget removes a copy
   like any memory (and copies it again).

R9 is read in :mod:`memwarden.evals.gatemem_deletion_requests`, R10 in
:mod:`memwarden.evals.gatemem_deletion_values`; this module holds R11 and R12.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace

from memwarden.commands.model import Right
from memwarden.commands.readmodel.permission import Grant
from memwarden.evals.gatemem_circles import TRACK_KEYS, Circles
from memwarden.evals.gatemem_data import Episode
from memwarden.evals.gatemem_deletion_requests import deletion_values
from memwarden.evals.gatemem_deletion_values import contains, fold, pattern
from memwarden.evals.gatemem_plan import ForgetSpec

__all__ = [
    "REDACTED",
    "forgets_of",
    "redact",
    "standing_scopes",
    "with_standing",
]

#: What a deleted value is replaced with in a recorded text (R12).
REDACTED = "[deleted]"


def redact(text: str, values: Iterable[str]) -> tuple[str, int]:
    """R12: ``text`` with every occurrence of each value (case and spacing folded, word boundaries)
    replaced by :data:`REDACTED`, longest values first; returns (text, replacements)."""
    count = 0
    for value in sorted({v for v in values if v.strip()}, key=len, reverse=True):
        text, n = pattern(value).subn(REDACTED, text)
        count += n
    return text, count


def forgets_of(episode: Episode, exclude: frozenset[str], qualified: Mapping[str, str]
               ) -> tuple[list[ForgetSpec], dict[str, tuple[str, ...]], Counter[str]]:
    """R9-R12 over the turns in order: (the forgets, turn id -> deleted values that turn's text holds
    (to redact from its record), statistics ``deletion_turns``, ``deferred_turns``,
    ``turns_without_value``, ``forgets``, ``values``, ``values_repeated``). ``qualified`` maps an
    episode principal to its R1 id (the requester of a forget)."""
    forgets: list[ForgetSpec] = []
    redactions: dict[str, tuple[str, ...]] = {}
    deleted: dict[str, None] = {}
    stats: Counter[str] = Counter()
    for turn in episode.turns:
        finding = deletion_values(turn.text, exclude)
        stats["deletion_turns"] += int(finding.deletion)
        stats["deferred_turns"] += int(finding.deferred)
        if finding.deletion and not finding.values:
            stats["turns_without_value"] += 1
        known_folded = {fold(v) for v in deleted}
        new = tuple(v for v in finding.values if fold(v) not in known_folded)
        known = tuple(v for v in finding.values if fold(v) in known_folded)
        stats["values_repeated"] += len(known)
        if new:
            requester = qualified.get(turn.speaker_id, turn.speaker_id)
            forgets.append(ForgetSpec(turn.turn_id, turn.index, requester, turn.speaker_id, new, known))
            stats["forgets"] += 1
            stats["values"] += len(new)
            deleted.update(dict.fromkeys(new))
        if deleted:
            present = tuple(v for v in deleted if contains(turn.text, v))
            if present:
                redactions[turn.turn_id] = present
    return forgets, redactions, stats


def standing_scopes(speaker: str, requester: str, episode: Episode, circles: Circles, grants: Iterable[Grant],
                    scope_names: Iterable[str], at_ms: int) -> tuple[str, ...]:
    """R11 standing: the scopes (of ``scope_names``, ``<ns>/<circle>``) over which a deletion request by
    episode principal ``speaker`` (qualified id ``requester``) is carried out, at ``at_ms``:

    - every scope a READ grant of the requester valid at ``at_ms`` lists (what it may read);
    - its own circles ``person:<speaker>`` and ``private:<speaker>``, every facet (records about it,
      its private notes: the data subject's right to erasure);
    - every circle of a track one of its own relationships names (``project_id``, ``case_id``,
      ``household_id`` ...) or that it is the case subject of, with the track's threads and facets,
      whatever the relationship's access scope: erasure discloses nothing, so standing in a track is
      enough to ask that something be removed from it, even what its ceiling hides from it.

    Never another person's circle or private notes, nor a track it has no relationship to. Sorted."""
    tracks = {rel.attrs[k] for rel in episode.relationships if rel.principal_id == speaker
              for k in TRACK_KEYS if k in rel.attrs}
    tracks.update(circles.subject_tracks.get(speaker, ()))
    readable = {s for g in grants if g.grantee == requester and Right.READ in g.rights
                and (g.valid_from_ms or 0) <= at_ms and (g.valid_to_ms is None or at_ms < g.valid_to_ms)
                for s in g.scopes}
    own = {f"person:{speaker}", f"private:{speaker}"}
    out: list[str] = []
    for scope in scope_names:
        circle = scope.split("/", 1)[1] if "/" in scope else scope
        base = circle.split("#", 1)[0]
        track = base[len("track:"):].split("/", 1)[0] if base.startswith("track:") else None
        if scope in readable or base in own or (track is not None and track in tracks):
            out.append(scope)
    return tuple(sorted(out))


def with_standing(forgets: Iterable[ForgetSpec], episode: Episode, circles: Circles, grants: Iterable[Grant],
                  scope_names: Iterable[str], writer: str, times_ms: Mapping[str, int]) -> list[ForgetSpec]:
    """R11 erasure workflow: each forget carried out by ``writer`` (the ingest service, which owns every
    record) within the requester's :func:`standing_scopes` at its turn (``times_ms``: turn id -> ms)."""
    grants, names = list(grants), list(scope_names)
    return [replace(f, executor=writer, scopes=standing_scopes(f.speaker, f.requester, episode, circles, grants,
                                                                names, times_ms[f.turn_id]))
            for f in forgets]
