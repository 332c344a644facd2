"""Rules R3-R6 and R8 of :mod:`memwarden.evals.gatemem_mapping`: one record per GateMem turn.

:func:`scope_of_turn` decides the circle and sensitivity of one turn (R4 taint > R5 private note >
named thread > named track > named person > the speaker's home > ``general``); :func:`records_of`
walks the turns in order, keeps the taint table of protected values, sets the facet (R6), and builds
the :class:`~memwarden.evals.gatemem_plan.RecordSpec` of each turn (R8). Pure and deterministic.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from functools import lru_cache

from memwarden.commands.model import Sensitivity, StoreKind
from memwarden.epoch import to_ms
from memwarden.evals.gatemem_circles import Circles, named_persons, named_threads, named_tracks
from memwarden.evals.gatemem_content import RESTRICTION_WORD, ContentFacts, analyse, facet_of
from memwarden.evals.gatemem_data import Episode, Turn
from memwarden.evals.gatemem_plan import LEVEL, RecordSpec, higher
from memwarden.evals.gatemem_policy import DomainPolicy

__all__ = ["Participants", "Taint", "records_of", "repeats", "scope_of_turn"]

#: Protected value -> (circle of the record that first stated it, that record's sensitivity) (R4).
Taint = Mapping[str, tuple[str, Sensitivity]]
#: (thread circle, principal) -> time (ms) an insider's record in that thread first named the principal.
Participants = dict[tuple[str, str], int]


def scope_of_turn(turn: Turn, facts: ContentFacts, circles: Circles, taint: Taint,
                  private_first: bool = False) -> tuple[str, Sensitivity, str]:
    """R4-R6 for one turn: (circle, sensitivity, rule that decided), the rule being one of ``taint`` (a
    protected value repeated whole, :func:`repeats`), ``private`` (before taint with ``private_first``:
    a private note that repeats a protected value stays private), ``named-thread``, ``named-track``,
    ``named-person``, ``home`` or ``general``. The circle may carry the facet of a tainting record; the
    caller settles the facet."""
    level = facts.sensitivity
    if facts.private and private_first:  # a household member's note stays with its author
        return f"private:{turn.speaker_id}", Sensitivity.RESTRICTED, "private"
    hits = [taint[v] for v in taint if repeats(turn.text, v)]
    if hits:
        origin, origin_level = max(hits, key=lambda h: LEVEL[h[1]])
        level = higher(level, origin_level)
        if origin != "general":
            return origin, level, "taint"
    if facts.private:
        return f"private:{turn.speaker_id}", Sensitivity.RESTRICTED, "private"
    named = _named_circle(turn, circles)
    if named is not None:
        return named[0], level, named[1]
    home = circles.home.get(turn.speaker_id)
    if home:
        return home, level, "home"
    return "general", level, "general"


@lru_cache(maxsize=4096)
def _value_pattern(value: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w:])" + re.escape(value) + r"(?![\w:])")


def repeats(text: str, value: str) -> bool:
    """True if ``text`` holds the protected ``value`` as a whole (not inside a longer word, number or
    clock time: ``1:30`` is not repeated by ``11:30``, ``lobby`` not by ``lobbyist``)."""
    return value in text and _value_pattern(value).search(text) is not None


def _named_circle(turn: Turn, circles: Circles) -> tuple[str, str] | None:
    """(circle, rule) of the first thread, else track, else the single person the turn names."""
    threads = named_threads(turn.text, circles)
    if threads:
        return f"track:{threads[0]}", "named-thread"
    tracks = named_tracks(turn.text, circles)
    if RESTRICTION_WORD.search(turn.text):
        # "the private amount ..., separate from the public Elm Guides line": a public program named
        # only for contrast does not take a record about something private
        tracks = [t for t in tracks if t not in circles.public_tracks]
    if tracks:
        return f"track:{tracks[0]}", "named-track"
    persons = [] if turn.speaker_id in circles.outsiders else named_persons(turn, circles)
    if len(persons) == 1:
        return f"person:{persons[0]}", "named-person"
    return None


def records_of(episode: Episode, policy: DomainPolicy, circles: Circles, ns: str, writer: str,
               qualified: Mapping[str, str]) -> tuple[list[RecordSpec], Counter[str], Participants]:
    """R3-R6 and R8 over the turns in order: (one record per turn, counts per ``rule.*``,
    ``scope_kind.*`` and ``sensitivity.*``, the thread participants (thread, principal) -> first
    time (ms) an insider's record in that thread named the principal)."""
    taint: dict[str, tuple[str, Sensitivity]] = {}
    records: list[RecordSpec] = []
    stats: Counter[str] = Counter()
    participants: Participants = {}
    for turn in episode.turns:
        facts = analyse(turn.text, policy.extra_confidential, circles.exclude, policy.extra_values,
                        policy.private_details)
        circle, level, rule = scope_of_turn(turn, facts, circles, taint, policy.private_details)
        if rule == "named-thread":
            _note_participant(turn, circle, circles, participants)
        base, facet = _settle_facet(circle, facts, rule)
        circle = base + facet
        if LEVEL[level] >= LEVEL[Sensitivity.CONFIDENTIAL]:
            for value in facts.values:
                taint.setdefault(value, (circle, level))
        stats[f"rule.{rule}"] += 1
        stats[f"scope_kind.{base.split(':', 1)[0]}{facet}"] += 1
        stats[f"sensitivity.{level.value}"] += 1
        records.append(_record(turn, facts, circle, level, ns, writer, qualified))
    return records, stats, participants


def _note_participant(turn: Turn, thread: str, circles: Circles, participants: Participants) -> None:
    """An insider's turn in ``thread`` naming one outsider makes that outsider a participant from now on."""
    if turn.speaker_id in circles.outsiders:
        return
    named = named_persons(turn, circles)
    if len(named) == 1 and named[0] in circles.outsiders:
        participants.setdefault((thread, named[0]), to_ms(turn.observed_at))


def _settle_facet(circle: str, facts: ContentFacts, rule: str) -> tuple[str, str]:
    """(circle without facet, R6 facet of the record): a tainted turn keeps its origin's facet only if
    it would get the same one itself, else it goes to the circle itself."""
    base, _, origin_facet = circle.partition("#")
    facet = facet_of(facts)
    if rule == "taint" and facet != (f"#{origin_facet}" if origin_facet else ""):
        facet = ""  # a repeated value keeps the facet of its origin, never a wider one
    return base, facet


def _record(turn: Turn, facts: ContentFacts, circle: str, level: Sensitivity, ns: str, writer: str,
            qualified: Mapping[str, str]) -> RecordSpec:
    """R8: the record of one turn in ``circle`` (facet included) at ``level``."""
    return RecordSpec(
        record_id=f"{ns}/{turn.turn_id}",
        turn_id=turn.turn_id,
        index=turn.index,
        writer=writer,
        subject=f"subject:{ns}/{circle.split('#', 1)[0]}",
        scope=f"{ns}/{circle}",
        store_kind=StoreKind.EVENT,
        sensitivity=level,
        purposes=(),
        attributes={
            "speaker": qualified.get(turn.speaker_id, turn.speaker_id),
            "turn_id": turn.turn_id,
            "turn_kind": turn.turn_kind or "",
            "synthetic_time": "true" if turn.synthetic_time else "false",
            "markers": ",".join(facts.markers),
        },
        text=turn.text,
        observed_at=turn.observed_at,
    )

