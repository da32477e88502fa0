"""Query classification (the paper's regex classifier, extended) and time expressions.

Types: temporal, procedural, factual, identity, general. A query may also carry a
time window (from "in May 2023", "on October 13, 2023", "in 2022", "the week before
August 3, 2023"; see :mod:`zenbrain.retrieval.dates`) and a time direction
("last"/"latest"/"recently" → prefer recent, "first"/"earliest" → prefer early).
"before X"/"after X" open the window only where the word governs the date.

A query is *broad* when its answer gathers several memories rather than one: a count
("how many"), what two share ("both", "in common"), what someone has done over time
("what has she painted?", "where have they camped?"), a plural it lists ("which books
did he read?"), or a judgement drawn from what is known of someone ("would she...",
"what might he...", "likely"). Recall spreads such a query's hits over more exchanges.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ..model import QueryType
from .dates import TimeWindow, query_window

TEMPORAL = QueryType.TEMPORAL
PROCEDURAL = QueryType.PROCEDURAL
FACTUAL = QueryType.FACTUAL
IDENTITY = QueryType.IDENTITY
GENERAL = QueryType.GENERAL
QUERY_TYPES = tuple(QueryType)

_TEMPORAL = re.compile(
    r"\b(when|what (?:date|day|month|year|time)|which (?:date|day|month|year)|how long|how many "
    r"(?:days|weeks|months|years)|ago|before|after|since|until|during|last|latest|recent(?:ly)?|first|"
    r"earliest|yesterday|today|tomorrow|(?:this|next|last) (?:week|month|year|weekend)|in (?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_PROCEDURAL = re.compile(
    r"\b(how (?:do|can|should|to|did you)|steps?|procedure|process|workflow|recipe|instructions?|guide|"
    r"set ?up|install|configure|fix|deploy|run)\b",
    re.IGNORECASE,
)
_IDENTITY = re.compile(
    r"\b(who am i|my name|about me|my (?:favou?rite|preference|job|birthday|age)|i prefer|do i (?:like|prefer))\b",
    re.IGNORECASE,
)
_FACTUAL = re.compile(
    r"\b(what|which|who|where|whose|is|are|does|do|did|how many|how much|name|list)\b", re.IGNORECASE
)

_BROAD = re.compile(
    r"\b(?:how many|both|in common|would|might|could|likely|probably)\b"
    r"|^\s*(?:what|which|where|who|how)\b[^?]*?\b(?:has|have)\b"
    r"|^\s*(?:what|which)\s+(?:\w+\s+)?\w+s\s+(?:has|have|does|do|did|are|were)\b",
    re.IGNORECASE,
)

_RECENT = re.compile(r"\b(last|latest|most recent(?:ly)?|recently|newest)\b", re.IGNORECASE)
_EARLY = re.compile(r"\b(first|earliest|oldest|initially|originally)\b", re.IGNORECASE)


@dataclass(frozen=True)
class QueryInfo:
    type: str
    window: TimeWindow | None = None
    direction: str | None = None  # "recent" | "early" | None
    broad: bool = False  # the answer gathers several memories (a count, a list, a judgement)


def parse_window(query: str, reference: float | None = None) -> TimeWindow | None:
    """The time window a query names (:func:`zenbrain.retrieval.dates.query_window`):
    a day, month, season or year, closed unless a direction word governs it
    ("after May 2023", "since 2022"); relative words ("last month", "in June") need
    ``reference`` (the time the question is asked)."""
    return query_window(query, reference)


def classify(query: str, reference: float | None = None) -> QueryInfo:
    """The query's type, time window and time direction (a pure function of the text and
    ``reference``, remembered for the latest few thousand queries: agents repeat their
    questions). ``reference``: when the question is asked, for relative time words."""
    return _classify(query, reference)


@functools.lru_cache(maxsize=4096)
def _classify(query: str, reference: float | None = None) -> QueryInfo:
    window = parse_window(query, reference)
    if _IDENTITY.search(query):
        qtype = IDENTITY
    elif _PROCEDURAL.search(query) and not re.match(r"\s*when\b", query, re.IGNORECASE):
        qtype = PROCEDURAL
    elif _TEMPORAL.search(query) or window is not None:
        qtype = TEMPORAL
    elif _FACTUAL.search(query):
        qtype = FACTUAL
    else:
        qtype = GENERAL
    direction = None
    if _RECENT.search(query):
        direction = "recent"
    elif _EARLY.search(query):
        direction = "early"
    return QueryInfo(qtype, window, direction, broad=_BROAD.search(query) is not None)
