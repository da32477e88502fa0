"""JSON forms shared by the CLI and the servers."""

import json
import math

import numpy as np
import pytest

from zenbrain import Layer, ValidationError
from zenbrain.serialize import json_safe, parse_time


def test_json_safe_makes_plain_json():
    value = {"a": np.float32(0.5), "b": (1, np.int64(2)), "c": {Layer.SEMANTIC}, "d": float("nan"), 3: math.inf}
    out = json_safe(value)
    assert out == {"a": 0.5, "b": [1, 2], "c": ["semantic"], "d": None, "3": None}
    json.dumps(out, allow_nan=False)  # valid strict JSON


def test_parse_time_reads_iso_and_epoch_seconds():
    assert parse_time("1683453600") == 1683453600.0
    assert parse_time("2023-05-07T10:00:00Z") == parse_time("2023-05-07T10:00:00") == 1683453600.0
    with pytest.raises(ValidationError, match="--when must be ISO 8601"):
        parse_time("yesterday", what="--when")
