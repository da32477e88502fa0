"""Query classification (the paper's regex classifier, extended) and time expressions.

Types: temporal, procedural, factual, identity, general. A query may also carry a
time window (from "in May 2023", "on 8 May, 2023", "in 2022") and a time direction
("last"/"latest"/"recently" → prefer recent, "first"/"earliest" → prefer early,
"before X"/"after X" → a half-open window).
"""

from __future__ import annotations

import calendar
import functools
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from ..model import QueryType

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

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
_DATE_DMY = re.compile(r"\b(\d{1,2})\s+(" + "|".join(_MONTHS) + r")\.?,?\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_DATE_MY = re.compile(r"\b(" + "|".join(_MONTHS) + r")\.?,?\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(?:in|of|during)\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_RECENT = re.compile(r"\b(last|latest|most recent(?:ly)?|recently|newest)\b", re.IGNORECASE)
_EARLY = re.compile(r"\b(first|earliest|oldest|initially|originally)\b", re.IGNORECASE)
_BEFORE = re.compile(r"\b(before|prior to|until)\b", re.IGNORECASE)
_AFTER = re.compile(r"\b(after|since|following)\b", re.IGNORECASE)


@dataclass(frozen=True)
class TimeWindow:
    start: float | None = None
    end: float | None = None


@dataclass(frozen=True)
class QueryInfo:
    type: str
    window: TimeWindow | None = None
    direction: str | None = None  # "recent" | "early" | None


def _ts(y: int, m: int, d: int) -> float:
    return datetime(y, m, d, tzinfo=UTC).timestamp()


def _month_window(y: int, m: int) -> tuple[float, float]:
    last = calendar.monthrange(y, m)[1]
    return _ts(y, m, 1), _ts(y, m, last) + 86399.0


def parse_window(query: str) -> TimeWindow | None:
    """A time window named in the query, widened by before/after cues."""
    start = end = None
    m = _DATE_DMY.search(query)
    if m:
        y, mo, d = int(m.group(3)), _MONTHS[m.group(2).lower()], int(m.group(1))
        try:
            start = _ts(y, mo, d)
            end = start + 86399.0
        except ValueError:
            start = end = None
    if start is None:
        m = _DATE_MY.search(query)
        if m:
            start, end = _month_window(int(m.group(2)), _MONTHS[m.group(1).lower()])
    if start is None:
        m = _YEAR.search(query)
        if m:
            y = int(m.group(1))
            start, end = _ts(y, 1, 1), _ts(y, 12, 31) + 86399.0
    if start is None:
        return None
    if _BEFORE.search(query):
        return TimeWindow(None, start)
    if _AFTER.search(query):
        return TimeWindow(end, None)
    return TimeWindow(start, end)


def classify(query: str) -> QueryInfo:
    """The query's type, time window and time direction (a pure function of the text,
    remembered for the latest few thousand queries: agents repeat their questions)."""
    return _classify(query)


@functools.lru_cache(maxsize=4096)
def _classify(query: str) -> QueryInfo:
    if _IDENTITY.search(query):
        qtype = IDENTITY
    elif _PROCEDURAL.search(query) and not re.match(r"\s*when\b", query, re.IGNORECASE):
        qtype = PROCEDURAL
    elif _TEMPORAL.search(query) or parse_window(query) is not None:
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
    return QueryInfo(qtype, parse_window(query), direction)
