"""Input checks run before anything is written: a refused call changes nothing."""

from __future__ import annotations

import json
import math
from typing import Any

from .config import MAX_METADATA_BYTES
from .errors import ValidationError


def check_unicode(name: str, text: str) -> str:
    """``text`` if it can be stored as UTF-8: a lone surrogate (from a broken decoder, or
    ``\\ud800`` in JSON) cannot, and is refused before anything is written."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(f"{name} is not valid Unicode text: a lone surrogate at position {exc.start}") from None
    return text


def check_content(content: Any, max_chars: int) -> str:
    if not isinstance(content, str):
        raise ValidationError(f"content must be text (str), got {type(content).__name__}")
    if not content.strip():
        raise ValidationError("content is empty")
    if "\x00" in content:
        raise ValidationError("content contains a NUL character")
    if len(content) > max_chars:
        raise ValidationError(f"content is {len(content)} characters; the limit is {max_chars}")
    return check_unicode("content", content)


def check_number(name: str, value: Any, lo: float | None = None, hi: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"{name} must be a number, got {_short(value)}")
    try:
        value = float(value)
    except OverflowError:  # an int beyond float range
        raise ValidationError(f"{name} is too large, got an integer of {len(str(abs(value)))} digits") from None
    if not math.isfinite(value):
        raise ValidationError(f"{name} must be finite, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValidationError(f"{name}={value} is outside [{lo}, {hi}]")
    return value


def _check_json_value(path: str, value: Any, depth: int = 0) -> None:
    if depth > 8:
        raise ValidationError(f"metadata is nested too deeply at {path}")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        check_unicode(path, value)
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"{path} is not finite ({value!r})")
        return
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:  # what JSON readers and SQLite hold exactly
            raise ValidationError(f"{path} is an integer outside the 64-bit range")
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_json_value(f"{path}[{i}]", v, depth + 1)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValidationError(f"metadata keys must be strings; {path} has {k!r}")
            check_unicode(f"a key of {path}", k)
            _check_json_value(f"{path}.{k}", v, depth + 1)
        return
    raise ValidationError(f"{path} has a value of type {type(value).__name__}, which is not JSON")


def check_metadata(metadata: Any) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise ValidationError(f"metadata must be a dict, got {type(metadata).__name__}")
    _check_json_value("metadata", metadata)
    size = len(json.dumps(metadata))
    if size > MAX_METADATA_BYTES:
        raise ValidationError(f"metadata is {size} bytes as JSON; the limit is {MAX_METADATA_BYTES}")
    return dict(metadata)


def check_limit(name: str, value: Any, hi: int = 1_000_000) -> int | None:
    """An optional count: None, or an integer in [1, hi]."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
        raise ValidationError(f"{name} must be an integer in [1, {hi}] or None, got {_short(value)}")
    return value


def check_layers(layers: Any) -> list[Any] | None:
    """A layer or an iterable of layers (names or ``Layer``) as a list; parsing the
    names is ``Layer.parse``'s job."""
    if layers is None:
        return None
    if isinstance(layers, str) or hasattr(layers, "value"):
        return [layers]
    if isinstance(layers, (bytes, dict)) or not hasattr(layers, "__iter__"):
        raise ValidationError(f"layers must be a layer name or a list of them, got {_short(layers)}")
    return list(layers)


def _short(value: Any) -> str:
    """A value for an error message, cut short (a huge integer or string stays readable)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1 or k > 1000:
        raise ValidationError(f"k must be an integer in [1, 1000], got {_short(k)}")
    return k
