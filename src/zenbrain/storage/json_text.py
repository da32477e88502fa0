"""JSON text of the store's JSON columns (metadata, state, history details, kv values).

orjson encodes and decodes several times faster than the json module. It is used only
where its result is certain to read back as the json module's would; everything else
(NaN and infinities, which orjson writes as null; integers beyond 64 bits; keys that are
not strings; lone surrogates; types orjson knows but json does not) goes through json as
before. The text itself may differ (no spaces, UTF-8 instead of \\u escapes, ``1e-5``
instead of ``1e-05``); json and orjson read both forms alike, so rows written by either
stay readable.
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; json alone still works
    orjson = None

_json_encode = json.JSONEncoder(sort_keys=True).encode
_json_encode_lenient = json.JSONEncoder(sort_keys=True, default=float).encode
_json_decode = json.loads

# A run of 19 digits may be an integer orjson would read as a float (it reads integers
# outside [-2**63, 2**64) that way); a float's repr never has more than 17 digits.
_DIGIT_RUN = b"0" * 19
_DIGITS_ONLY = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_NUMBER_CHARS = frozenset(b"0123456789.")


def _long_integer_possible(raw: bytes) -> bool:
    """Whether the UTF-8 text ``raw`` has a run of 19 digits that may be an integer. A run
    right after "0." holding at most 17 significant digits (the repr of a small float,
    0.0018713923623798474) is the fraction of a float token, which both readers read alike."""
    digits = raw.translate(_DIGITS_ONLY)
    i = digits.find(_DIGIT_RUN)
    while i >= 0:
        end = digits.find(b" ", i + 19)
        if end < 0:
            end = len(digits)
        if not (raw[i - 2 : i] == b"0." and (i < 3 or raw[i - 3] not in _NUMBER_CHARS)
                and 0 < len(raw[i:end].lstrip(b"0")) <= 17):
            return True
        i = digits.find(_DIGIT_RUN, end)
    return False


def _plain(value: Any) -> bool:
    """Whether orjson writes no null in place of a value: only None, str, int, finite float,
    and dicts, lists and tuples of them (anything else is left to json)."""
    t = type(value)
    if t is float:
        return value - value == 0.0  # false for NaN and infinities
    if t is str or t is int or t is bool or value is None:
        return True
    if t is dict:
        value = value.values()
    elif t is not list and t is not tuple:
        return False
    for v in value:
        if not _plain(v):
            return False
    return True


def _float_subclass(value: Any) -> float:
    """What json writes for a float subclass (numpy.float64): its float value."""
    if isinstance(value, float):
        return float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


if orjson is not None:
    _OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
    _dumps, _loads, _EncodeError, _DecodeError = orjson.dumps, orjson.loads, orjson.JSONEncodeError, orjson.JSONDecodeError

    def encode(value: Any) -> str:
        """``json.dumps(value, sort_keys=True)``, or text that decodes to the same value."""
        try:
            out = _dumps(value, default=_float_subclass, option=_OPTS)
        except _EncodeError:
            return _json_encode(value)
        # orjson writes NaN and infinities as null; the walk (a few us) costs less than json.
        if b"null" in out and not _plain(value):
            return _json_encode(value)
        return out.decode()

    def encode_lenient(value: Any) -> str:
        """``json.dumps(value, sort_keys=True, default=float)``, or text that decodes alike."""
        try:
            out = _dumps(value, default=float, option=_OPTS)
        except (_EncodeError, TypeError, ValueError):
            return _json_encode_lenient(value)
        if b"null" in out and not _plain(value):
            return _json_encode_lenient(value)
        return out.decode()

    def decode(text: str) -> Any:
        """``json.loads(text)``."""
        # No run of 19 digits fits in a shorter text.
        if len(text) >= 19:
            raw = text.encode("utf-8", "surrogatepass")
            if _DIGIT_RUN in raw.translate(_DIGITS_ONLY) and _long_integer_possible(raw):
                return _json_decode(text)
        try:
            return _loads(text)
        except _DecodeError:  # NaN, Infinity, lone surrogates, ...: json reads them
            return _json_decode(text)

else:  # pragma: no cover
    encode = _json_encode
    encode_lenient = _json_encode_lenient
    decode = _json_decode
