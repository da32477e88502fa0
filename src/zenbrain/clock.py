"""Injected clocks: every time-dependent computation asks one of these for "now".

Time is a float of seconds since the Unix epoch (UTC). A ``SimulatedClock`` lets an
experiment age a memory by 60 days in microseconds.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

SECOND = 1.0
MINUTE = 60.0
HOUR = 3600.0
DAY = 86400.0


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the Unix epoch."""
        ...


class SystemClock:
    """Wall-clock time."""

    def now(self) -> float:
        return time.time()

    def __repr__(self) -> str:
        return "SystemClock()"


class SimulatedClock:
    """A clock that only moves when told to."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = float(start)

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float = 0.0, *, days: float = 0.0, hours: float = 0.0, minutes: float = 0.0) -> float:
        step = seconds + days * DAY + hours * HOUR + minutes * MINUTE
        if step < 0:
            raise ValueError("a clock cannot go backwards")
        self._now += step
        return self._now

    def set(self, t: float) -> None:
        self._now = float(t)

    def __repr__(self) -> str:
        return f"SimulatedClock(now={self._now})"


__all__ = ["DAY", "HOUR", "MINUTE", "SECOND", "Clock", "SimulatedClock", "SystemClock"]
