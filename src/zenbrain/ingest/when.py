"""Dates in plans ("tomorrow", "next week", "on Friday", "in 3 days", "on 8 May 2025"),
resolved against the time the plan was said. Times are UTC (a message carries no time
zone); a day without a time of day means 09:00, "tonight" 20:00, "at 5pm" that hour."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from ..retrieval.query import parse_window

__all__ = ["resolve_when"]

_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3}
_UNITS = {"minute": 60.0, "hour": 3600.0, "day": 86400.0, "week": 7 * 86400.0, "month": 30 * 86400.0}

_IN = re.compile(r"\bin (\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r") (minute|hour|day|week|month)s?\b",
                 re.IGNORECASE)
_AT = re.compile(r"\bat (\d{1,2})(?::(\d{2}))? ?(am|pm)?\b", re.IGNORECASE)
_WEEKDAY = re.compile(r"\b(?:on |this |next |coming )?(" + "|".join(_WEEKDAYS) + r")\b", re.IGNORECASE)
_NEXT = re.compile(r"\bnext (week|weekend|month|year)\b|\bthis weekend\b|\btomorrow\b|\btonight\b|\bthis evening\b",
                   re.IGNORECASE)


def _at(day: datetime, text: str, default_hour: int) -> float:
    m = _AT.search(text)
    hour, minute = default_hour, 0
    if m:
        h = int(m.group(1))
        mins = int(m.group(2) or 0)
        ampm = (m.group(3) or "").lower()
        if ampm == "pm" and h < 12:
            h += 12
        elif ampm == "am" and h == 12:
            h = 0
        if 0 <= h < 24 and 0 <= mins < 60:
            hour, minute = h, mins
    return day.replace(hour=hour, minute=minute, second=0, microsecond=0).timestamp()


def resolve_when(text: str, ref: float) -> float | None:
    """The time a plan in ``text`` is for, or None when it names none. ``ref`` is when it was said."""
    now = datetime.fromtimestamp(ref, tz=UTC)
    m = _IN.search(text)
    if m:
        n_raw = m.group(1).lower()
        n = int(n_raw) if n_raw.isdigit() else _NUMBERS[n_raw]
        return ref + n * _UNITS[m.group(2).lower()]
    m = _NEXT.search(text)
    if m:
        word = m.group(0).lower()
        if word == "tomorrow":
            return _at(now + timedelta(days=1), text, 9)
        if word in ("tonight", "this evening"):
            return _at(now, text, 20)
        if word == "this weekend":
            return _at(now + timedelta(days=(5 - now.weekday()) % 7), text, 9)
        unit = m.group(1).lower()
        if unit == "week":
            return _at(now + timedelta(days=7 - now.weekday()), text, 9)  # next Monday
        if unit == "weekend":
            return _at(now + timedelta(days=(5 - now.weekday()) % 7 + 7), text, 9)
        if unit == "month":
            first = (now.replace(day=1) + timedelta(days=32)).replace(day=1)
            return _at(first, text, 9)
        return _at(now.replace(year=now.year + 1, month=1, day=1), text, 9)
    m = _WEEKDAY.search(text)
    if m:
        target = _WEEKDAYS.index(m.group(1).lower())
        ahead = (target - now.weekday()) % 7 or 7
        return _at(now + timedelta(days=ahead), text, 9)
    window = parse_window(text)
    if window is not None and window.start is not None:
        return _at(datetime.fromtimestamp(window.start, tz=UTC), text, 9)
    m = _AT.search(text)
    if m and (m.group(3) or m.group(2)):  # "at 5pm" alone: today, or tomorrow once past
        t = _at(now, text, 9)
        return t if t > ref else t + 86400.0
    return None
