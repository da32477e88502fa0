"""Time expressions in English text, as windows of time: absolute dates and relative ones.

``resolve(text, reference)`` finds the expressions of a text and turns each into a closed
window ``[start, end]`` (seconds since the epoch, UTC days): "8 May, 2023" is that day,
"May 2023" that month, "summer 2021" June to August, "early November 2022" its first ten
days. With a reference time (the session date of a stored turn, "now" for a query) the
relative ones resolve too: "yesterday", "last week" (the Monday-to-Sunday week before the
reference's), "next month", "two years ago" (that calendar year), "a few weeks ago" (two
to four weeks back), "last Saturday", "this summer", "the week before August 3, 2023".

``query_window(query, reference)`` reads the window a *question* asks about. A direction
word counts only where it governs the date, right before it: "after May 2023" is the open
window from the end of May, "since 2022" from 1 January 2022, "before 8 May, 2023" up to
the start of that day, "between A and B" from A to B; "in December 2023 after a long time" is December.

Written here rather than taken from a library: dateparser and parsedatetime return a point
in time, not the period a phrase names ("last year" -> one day), know no seasons, read
"night", "dinner", "may" or "a second" as dates in chat text, and were 14x (parsedatetime)
and 117x (dateparser) slower per LoCoMo turn than this module in the same run
(``scripts/bench_dates.py``); this runs on every stored turn.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

__all__ = ["TimeMention", "TimeWindow", "event_window", "query_window", "resolve"]

_DAY = 86400.0


@dataclass(frozen=True)
class TimeWindow:
    """Seconds since the epoch; ``None`` leaves that side open."""

    start: float | None = None
    end: float | None = None

    def contains(self, t: float) -> bool:
        return (self.start is None or t >= self.start) and (self.end is None or t <= self.end)

    def overlaps(self, other: TimeWindow) -> bool:
        return (self.end is None or other.start is None or other.start <= self.end) and (
            self.start is None or other.end is None or other.end >= self.start
        )


@dataclass(frozen=True)
class TimeMention:
    """One time expression: the matched text, where it is, and the closed window it names."""

    text: str
    start_char: int
    end_char: int
    first: date
    last: date
    relative: bool = False

    @property
    def window(self) -> TimeWindow:
        return TimeWindow(_ts(self.first), _ts(self.last) + _DAY - 1.0)


def _ts(d: date) -> float:
    return datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp()


def _ref_date(reference: float | None) -> date | None:
    return None if reference is None else datetime.fromtimestamp(reference, tz=UTC).date()


# --------------------------------------------------------------------------- vocabulary

_MONTHS: dict[str, int] = {}
for _i in range(1, 13):
    _MONTHS[calendar.month_name[_i].lower()] = _i
    _MONTHS[calendar.month_abbr[_i].lower()] = _i
_MONTHS["sept"] = 9
_MON = r"(?:january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_WD = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_SEASON = r"(?:spring|summer|fall|autumn|winter)"
_YEAR = r"(?:19|20)\d\d"
_NUMBERS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}
_NUMBERS.update({"a": 1, "an": 1, "couple": 2, "a couple": 2, "a couple of": 2, "couple of": 2})
_VAGUE = {"few": (2, 4), "a few": (2, 4), "several": (3, 6)}
_COUNT = r"(?:\d{1,2}|a couple of|a couple|couple of|a few|few|several|an|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(?:day|week|month|year)s?"
_PART = r"(?:early|mid|late|the beginning of|beginning of|the start of|start of|the end of|end of|the middle of|middle of|the first half of|first half of|the second half of|second half of)"


def _month_last(y: int, m: int) -> date:
    return date(y, m, calendar.monthrange(y, m)[1])


def _season(name: str, year: int) -> tuple[date, date]:
    """Meteorological seasons of the northern hemisphere; winter Y runs from December Y
    to the end of February Y + 1."""
    name = "fall" if name == "autumn" else name
    first_month = {"spring": 3, "summer": 6, "fall": 9, "winter": 12}[name]
    first = date(year, first_month, 1)
    last_y, last_m = (year + 1, 2) if name == "winter" else (year, first_month + 2)
    return first, _month_last(last_y, last_m)


def _part(part: str | None, first: date, last: date) -> tuple[date, date]:
    """Narrow a month or year to its early / middle / late part (thirds) or halves."""
    if not part:
        return first, last
    p = part.lower().replace("the ", "")
    n = (last - first).days + 1
    if p.startswith("first half"):
        return first, first + timedelta(days=n // 2 - 1)
    if p.startswith("second half"):
        return first + timedelta(days=n // 2), last
    third = n // 3
    if p in ("early", "beginning of", "start of"):
        return first, first + timedelta(days=third - 1)
    if p in ("mid", "middle of"):
        return first + timedelta(days=third), last - timedelta(days=third)
    return last - timedelta(days=third - 1), last  # late, end of


def _count(word: str) -> tuple[int, int]:
    w = word.lower()
    if w in _VAGUE:
        return _VAGUE[w]
    n = int(w) if w.isdigit() else _NUMBERS[w]
    return n, n


def _shift_months(d: date, months: int) -> date:
    y, m = divmod(d.year * 12 + d.month - 1 + months, 12)
    return date(y, m + 1, min(d.day, calendar.monthrange(y, m + 1)[1]))


def _units_back(anchor: date, unit: str, lo: int, hi: int, sign: int = -1) -> tuple[date, date]:
    """The period ``lo`` to ``hi`` units before (sign -1) or after (+1) ``anchor``: days and
    weeks as the days themselves (a week as seven days), months and years as calendar ones."""
    unit = unit.lower().rstrip("s")
    if unit == "day":
        a, b = anchor + timedelta(days=sign * lo), anchor + timedelta(days=sign * hi)
    elif unit == "week":
        a, b = anchor + timedelta(weeks=sign * lo), anchor + timedelta(weeks=sign * hi)
        a, b = min(a, b) - timedelta(days=3), max(a, b) + timedelta(days=3)
    elif unit == "month":
        a, b = _shift_months(anchor, sign * lo), _shift_months(anchor, sign * hi)
        a, b = min(a, b).replace(day=1), max(a, b)
        b = _month_last(b.year, b.month)
    else:
        a, b = date(anchor.year + sign * lo, 1, 1), date(anchor.year + sign * hi, 12, 31)
    return min(a, b), max(a, b)


def _week_of(d: date) -> tuple[date, date]:
    monday = d - timedelta(days=d.weekday())
    return monday, monday + timedelta(days=6)


def _weekday_before(anchor: date, weekday: int) -> date:
    back = (anchor.weekday() - weekday) % 7 or 7
    return anchor - timedelta(days=back)


def _latest_month(ref: date, month: int) -> tuple[date, date]:
    y = ref.year if month <= ref.month else ref.year - 1
    return date(y, month, 1), _month_last(y, month)


def _latest_season(ref: date, name: str, *, ended: bool) -> tuple[date, date]:
    """The latest season of that name that began by ``ref`` (``ended``: that ended before it)."""
    for y in (ref.year, ref.year - 1, ref.year - 2):
        first, last = _season(name, y)
        if (last < ref) if ended else (first <= ref):
            return first, last
    return _season(name, ref.year - 2)


# --------------------------------------------------------------------------- patterns

_ABSOLUTE = re.compile(
    r"(?P<iso>(?P<iy>" + _YEAR + r")[-/](?P<im>\d{1,2})[-/](?P<id>\d{1,2}))"
    r"|(?P<dmy>(?P<d1>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m1>" + _MON + r")\.?,?\s+(?P<y1>" + _YEAR + r"))"
    r"|(?P<mdy>(?P<m2>" + _MON + r")\.?\s+(?P<d2>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<y2>" + _YEAR + r"))"
    r"|(?P<my>(?:(?P<p3>" + _PART + r")\s+)?(?P<m3>" + _MON + r")\.?,?\s+(?:of\s+)?(?P<y3>" + _YEAR + r"))"
    r"|(?P<sy>(?:(?P<p4>early|mid|late)[\s-]+)?(?:the\s+)?(?P<s4>" + _SEASON + r")\s+(?:of\s+)?(?P<y4>" + _YEAR + r"))"
    r"|(?P<yr>(?:(?P<p5>" + _PART + r")\s+)?(?P<y5>" + _YEAR + r")\b(?!\s*[-/]\d))"
)
_RELATIVE = re.compile(
    r"(?P<word>yesterday|today|tonight|tomorrow|last night)"
    r"|(?P<ago>(?P<n1>" + _COUNT + r")\s+(?P<u1>" + _UNIT + r")\s+ago)"
    r"|(?P<rel>(?P<r2>last|this|next|past|coming)\s+(?P<w2>week|weekend|month|year|" + _SEASON + "|" + _WD + r"))\b"
    r"|(?P<inmon>(?P<m3>" + _MON + r")\b(?!\s+\d))"
    r"|(?P<inseason>(?P<s4>" + _SEASON + r")\b(?!\s+(?:of\s+)?\d))"
)
# "two weeks before", "the week after", "the Sunday before", "last weekend before": an
# offset that, right before an absolute date, moves its window.
_OFFSET = re.compile(
    r"(?:(?P<n>" + _COUNT + r")\s+(?P<u>" + _UNIT + r")|(?:the|last)\s+(?P<u2>day|week|weekend|month|year)"
    r"|(?:the|last)\s+(?P<wd>" + _WD + r"))\s+(?P<dir>before|after)\s+(?:the\s+)?(?:on\s+)?$"
)
# A bare year, month or season counts only after one of these ("in 2022", "during the
# summer"): "Cyberpunk 2077", "I may go" and "summer break" are no dates.
_TAIL = 48  # characters before a match that can hold its offset or preposition
_PREPOSITION = re.compile(
    r"\b(?:in|of|during|since|before|after|until|till|by|from|through|over|year)\s+(?:the\s+)?(?:early\s+|late\s+)?$"
)
_GOVERNOR = re.compile(
    r"\b(?P<dir>before|after|since|until|till|by|prior to|from|through)\s+(?:the\s+)?(?:on\s+|in\s+)?$", re.IGNORECASE
)
_BETWEEN = re.compile(r"\bbetween\s+(?:the\s+)?$", re.IGNORECASE)
# A cheap test before the patterns: most turns name no time at all.
_WORDS = re.compile(r"[a-z]+")
_DIGIT = re.compile(r"\d")
_ALONE = frozenset(
    "yesterday today tonight tomorrow spring summer fall autumn winter".split()
    + [m for m in _MONTHS if m != "may"] + ["may"]
)
_UNITS = frozenset("day days week weeks weekend month months year years night".split() + list(_WEEKDAYS)) | {
    "spring", "summer", "fall", "autumn", "winter"}
_QUALIFIERS = frozenset("last this next past coming ago before after".split())


_YEAR_GATE = re.compile(r"(?:19|20)\d\d")


def _lower(text: str) -> str:
    """``text`` in lower case with every character at its place (the patterns are lower
    case, which makes them several times faster than case-blind ones)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _may_name_a_time(text: str) -> bool:
    if _DIGIT.search(text):
        return True
    words = set(_WORDS.findall(text.lower()))
    return bool(words & _ALONE) or bool(words & _UNITS and words & _QUALIFIERS)


def _absolute(m: re.Match[str]) -> tuple[date, date] | None:
    g = m.groupdict()
    try:
        if g["iso"]:
            d = date(int(g["iy"]), int(g["im"]), int(g["id"]))
            return d, d
        if g["dmy"]:
            d = date(int(g["y1"]), _MONTHS[g["m1"].lower()], int(g["d1"]))
            return d, d
        if g["mdy"]:
            d = date(int(g["y2"]), _MONTHS[g["m2"].lower()], int(g["d2"]))
            return d, d
    except ValueError:  # "31 February"
        return None
    if g["my"]:
        y, mo = int(g["y3"]), _MONTHS[g["m3"].lower()]
        return _part(g["p3"], date(y, mo, 1), _month_last(y, mo))
    if g["sy"]:
        first, last = _season(g["s4"].lower(), int(g["y4"]))
        return _part(g["p4"], first, last)
    y = int(g["y5"])
    return _part(g["p5"], date(y, 1, 1), date(y, 12, 31))


def _relative(m: re.Match[str], ref: date) -> tuple[date, date] | None:
    g = m.groupdict()
    if g["word"]:
        w = g["word"].lower()
        d = ref + timedelta(days={"yesterday": -1, "last night": -1, "tomorrow": 1}.get(w, 0))
        return d, d
    if g["ago"]:
        lo, hi = _count(g["n1"])
        return _units_back(ref, g["u1"], lo, hi)
    if g["rel"]:
        r, w = g["r2"].lower(), g["w2"].lower()
        step = {"last": -1, "past": -1, "this": 0, "next": 1, "coming": 1}[r]
        if w == "week":
            return _week_of(ref + timedelta(weeks=step))
        if w == "weekend":
            monday, _ = _week_of(ref + timedelta(weeks=step))
            return monday + timedelta(days=5), monday + timedelta(days=6)
        if w == "month":
            first = _shift_months(ref.replace(day=1), step)
            return first, _month_last(first.year, first.month)
        if w == "year":
            return date(ref.year + step, 1, 1), date(ref.year + step, 12, 31)
        if w in _WEEKDAYS:
            wd = _WEEKDAYS[w]
            if step < 0:
                d = _weekday_before(ref, wd)
            else:
                d = ref + timedelta(days=(wd - ref.weekday()) % 7 or (7 if step > 0 else 0))
            return d, d
        name = "fall" if w == "autumn" else w
        if step < 0:
            return _latest_season(ref, name, ended=True)
        if step == 0:
            return _season(name, ref.year - (1 if name == "winter" and ref.month <= 2 else 0))
        for y in (ref.year, ref.year + 1):
            first, last = _season(name, y)
            if first > ref:
                return first, last
        return None
    if g["inmon"]:
        return _latest_month(ref, _MONTHS[g["m3"].lower()])
    return _latest_season(ref, g["s4"].lower(), ended=False)


def _apply_offset(prefix: str, first: date, last: date) -> tuple[int, date, date] | None:
    """If ``prefix`` ends with an offset ("two weeks before "), the shifted window and the
    number of characters the offset takes; else None."""
    m = _OFFSET.search(prefix[-_TAIL:])  # the offset ends right before the date: a short tail suffices
    if not m:
        return None
    sign = -1 if m.group("dir").lower() == "before" else 1
    anchor = first if sign < 0 else last
    if m.group("wd"):
        wd = _WEEKDAYS[m.group("wd").lower()]
        d = _weekday_before(anchor, wd) if sign < 0 else anchor + timedelta(days=(wd - anchor.weekday()) % 7 or 7)
        return len(m.group(0)), d, d
    unit = m.group("u2") or m.group("u")
    if unit.lower() == "weekend":
        sat = _weekday_before(anchor, 5) if sign < 0 else anchor + timedelta(days=(5 - anchor.weekday()) % 7 or 7)
        return len(m.group(0)), sat, sat + timedelta(days=1)
    lo, hi = _count(m.group("n")) if m.group("n") else (1, 1)
    if unit.lower().startswith("week") and not m.group("n"):
        # "the week before X": the seven days just before (after) X.
        a = anchor + timedelta(days=sign * 7)
        b = anchor + timedelta(days=sign)
        return len(m.group(0)), min(a, b), max(a, b)
    a, b = _units_back(anchor, unit, lo, hi, sign)
    return len(m.group(0)), a, b


def resolve(text: str, reference: float | None = None) -> list[TimeMention]:
    """Every time expression of ``text`` with the closed window it names, in text order.

    Relative expressions need ``reference`` (seconds since the epoch; its UTC date is
    "today") and are skipped without one. Offsets before a date ("the week before 3
    August, 2023") shift that date's window.
    """
    if not text or not _may_name_a_time(text):
        return []
    low = _lower(text)
    out: list[TimeMention] = []
    taken: list[tuple[int, int]] = []
    # Every absolute form holds a year: no year, no scan (the alternation is the slow part).
    for m in _ABSOLUTE.finditer(low) if _YEAR_GATE.search(low) else ():
        if m.group("yr") and not m.group("p5") and not _PREPOSITION.search(low, max(0, m.start() - _TAIL), m.start()):
            continue
        win = _absolute(m)
        if win is None:
            continue
        s, first, last = m.start(), win[0], win[1]
        shifted = _apply_offset(low[: m.start()], first, last)
        if shifted is not None:
            s, first, last = m.start() - shifted[0], shifted[1], shifted[2]
        out.append(TimeMention(text[s : m.end()], s, m.end(), first, last))
        taken.append((s, m.end()))
    ref = _ref_date(reference)
    if ref is not None:
        for m in _RELATIVE.finditer(low):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            if (m.group("inmon") or m.group("inseason")) and not _PREPOSITION.search(
                low, max(0, m.start() - _TAIL), m.start()
            ):
                continue
            win = _relative(m, ref)
            if win is not None:
                out.append(TimeMention(text[m.start() : m.end()], m.start(), m.end(), win[0], win[1], relative=True))
    out.sort(key=lambda t: t.start_char)
    return out


def event_window(text: str, reference: float | None) -> TimeWindow | None:
    """When the event a stored text tells of happened, if the text says: the window of its
    first time expression ("I ran a race last Saturday" -> that Saturday), else None (the
    caller keeps the session date)."""
    found = resolve(text, reference)
    return found[0].window if found else None


def query_window(query: str, reference: float | None = None) -> TimeWindow | None:
    """The window a question asks about, opened on one side by a direction word that
    governs its date ("after May 2023"), spanning two dates with "between A and B".
    Relative words are read against an explicit date the question names, else against
    ``reference``."""
    found = resolve(query, reference)
    if not found:
        return None
    anchor = next((f for f in found if not f.relative), None)
    if anchor is not None:
        # "last Friday on 23 January, 2022": relative to the question's own date, not to now.
        found = resolve(query, _ts(anchor.first))
    first = found[0]
    prefix = query[: first.start_char]
    if len(found) > 1 and _BETWEEN.search(prefix):
        return TimeWindow(first.window.start, found[1].window.end)
    gov = _GOVERNOR.search(prefix)
    win = first.window
    if gov is None:
        return win
    d = gov.group("dir").lower()
    # Open windows end (start) at the named period's edge instant.
    if d in ("before", "prior to"):
        return TimeWindow(None, win.start)
    if d in ("until", "till", "by", "through"):
        return TimeWindow(None, win.end)
    if d == "after":
        return TimeWindow(win.end, None)
    return TimeWindow(win.start, None)  # since, from
