"""Text normalisation for the rule-based detector, with a map from every normalised character back to
its span in the ORIGINAL text (code points).

Unicode tag characters (U+E0020-E007E, invisible "ASCII smuggling") are decoded to ASCII and recorded;
zero-width and bidi format characters are stripped and recorded; each base character with its combining
marks is NFKC-normalised and casefolded (Greek accents dropped); curly quotes become straight; Cyrillic/Greek
look-alikes inside Latin words are mapped to Latin; letter-spaced words ("i g n o r e", "r.u.l.e.s") are
collapsed; runs of spaces and tabs become one space. Seed 004 (instruction and data separation): hidden or disguised
instructions must be seen by the write gate as they would be read by the agent.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass

__all__ = ["GREEK_ACCENTS", "SENTENCE_END", "Norm", "normalise"]

_INVISIBLE = frozenset(
    [0x00AD, 0x034F, 0x061C, 0x180E, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2060, 0x2061, 0x2062]
    + [0x2063, 0x2064, 0xFEFF, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
)
#: ZWJ/ZWNJ between two non-ASCII characters are legitimate (emoji sequences, Persian, Indic scripts).
_JOINERS = frozenset([0x200C, 0x200D])
_TAGS = range(0xE0000, 0xE0080)
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u02bc": "'", "\u201c": '"', "\u201d": '"', "\u00ab": '"',
                         "\u00bb": '"',
                         # rules/38: low double quotes (German, Polish, Czech) and the CJK corner brackets
                         "\u201e": '"', "\u300c": '"', "\u300d": '"', "\u300e": '"', "\u300f": '"'})
#: Greek accents (tonos, dialytika) dropped after casefolding (rules/25): Greek written in capitals carries none
#: ("ΣΗΜΕΙΩΣΗ ΓΙΑ ΤΟΝ ΒΟΗΘΟ"), so the rules read "σημειωση" and "σημείωση" alike; one character for one.
GREEK_ACCENTS = str.maketrans("άέήίόύώΐΰϊϋ", "αεηιουωιυιυ")
#: What every normalised character goes through after casefolding: straight quotes, no Greek accents.
_FOLD: dict[int, str | int | None] = {**_QUOTES, **GREEK_ACCENTS}
_CONFUSABLE = str.maketrans("аеорсхуіјѕԁɡοαειντ", "aeopcxyijsdgoaeivt")
_LETTER_SPACED = re.compile(r"(?<!\w)\w(?:([ .\-_*·])\w)(?:\1\w)+(?!\w)")
_WORD = re.compile(r"\w+")
_LATIN = re.compile(r"[a-z]")
#: A sentence end: ``.!?`` followed by white space or the end of the text, or a newline.
SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")


@dataclass(frozen=True)
class Norm:
    """Normalised text; ``starts[k]``/``ends[k]`` give the original span of normalised character ``k``."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    invisible: tuple[int, ...]  # original offsets of stripped zero-width/format characters
    tagged: tuple[tuple[int, int], ...]  # original spans of Unicode tag-character runs
    sentences: tuple[int, ...]  # normalised offsets where a sentence starts

    def span(self, a: int, b: int) -> tuple[int, int]:
        """Original span of the normalised slice ``[a, b)``."""
        if b <= a:
            at = self.starts[a] if a < len(self.starts) else (self.ends[-1] if self.ends else 0)
            return at, at
        return self.starts[a], self.ends[b - 1]

    def sentence(self, pos: int) -> tuple[int, int]:
        """Normalised ``[start, end)`` of the sentence holding normalised offset ``pos``."""
        k = bisect_right(self.sentences, pos)
        lo = self.sentences[k - 1]
        return lo, (self.sentences[k] if k < len(self.sentences) else len(self.text))


class _Builder:
    def __init__(self) -> None:
        self.chars: list[str] = []
        self.starts: list[int] = []
        self.ends: list[int] = []

    def emit(self, text: str, start: int, end: int) -> None:
        for ch in text:
            self.chars.append(ch)
            self.starts.append(start)
            self.ends.append(end)

    def keep(self, indices: list[int]) -> None:
        self.chars = [self.chars[k] for k in indices]
        self.starts = [self.starts[k] for k in indices]
        self.ends = [self.ends[k] for k in indices]


def normalise(text: str) -> Norm:
    """The normalised copy of ``text`` (see the module docstring) with its offset map, the original
    offsets of stripped invisible characters and tag-character runs, and its sentence starts."""
    out = _Builder()
    invisible: list[int] = []
    tagged: list[tuple[int, int]] = []
    i, n = 0, len(text)
    if text.isascii():  # fast path, same result: ASCII has no tag, invisible or combining characters,
        # NFKC leaves it alone and casefold is lower(); every character maps to itself
        out.chars, out.starts, out.ends = list(text.lower()), list(range(n)), list(range(1, n + 1))
        i = n
    while i < n:
        cp = ord(text[i])
        if cp in _TAGS:  # invisible "ASCII smuggling": decode, keep apart from the visible words
            j = i
            while j < n and ord(text[j]) in _TAGS:
                j += 1
            tagged.append((i, j))
            out.emit(" ", i, i)
            for k in range(i, j):
                if 0xE0020 <= ord(text[k]) <= 0xE007E:
                    out.emit(chr(ord(text[k]) - 0xE0000).casefold(), k, k + 1)
            out.emit(" ", j, j)
            i = j
            continue
        if cp in _INVISIBLE:
            beside_ascii = (i > 0 and text[i - 1].isascii() and text[i - 1].isalnum()) or (
                i + 1 < n and text[i + 1].isascii() and text[i + 1].isalnum())
            if cp not in _JOINERS or beside_ascii:
                invisible.append(i)
            i += 1
            continue
        j = i + 1
        while j < n and unicodedata.combining(text[j]) and ord(text[j]) not in _INVISIBLE:
            j += 1
        out.emit(unicodedata.normalize("NFKC", text[i:j]).casefold().translate(_FOLD), i, j)
        i = j
    norm = "".join(out.chars)
    # Look-alike letters inside words that also hold Latin letters ("іgnore" with a Cyrillic і); same length.
    mapped = list(norm)
    for m in _WORD.finditer(norm):
        if _LATIN.search(m.group()):
            mapped[m.start() : m.end()] = m.group().translate(_CONFUSABLE)
    out.chars = mapped
    # Letter-spaced words ("i g n o r e"), only when some run is clearly deliberate (>= 5 letters).
    runs = [m for m in _LETTER_SPACED.finditer(norm) if (m.end() - m.start() + 1) // 2 >= 3]
    if any((m.end() - m.start() + 1) // 2 >= 5 for m in runs):
        drop = {k for m in runs for k in range(m.start() + 1, m.end(), 2)}
        out.keep([k for k in range(len(out.chars)) if k not in drop])
    # Runs of spaces and tabs count as one space ("Disregard   ALL   prior   guidance").
    ws = " \t"
    out.keep([k for k, c in enumerate(out.chars) if not (c in ws and k > 0 and out.chars[k - 1] in ws)])
    norm = "".join(out.chars)
    sentences = (0, *(m.end() for m in SENTENCE_END.finditer(norm)))
    return Norm(norm, tuple(out.starts), tuple(out.ends), tuple(invisible), tuple(tagged), sentences)
