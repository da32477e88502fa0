"""JSON of the SQLite columns (``storage.sqlite.codec``): orjson writes it, the standard
library what orjson cannot write the same way; either way the values read back unchanged."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from zenbrain.storage.sqlite.codec import decode, encode


def test_plain_values_are_written_by_orjson_compact_with_sorted_keys():
    # UTF-8 and the shortest float form: what the standard library writes as "\u00e9" and 1e-05.
    assert encode({"b": 1e-05, "a": "é", "c": [1, 2.5, True]}) == '{"a":"é","b":0.00001,"c":[1,2.5,true]}'


@pytest.mark.parametrize("value", [
    {"fsrs": {"due": 1_700_000_000.25, "stability": 3.1e-07, "reps": 3}, "copies": {"s0": 0.9999999999999999}},
    {"nested": [{"z": 1e300, "a": -0.0}], "text": "line\nbreak \"quoted\" \u2028 ✓"},
    {"none": None, "list": [None, 1]},
    {"big": 2**70, "neg": -(2**65)},
    {1: "int key", 3: "another"},
    {"nan": float("nan"), "inf": float("inf"), "ninf": -math.inf},
    {"np": np.float32(0.1), "i": np.int64(7), "b": np.bool_(True), "arr": np.arange(3)},
    [], {}, "null", 0.1,
])
def test_every_value_reads_back_as_the_standard_library_writes_it(value):
    text = encode(value)
    expect = json.loads(json.dumps(value, sort_keys=True, default=lambda v: v.tolist() if isinstance(v, np.ndarray)
                                   else v.item()))
    got = json.loads(text)  # (orjson, which decode uses first, reads integers beyond 64 bits as floats)
    assert json.dumps(got, sort_keys=True) == json.dumps(expect, sort_keys=True)  # NaN compares by its text


def test_nan_and_infinity_are_kept_not_written_as_null():
    got = decode(encode({"x": float("nan"), "y": [math.inf], "z": None}))
    assert math.isnan(got["x"]) and got["y"] == [math.inf] and got["z"] is None


@pytest.mark.parametrize("value", [
    {"a": None, "b": [{"c": None, "d": [1.0, float("nan")]}]},
    [None, ("x", "y"), (None, -math.inf)],
    {"n": None, "arr": np.array([0.5, np.inf])},
    {"n": None, "f": np.float32("nan")},
])
def test_a_non_finite_number_deep_beside_a_none_is_still_kept(value):
    text = encode(value)
    assert "NaN" in text or "Infinity" in text
