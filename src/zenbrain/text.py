"""Small text helpers shared by routing, recall and consolidation."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")
_CAP = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b")
_SENTENCE_START_COMMON = frozenset(
    "The A An I It This That These Those He She They We You My Our Your His Her Their What When Where Why How "
    "Who Which Yes No Oh Hey Hi Hello Thanks Thank Wow Well So But And Or If Then Also Just Sure Great Good "
    "Nice Really Sounds Today Yesterday Tomorrow Last Next Did Do Does Is Are Was Were Have Has Had Can Could "
    "Would Should Will Let Lets Maybe Absolutely Definitely Awesome Cool Okay Ok Haha Congrats Congratulations".split()
)


# A word written in lower case as a word of a sentence: not part of an address, a file or a
# handle ("clara.novak@proton.me" does not write the name Clara in lower case).
_LOWER_WORD = re.compile(r"(?<![\w.@/#-])[a-z][a-z'\-]*(?![\w@/-])(?!\.\w)")
# A capitalised word after another word of the same sentence (not after ". ", "! ", "? ", ": "
# or the start of the text).
_CAPITALISED_INSIDE = re.compile(r"(?<=[A-Za-z0-9,;'\)]\s)([A-Z][a-z]+)\b")
# A capitalised word in the possessive ("Sofia's") is a noun wherever it stands.
_CAPITALISED_POSSESSIVE = re.compile(r"\b([A-Z][a-z]+)['’]s\b")
_DIGIT = re.compile(r"\d")
_UPPER = re.compile(r"[A-Z]")
_LETTERS = re.compile(r"[A-Za-z]+")


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def words(text: str) -> list[str]:
    if text.isascii():  # the same words, lowered in one call (decay reads every memory's)
        return _WORD.findall(text.lower())
    return [w.lower() for w in _WORD.findall(text)]


def token_set(text: str) -> frozenset[str]:
    return frozenset(words(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def entities(text: str) -> list[str]:
    """Capitalised names (a light, dependency-free stand-in for NER), lower-cased, de-duplicated."""
    return [name.lower() for name in entities_as_written(text)]


def entities_as_written(text: str) -> list[str]:
    """The names of ``entities`` as the text writes them (first spelling of each), for
    embedding a name on its own."""
    return list(_entities_as_written(text))


# Recall reads the names of each of its ~100 candidates on every query (the subject
# rules), and the same memories come back query after query.
@functools.lru_cache(maxsize=1 << 16)
def _entities_as_written(text: str) -> tuple[str, ...]:
    out: dict[str, str] = {}
    for m in _CAP.finditer(text):
        parts = [p for p in m.group(1).split() if p not in _SENTENCE_START_COMMON]
        if parts:
            name = " ".join(parts)
            out.setdefault(name.lower(), name)
    return tuple(out.values())


@dataclass(frozen=True)
class NameVocabulary:
    """How a collection of texts writes its words: which it writes in lower case somewhere,
    and which it capitalises inside a sentence or in the possessive (where English
    capitalises names)."""

    lower_case: frozenset[str]
    capitalised_inside: frozenset[str]

    @classmethod
    def of(cls, texts: Iterable[str]) -> NameVocabulary:
        lower: set[str] = set()
        inside: set[str] = set()
        for t in texts:
            lower.update(_LOWER_WORD.findall(t))
            # The capital-letter patterns only where they can match: a capital after the
            # first character, an "'s" (decay reads every memory of a partition each night).
            if _UPPER.search(t, 1):
                inside.update(map(str.lower, _CAPITALISED_INSIDE.findall(t)))
            if "'s" in t or "’s" in t:
                inside.update(map(str.lower, _CAPITALISED_POSSESSIVE.findall(t)))
        return cls(frozenset(lower), frozenset(inside))

    def with_texts(self, texts: Iterable[str]) -> NameVocabulary:
        """The vocabulary of the texts seen before and these (``of`` over both)."""
        more = NameVocabulary.of(texts)
        if not more.lower_case and not more.capitalised_inside:
            return self
        return NameVocabulary(self.lower_case | more.lower_case, self.capitalised_inside | more.capitalised_inside)

    def to_dict(self) -> dict[str, list[str]]:
        return {"lower_case": sorted(self.lower_case), "capitalised_inside": sorted(self.capitalised_inside)}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> NameVocabulary:
        return cls(frozenset(raw.get("lower_case") or ()), frozenset(raw.get("capitalised_inside") or ()))

    def is_name(self, word: str) -> bool:
        """A lower-cased word the texts capitalise inside a sentence (or in the possessive)
        and never write in lower case."""
        return word in self.capitalised_inside and word not in self.lower_case


_EMAIL = re.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")
_PHONE = re.compile(r"\+?\d(?:[\s\-().]*\d){5,}")
_ASKS_WHO = re.compile(r"^\W*(?:who|whom|whose)\b", re.IGNORECASE)
_ASKS_EMAIL = re.compile(r"\be-?mail\b", re.IGNORECASE)
_ASKS_PHONE = re.compile(r"\b(?:phone|telephone|mobile)\b", re.IGNORECASE)


def answer_shape(question: str) -> Callable[[str, Collection[str]], bool] | None:
    """What an answer to ``question`` holds, when its words say so: a test of whether a
    text holds one, besides the names (lower-cased words) the question asks about. "Who"
    asks for a name (a word capitalised inside a sentence, or in the possessive), an e-mail
    address for one, a phone number for six digits or more. None when the question names
    no shape; "where" names none, as a place is as often "the bakery" as "Lisbon"."""
    if _ASKS_EMAIL.search(question):
        return lambda text, asked: bool(_EMAIL.search(text))
    if _ASKS_PHONE.search(question):
        return lambda text, asked: bool(_PHONE.search(text))
    if _ASKS_WHO.search(question):
        return _names_another
    return None


def _names_another(text: str, asked: Collection[str]) -> bool:
    found = [*_CAPITALISED_INSIDE.findall(text), *_CAPITALISED_POSSESSIVE.findall(text)]
    return any(w.lower() not in asked for w in found)


def name_words(text: str) -> list[str]:
    """The lower-cased runs of letters of ``text``, the units ``NameVocabulary`` knows names
    by ("Sofia's" gives "sofia" and "s", "O'Brien" gives "o" and "brien")."""
    return [m.lower() for m in _LETTERS.findall(text)]


def names_something(text: str, vocabulary: NameVocabulary, *, known: Collection[str] = ()) -> bool:
    """Whether ``text`` names someone or something, or gives a number: it holds a digit, or a
    word that ``vocabulary`` knows as a name and that is not in ``known`` (``name_words`` of,
    for example, the speakers of a conversation). A sentence-initial "Wow" or "Aww" is never capitalised
    inside a sentence and names nothing; "Lisbon" or "Priya" is a name."""
    if _DIGIT.search(text):
        return True
    return any(w not in known and vocabulary.is_name(w) for w in name_words(text))
