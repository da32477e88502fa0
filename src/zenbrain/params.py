"""Parameters with declared legal bounds, checked when a params dataclass is built.

Usage::

    @dataclass(frozen=True)
    class DecayParams(Params):
        archive_threshold: float = bounded(0.1, 0.0, 1.0, "R at or below which decay() archives")

    DecayParams(archive_threshold=2.0)  # raises ConfigError naming the field and its bounds
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from .errors import ConfigError


def bounded(default: Any, lo: float | None, hi: float | None, doc: str = "") -> Any:
    """A dataclass field with a default, inclusive bounds and a one-line description."""
    return dataclasses.field(default=default, metadata={"bounds": (lo, hi), "doc": doc})


@dataclasses.dataclass(frozen=True)
class Params:
    """Base class: validates every field declared with ``bounded`` on construction."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            bounds = f.metadata.get("bounds")
            if bounds is None:
                continue
            value = getattr(self, f.name)
            lo, hi = bounds
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"{type(self).__name__}.{f.name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ConfigError(f"{type(self).__name__}.{f.name} must be finite, got {value!r}")
            if f.type in (int, "int") and int(value) != value:
                raise ConfigError(f"{type(self).__name__}.{f.name} must be a whole number, got {value!r}")
            if (lo is not None and value < lo) or (hi is not None and value > hi):
                raise ConfigError(
                    f"{type(self).__name__}.{f.name}={value!r} is outside its legal range [{lo}, {hi}]"
                )

    def replace(self, **changes: Any) -> Params:
        return dataclasses.replace(self, **changes)

    @classmethod
    def describe(cls) -> list[tuple[str, Any, tuple[float | None, float | None] | None, str]]:
        """(name, default, bounds, doc) for every field: used by docs and the CLI."""
        out = []
        for f in dataclasses.fields(cls):
            default = f.default if f.default is not dataclasses.MISSING else None
            out.append((f.name, default, f.metadata.get("bounds"), f.metadata.get("doc", "")))
        return out


__all__ = ["Params", "bounded"]
