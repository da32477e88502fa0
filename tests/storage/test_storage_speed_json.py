"""The JSON columns' fast codec reads back exactly what the json module would."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

import numpy as np
import pytest

from zenbrain.storage import json_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from storage_helpers import P1, make_item, put


def same(a, b) -> bool:
    """Equal values of equal types, NaN equal to NaN, -0.0 apart from 0.0."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def random_float(rng: random.Random) -> float:
    kind = rng.randrange(6)
    if kind == 0:
        return rng.random()
    if kind == 1:
        return rng.uniform(-1e6, 1e6)
    if kind == 2:
        return float(np.frombuffer(rng.randbytes(8), dtype=np.float64)[0])  # any bit pattern
    if kind == 3:
        return rng.choice([0.0, -0.0, 1e-5, 1e16, 1e22, 5e-324, 1.7976931348623157e308, 0.1, 1 / 3])
    if kind == 4:
        return float(np.float32(rng.random()))
    return rng.randint(-10**6, 10**6) / 1000


def random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return random_float(rng)
    if kind == 1:
        return rng.choice([0, 1, -1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**30])
    if kind == 2:
        return rng.choice(["", "plain", "é ü 漢字", "\u2028", "quote \" and \\ slash", "null", "\ud800", "1234567890123456789012"])
    if kind == 3:
        return rng.choice([None, True, False])
    if kind == 4:
        return rng.choice([float("nan"), float("inf"), -float("inf"), 1.5])
    if kind == 5:
        return np.float64(rng.random())
    if kind in (6, 7):
        return {f"k{rng.randrange(50)}{rng.choice(['', 'é', 'Z', '_'])}": random_value(rng, depth + 1) for _ in range(rng.randrange(6))}
    return [random_value(rng, depth + 1) for _ in range(rng.randrange(5))] + ([] if rng.random() < 0.5 else [(1, 2.5)])


def test_encoded_text_decodes_as_the_json_modules_text_does():
    rng = random.Random(7)
    for _ in range(20000):
        value = random_value(rng)
        want = json.loads(json.dumps(value, sort_keys=True))
        assert same(json.loads(json_text.encode(value)), want)
        assert same(json_text.decode(json_text.encode(value)), want)
        assert same(json_text.decode(json.dumps(value, sort_keys=True)), want)


def test_lenient_encoding_converts_what_json_converts_with_float():
    rng = random.Random(8)
    values = [np.float32(0.1), np.int64(3), np.bool_(True), np.float32("nan"), np.array(2.5)]
    for _ in range(2000):
        value = {"a": rng.choice(values), "b": random_value(rng), "c": [rng.choice(values), None]}
        want = json.loads(json.dumps(value, sort_keys=True, default=float))
        assert same(json_text.decode(json_text.encode_lenient(value)), want)


def test_what_json_refuses_is_refused_alike():
    for bad in ({"s": {1, 2}}, {1: "int key", "a": 1}, {"x": object()}):
        with pytest.raises((TypeError, ValueError)) as old:
            json.dumps(bad, sort_keys=True)
        with pytest.raises(type(old.value)):
            json_text.encode(bad)


def test_decoding_agrees_on_texts_orjson_reads_differently():
    for text in ['{"a": 18446744073709551616}', '{"a": -9223372036854775809}', '{"a": 123456789012345678901234567890}',
                 '{"a": NaN, "b": Infinity}', '{"a": 1e400}', '"\\ud800"', '{"a": 9223372036854775807}', '[-0, -0.0, 1E5]']:
        assert same(json_text.decode(text), json.loads(text)), text


def test_rows_written_in_the_old_text_form_read_back(tmp_path):
    from zenbrain.storage.sqlite import SQLiteStore

    s = SQLiteStore(str(tmp_path / "old.db"), embedder_name="m", dim=4)
    item = make_item(P1, "old row", metadata={"entities": ["Ann"], "n": 10**30}, state={"due_at": 5.0, "x": float("nan")})
    put(s, [item])
    con = s.raw_connection()
    # The text json.dumps writes (spaces, \u escapes), as rows of earlier versions hold it.
    con.execute("UPDATE memories SET metadata=?, state=? WHERE id=?",
                (json.dumps({"entities": ["Änn"], "n": 10**30}, sort_keys=True),
                 json.dumps({"due_at": 5.0, "x": float("nan")}, sort_keys=True), item.id))
    s.close()
    s = SQLiteStore(str(tmp_path / "old.db"), embedder_name="m", dim=4)
    got = s.get(P1, [item.id])[0]
    assert got.metadata == {"entities": ["Änn"], "n": 10**30} and type(got.metadata["n"]) is int
    assert got.state["due_at"] == 5.0 and math.isnan(got.state["x"])
    s.close()


def test_small_fractions_with_long_digit_runs_decode_as_json_does():
    rng = random.Random(11)
    texts = ['{"s": 0.0018713923623798474, "n": 12345678901234567890}', '[10.0000000000000000001]',
             '[0.0000000000000000001234567890123456789]', '["0.00187139236237984741234"]', '[-0.0018713923623798474]',
             '[0.00000000000000000000012e5, 1.0000000000000000000]', '{"a": 0.00000000000000000001, "b": [1e-21]}']
    texts += [json.dumps([rng.random() * 10.0 ** -rng.randrange(1, 30) for _ in range(5)]) for _ in range(3000)]
    for text in texts:
        assert same(json_text.decode(text), json.loads(text)), text
    for text, possible in [('{"s": 0.0018713923623798474}', False), ('[-0.0018713923623798474, 0.5]', False),
                           ('[0.0018713923623798474, 12345678901234567890]', True), ('[10.0018713923623798474]', True),
                           ('[1.0000000000000000001]', True), ('[0.0000000000000000000]', True),
                           ('[0.000000000000000000123456789012345678]', True), ('[1234567890123456789]', True)]:
        assert json_text._long_integer_possible(text.encode()) is possible, text
