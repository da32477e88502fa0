"""Input checks run before anything is written: a refused call changes nothing."""

from __future__ import annotations

import json
import math
from typing import Any

from .config import MAX_METADATA_BYTES
from .errors import ValidationError


def check_content(content: Any, max_chars: int) -> str:
    if not isinstance(content, str):
        raise ValidationError(f"content must be text (str), got {type(content).__name__}")
    if not content.strip():
        raise ValidationError("content is empty")
    if "\x00" in content:
        raise ValidationError("content contains a NUL character")
    if len(content) > max_chars:
        raise ValidationError(f"content is {len(content)} characters; the limit is {max_chars}")
    return content


def check_number(name: str, value: Any, lo: float | None = None, hi: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValidationError(f"{name} must be finite, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValidationError(f"{name}={value} is outside [{lo}, {hi}]")
    return value


def _check_json_value(path: str, value: Any, depth: int = 0) -> None:
    if depth > 8:
        raise ValidationError(f"metadata is nested too deeply at {path}")
    if value is None or isinstance(value, (bool, str)):
        return
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValidationError(f"{path} is not finite ({value!r})")
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_json_value(f"{path}[{i}]", v, depth + 1)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValidationError(f"metadata keys must be strings; {path} has {k!r}")
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


def check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1 or k > 1000:
        raise ValidationError(f"k must be an integer in [1, 1000], got {k!r}")
    return k
