"""Index text of a conversation turn: its predecessors' words plus its own, and its speaker.

A short reply ("My friend got me into it") carries little of what it answers: those words
are in the turn before it. Indexing each turn together with the turn(s) just before it in
the same session lets both BM25 and a dense embedder match the reply by its topic. The
original turn stays the memory's content (what a user sees); only the *index text* changes.

Speaker names are kept out of the index text: a "Caroline: ..." prefix makes every one of
Caroline's turns match any question that names her. The speaker is a separate field
(:func:`split_speaker` takes it from a ``"Name: text"`` line), and a query that names a
person can prefer that person's turns at ranking time (:func:`named_speakers`).

Pure functions, no I/O; the recall and ingestion pipeline decide where the texts are stored.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ValidationError

__all__ = [
    "CONTEXT_SEPARATOR",
    "DEFAULT_WINDOW",
    "Turn",
    "contextual_texts",
    "index_text",
    "mean_vectors",
    "named_speakers",
    "split_speaker",
]

DEFAULT_WINDOW = 1
"""Predecessors joined to a turn: one covers a question and its reply (the common case of
a context-dependent turn) without drowning the turn's own words."""

CONTEXT_SEPARATOR = "\n"

# "Name: text" with a name of one to three capitalised words (no digits, no URL schemes).
_SPEAKER = re.compile(r"^\s*([A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*){0,2})\s*:\s+(.*)$", re.DOTALL)
_NOT_NAMES = frozenset({"http", "https", "note", "re", "ps", "update", "edit", "warning", "todo", "q", "a"})


@dataclass(frozen=True)
class Turn:
    """One utterance of a conversation: what was said, by whom, in which session."""

    text: str
    speaker: str | None = None
    session: str | None = None


def split_speaker(text: str) -> tuple[str | None, str]:
    """``("Caroline", "I went ...")`` for ``"Caroline: I went ..."``; ``(None, text)`` otherwise.

    Only a leading name of one to three capitalised words followed by a colon and a space
    counts, so "Note: ..." or "https://..." or a time "10:30" stay text.
    """
    m = _SPEAKER.match(text)
    if not m or m.group(1).lower() in _NOT_NAMES:
        return None, text.strip()
    return m.group(1), m.group(2).strip()


def index_text(own: str, previous: Sequence[str]) -> str:
    """The text to index for a turn: its predecessors (oldest first), then the turn itself."""
    parts = [p.strip() for p in previous if p and p.strip()]
    parts.append(own.strip())
    return CONTEXT_SEPARATOR.join(parts)


def contextual_texts(turns: Sequence[Turn], window: int = DEFAULT_WINDOW) -> list[str]:
    """The index text of every turn of one conversation, in order.

    Each turn is joined with up to ``window`` turns before it *in the same session* (a new
    session starts a new exchange; turns with ``session=None`` all count as one session).
    ``window=0`` gives the turns' own texts. Texts are taken as given: strip speaker
    prefixes first (:func:`split_speaker`) if they carry them.
    """
    if window < 0:
        raise ValidationError("window must be 0 or more")
    out: list[str] = []
    for i, turn in enumerate(turns):
        previous: list[str] = []
        j = i - 1
        while j >= 0 and len(previous) < window and turns[j].session == turn.session:
            previous.append(turns[j].text)
            j -= 1
        out.append(index_text(turn.text, previous[::-1]))
    return out


def named_speakers(query: str, speakers: Iterable[str]) -> frozenset[str]:
    """The speakers a query names, by full name or first name, whole words, any case
    ("What did caroline's friend ..." names Caroline)."""
    index = _speaker_index(tuple(speakers))
    folded = query.casefold()
    found: set[str] = set()

    def test(name: str, form: str) -> None:
        if name not in found and form.casefold() in folded and _whole_word(form).search(query):
            found.add(name)

    if not query.isascii():
        for name, form in index.forms:
            test(name, form)
        return frozenset(found)
    # A store may know thousands of speakers: an ASCII query can only name a form with an
    # ASCII first word that it has whole, so only those forms are tested (testing every
    # form cost more than the rest of a recall).
    for word in set(_WORD_RUN.findall(folded)):
        for name, form in index.by_first_word.get(word, ()):
            test(name, form)
    for name, form in index.other:
        test(name, form)
    return frozenset(found)


_WORD_RUN = re.compile(r"\w+")


@dataclass(frozen=True)
class _SpeakerIndex:
    forms: list[tuple[str, str]]  # (name, form): each speaker's full name and first name
    by_first_word: dict[str, list[tuple[str, str]]]  # the forms by their first word, lower case (ASCII)
    other: list[tuple[str, str]]  # forms whose first word is not ASCII or that start with no word


@functools.lru_cache(maxsize=64)
def _speaker_index(speakers: tuple[str, ...]) -> _SpeakerIndex:
    forms: list[tuple[str, str]] = []
    for name in dict.fromkeys(speakers):
        parts = name.split()
        forms.extend((name, form) for form in dict.fromkeys([name, *parts[:1]]) if form)
    by_first: dict[str, list[tuple[str, str]]] = {}
    other: list[tuple[str, str]] = []
    for name, form in forms:
        first = _WORD_RUN.match(form)
        if first is not None and first.group().isascii():
            by_first.setdefault(first.group().lower(), []).append((name, form))
        else:
            other.append((name, form))
    return _SpeakerIndex(forms, by_first, other)


@functools.lru_cache(maxsize=4096)
def _whole_word(form: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(form)}(?!\w)", re.IGNORECASE)


def mean_vectors(own: np.ndarray, context: np.ndarray) -> np.ndarray:
    """The vector to index a turn by (recipe ``dense_view="mean"``): the unit-length mean of
    the embedding of its own text and that of its index text, row by row. It matches what
    the turn says and what it answers, without the context's words outweighing its own."""
    a = np.asarray(own, dtype=np.float32)
    b = np.asarray(context, dtype=np.float32)
    if a.shape != b.shape:
        raise ValidationError("own and context vectors must have the same shape")
    m = a + b
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    return m / np.where(norms == 0, 1.0, norms)
