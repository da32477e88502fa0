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


def test_a_states_due_time_lives_in_its_column_only(tmp_path):
    from storage_helpers import P1, make_item, put

    from zenbrain.storage.sqlite import SQLiteStore
    from zenbrain.storage.sqlite.codec import state_from_row, state_row

    s = SQLiteStore(str(tmp_path / "s.db"), embedder_name="m", dim=4)
    due = make_item(P1, "due", id="due", state={"due_at": 1700000000.5, "priority": 0.5})
    odd = make_item(P1, "odd", id="odd", state={"due_at": "soon"})
    put(s, [due, odd])
    rows = dict(s.raw_connection().execute("SELECT id, state FROM memories"))
    assert "due_at" not in rows["due"] and '"soon"' in rows["odd"]  # a non-number stays in the JSON
    assert s.raw_connection().execute("SELECT due_at FROM memories WHERE id='due'").fetchone()[0] == 1700000000.5
    got = {i.id: i.state for i in s.get(P1, ["due", "odd"])}
    assert got == {"due": {"due_at": 1700000000.5, "priority": 0.5}, "odd": {"due_at": "soon"}}
    with s.transaction() as tx:
        tx.update_states(P1, {"due": {"due_at": 1800000000.0}})
    assert s.get(P1, ["due"])[0].state == {"due_at": 1800000000.0}
    # A row written before keeps due_at in its JSON as well: read as it was.
    assert state_from_row('{"due_at":1.5,"x":1}', 1.5) == {"due_at": 1.5, "x": 1}
    assert state_row({"x": 1}) == (None, '{"x":1}')
    s.close()
