"""A seeded synthetic world for the recall benchmarks (issue 4 "Speed", issue 11 part 2): principals
in teams, roles, grants and memories with every attribute the read filter looks at. No I/O.

``size / 100`` principals (at least 20) in teams of 10 (a team scope each) and up to 2 of 10 roles
each; grants: each principal reads its team's scope for the ``support`` purpose, 0-2 direct
delegations of another principal's memories in any scope (valid over a window around now), and each
role reads the procedure and profile stores of 5 teams' scopes up to ``CONFIDENTIAL``. Memories:
owner at random, 80 % about the owner, 70 % in the owner's team scope (else ``personal:<owner>``),
store kinds and sensitivities at random (sensitivity 20/50/20/10 % public/internal/confidential/
restricted), 0-2 purpose tags, observed over the two years before ``now``, 15 % with a closed validity
interval, 10 % with an expiry (half of them past). Texts are 8-20 words drawn from a Zipf-distributed
vocabulary of 20k pseudo-words; queries are 3-8 words of the same vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from memwarden.commands.model import Sensitivity, StoreKind

PURPOSES = ("support", "billing", "research", "general")
ROLES = tuple(f"role{i}" for i in range(10))
VOCAB_SIZE = 20_000
#: Half-width of a delegation's validity window around ``now`` (ms: about 115 days).
DELEGATION_WINDOW_MS = 10**10


@dataclass(frozen=True)
class GrantSpec:
    """A READ grant as the world defines it (the arguments of ``GrantAccess``)."""

    grant_id: str
    grantee: str
    scopes: tuple[str, ...]
    subjects: tuple[str, ...] = ()
    purposes: tuple[str, ...] = ()
    store_kinds: tuple[StoreKind, ...] = ()
    sensitivity_ceiling: Sensitivity = Sensitivity.INTERNAL
    valid_from_ms: int | None = None
    valid_to_ms: int | None = None


@dataclass(frozen=True)
class MemorySpec:
    """One memory's write arguments: who, about whom, where, text and the envelope attributes."""

    owner: str
    subject: str
    scope: str
    text: str
    store_kind: str
    sensitivity: str
    purposes: tuple[str, ...]
    observed_at: datetime
    effective_to: datetime | None
    expires_at: datetime | None
    extra: dict[str, Any] = field(default_factory=dict)


class World:
    """Principals, teams, roles and grants for ``size`` memories (seeded by ``rng``), as of ``now``."""

    def __init__(self, size: int, rng: np.random.Generator, now: datetime) -> None:
        self.rng = rng
        self.now = now
        self.n_principals = max(20, size // 100)
        self.principals = [f"user:p{i}" for i in range(self.n_principals)]
        self.team_of = {p: f"team:{i // 10}" for i, p in enumerate(self.principals)}
        self.roles = {p: tuple(sorted(rng.choice(ROLES, size=int(rng.integers(0, 3)), replace=False).tolist()))
                      for p in self.principals}
        now_ms = int(now.timestamp() * 1000)
        grants: list[GrantSpec] = []
        for i, p in enumerate(self.principals):
            grants.append(GrantSpec(f"team-{i}", p, (self.team_of[p],), purposes=("support",)))
            for j in range(int(rng.integers(0, 3))):
                other = self.principals[int(rng.integers(0, self.n_principals))]
                grants.append(GrantSpec(f"del-{i}-{j}", p, ("*",), subjects=(other,),
                                        valid_from_ms=now_ms - DELEGATION_WINDOW_MS,
                                        valid_to_ms=now_ms + DELEGATION_WINDOW_MS))
        for r in ROLES:
            teams = {self.team_of[self.principals[int(x)]] for x in rng.integers(0, self.n_principals, 5)}
            grants.append(GrantSpec(f"role-{r}", f"role:{r}", tuple(sorted(teams)),
                                    store_kinds=(StoreKind.PROCEDURE, StoreKind.PROFILE),
                                    sensitivity_ceiling=Sensitivity.CONFIDENTIAL))
        self.grants = tuple(grants)
        ranks = np.arange(1, VOCAB_SIZE + 1)
        self.word_p = (1.0 / ranks) / (1.0 / ranks).sum()
        self.vocab = np.asarray([f"w{i}" for i in range(VOCAB_SIZE)])

    def text(self, lo: int, hi: int) -> str:
        """``lo``..``hi`` Zipf-distributed words."""
        n = int(self.rng.integers(lo, hi + 1))
        return " ".join(self.vocab[self.rng.choice(VOCAB_SIZE, size=n, p=self.word_p)].tolist())

    def query(self) -> tuple[str, str, str]:
        """A reader, a purpose and a query text of 3-8 words."""
        reader = self.principals[int(self.rng.integers(0, self.n_principals))]
        return reader, str(self.rng.choice(PURPOSES)), self.text(3, 8)

    def memory(self) -> MemorySpec:
        """The next memory (its text included)."""
        rng = self.rng
        owner = self.principals[int(rng.integers(0, self.n_principals))]
        subject = owner if rng.random() < 0.8 else self.principals[int(rng.integers(0, self.n_principals))]
        scope = self.team_of[owner] if rng.random() < 0.7 else f"personal:{owner}"
        observed = self.now - timedelta(seconds=int(rng.integers(1, 2 * 365 * 86_400)))
        closed = rng.random() < 0.15
        expires = self.now + timedelta(days=int(rng.integers(-200, 200))) if rng.random() < 0.1 else None
        return MemorySpec(
            owner=owner, subject=subject, scope=scope, text=self.text(8, 20),
            store_kind=str(rng.choice([k.value for k in StoreKind])),
            sensitivity=str(rng.choice([s.value for s in Sensitivity], p=[0.2, 0.5, 0.2, 0.1])),
            purposes=tuple(sorted(rng.choice(PURPOSES, size=int(rng.integers(0, 3)), replace=False).tolist())),
            observed_at=observed,
            effective_to=observed + timedelta(days=int(rng.integers(1, 300))) if closed else None,
            expires_at=expires)
