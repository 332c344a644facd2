"""Contradiction port for untyped text (issue 3 part 5; SSGM Eq. 6 ΔM ∧ M ⊨ ⊥), with a
deterministic rule-based default. An NLI model can implement :class:`ClaimExtractor` later.

The default reads short first/third-person statements ("likes spicy food", "I don't drink coffee",
"stopped drinking green tea", "lives in Oslo", "works at Acme") into a :class:`Claim`:

* *multi-valued* relations (like, love, enjoy, prefer, drink, eat, play, ...): the key is relation +
  object, and a claim contradicts another with the same key and the opposite polarity;
* *single-valued* relations (lives in, works at/for, is married to, name is, is N years old, ...):
  the key is the relation alone, and a positive claim contradicts another positive one with a
  different value.

Only claims of the *same subject* are ever compared (the caller keys them by subject). Keys and
values are hashed before they reach gate state, so no plaintext is kept outside the encrypted
ledger; with :class:`KeyedClaims` (what the gate uses) the hashes are HMAC-SHA-256 under a secret of
the namespace, so a short value ("lives in Oslo") cannot be found back by hashing guesses.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Protocol


@dataclass(frozen=True)
class Claim:
    """``key`` (relation, plus object for multi-valued relations), ``value`` (object of a
    single-valued relation, else ``None``) and ``positive`` polarity."""

    key: str
    value: str | None
    positive: bool
    pepper: bytes = field(default=b"", repr=False, compare=False)

    def _hash(self, text: str) -> str:
        if self.pepper:
            return hmac.new(self.pepper, text.encode(), hashlib.sha256).hexdigest()
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def digest(self) -> str:
        """Hex digest of the key (what gate state stores): HMAC-SHA-256 under ``pepper`` when set,
        else SHA-256."""
        return self._hash(self.key)

    @property
    def value_digest(self) -> str | None:
        """Hex digest of the value of a single-valued claim (as :attr:`digest`), else ``None``."""
        return None if self.value is None else self._hash(self.value)


class ClaimExtractor(Protocol):
    """Port: text → the claims it asserts (possibly none)."""

    def claims(self, text: str) -> tuple[Claim, ...]:
        """The claims ``text`` asserts (possibly none)."""
        ...


_MULTI = {
    "like": "like", "likes": "like", "love": "like", "loves": "like", "enjoy": "like", "enjoys": "like",
    "prefer": "like", "prefers": "like", "dislike": "-like", "dislikes": "-like", "hate": "-like",
    "hates": "-like", "drink": "drink", "drinks": "drink", "drinking": "drink", "eat": "eat", "eats": "eat",
    "eating": "eat", "play": "play", "plays": "play", "playing": "play", "own": "own", "owns": "own",
    "liking": "like", "loving": "like", "enjoying": "like",
}
_SINGLE = (
    (r"(?:lives|live|living|resides|moved) (?:in|to)", "live_in"),
    (r"(?:works|work|working) (?:at|for)", "work_at"),
    (r"(?:is|am|are) married to", "married_to"),
    (r"(?:name is|is called|am called)", "name"),
    (r"(?:is|am) (\d{1,3}) years old", "age"),
)
_NEG = (r"(?:(?:do|does|did)(?: not|n't)|don't|doesn't|didn't|no longer|never|stopped|quit"
        r"|(?:is|am|are) not|isn't|aren't)")
_ADVERBS = {"always", "usually", "really", "still", "now", "also", "often", "totally", "just", "currently"}
_PRONOUNS = {"it", "that", "this", "them", "those", "these", "him", "her", "there", "one"}
_STOP = {"the", "a", "an", "some", "very", "much", "really", "so"}


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s'-]", " ", text)).strip()


def _object(words: list[str]) -> str:
    """The object phrase (at most 4 content words); empty for a bare pronoun, which names nothing."""
    kept = [w for w in words if w not in _STOP][:4]
    if not kept or kept[0] in _PRONOUNS:
        return ""
    return " ".join(kept)


class RuleBasedClaims:
    """Deterministic default :class:`ClaimExtractor` (see the module docstring)."""

    def claims(self, text: str) -> tuple[Claim, ...]:
        """The claim of a one-statement memory ("likes spicy food"); nothing for longer text (a
        dialogue turn with several sentences is not read as claims: too easy to misread)."""
        sentences = [x for x in (_norm(p) for p in re.split(r"[.;!?\n]+", text)) if x]
        if len(sentences) != 1:
            return ()
        claim = self._sentence(sentences[0])
        return () if claim is None else (claim,)

    def _sentence(self, s: str) -> Claim | None:
        words = s.split()
        if not words or len(words) > 14:
            return None
        for skip in (0, 1):  # no subject word, or one ("I", "she", "alice")
            claim = self._from(words[skip:])
            if claim is not None:
                return claim
        return None

    def _from(self, words: list[str]) -> Claim | None:
        words = [w for w in words if w not in _ADVERBS]
        text = " ".join(words)
        negative = False
        m = re.match(_NEG + r" ", text)
        if m:
            negative, text = True, text[m.end():]
        for pattern, relation in _SINGLE:
            single = re.match(rf"{pattern}\s*(.*)$", text)
            if single:
                raw = single.group(single.lastindex or 1)
                value = raw if relation == "age" else _object(raw.split())
                return Claim(relation, value, not negative) if value else None
        parts = text.split(" ", 1)
        multi = _MULTI.get(parts[0])
        if multi is None or len(parts) < 2:
            return None
        relation = multi
        positive = not negative
        if relation.startswith("-"):
            relation, positive = relation[1:], not positive
        obj = _object(re.sub(r"^(?:to |drinking |eating |playing )", "", parts[1]).split())
        return Claim(f"{relation}:{obj}", None, positive) if obj else None


def contradicts(new: Claim, old: Claim) -> bool:
    """Whether two claims of the same subject cannot both hold (same key; opposite polarity for a
    multi-valued relation, different values for a positive single-valued one)."""
    if new.key != old.key:
        return False
    if new.value is None:
        return new.positive != old.positive
    return new.positive and old.positive and new.value != old.value


DEFAULT_CLAIMS = RuleBasedClaims()


@dataclass(frozen=True)
class KeyedClaims:
    """``inner``'s claims with digests keyed by ``secret`` (HMAC-SHA-256), for gate state."""

    inner: ClaimExtractor
    secret: bytes = field(repr=False)

    def claims(self, text: str) -> tuple[Claim, ...]:
        """The claims of ``text``, each carrying the secret its digests are keyed with."""
        return tuple(replace(c, pepper=self.secret) for c in self.inner.claims(text))
