"""Small text helpers shared by routing, recall and consolidation."""

from __future__ import annotations

import hashlib
import re

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")
_CAP = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b")
_SENTENCE_START_COMMON = frozenset(
    "The A An I It This That These Those He She They We You My Our Your His Her Their What When Where Why How "
    "Who Which Yes No Oh Hey Hi Hello Thanks Thank Wow Well So But And Or If Then Also Just Sure Great Good "
    "Nice Really Sounds Today Yesterday Tomorrow Last Next Did Do Does Is Are Was Were Have Has Had Can Could "
    "Would Should Will Let Lets Maybe Absolutely Definitely Awesome Cool Okay Ok Haha Congrats Congratulations".split()
)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def token_set(text: str) -> frozenset[str]:
    return frozenset(words(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def entities(text: str) -> list[str]:
    """Capitalised names (a light, dependency-free stand-in for NER), lower-cased, de-duplicated."""
    out: dict[str, None] = {}
    for m in _CAP.finditer(text):
        name = m.group(1)
        parts = [p for p in name.split() if p not in _SENTENCE_START_COMMON]
        if not parts:
            continue
        out[" ".join(parts).lower()] = None
    return list(out)
