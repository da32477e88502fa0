"""Copies out of the decoded-item cache share no container with the cached template."""

from __future__ import annotations

import copy
import json
import random

from zenbrain.storage.sqlite import _copy, _plan


def containers(value, out=None):
    out = [] if out is None else out
    if isinstance(value, (dict, list)):
        out.append(value)
        for v in value.values() if isinstance(value, dict) else value:
            containers(v, out)
    return out


def random_json(rng, depth=0):
    kind = rng.randrange(5 if depth < 4 else 3)
    if kind == 0:
        return rng.random()
    if kind == 1:
        return rng.choice([None, True, 3, "s"])
    if kind == 2:
        return []
    if kind == 3:
        return {f"k{i}": random_json(rng, depth + 1) for i in range(rng.randrange(4))}
    return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]


def test_a_planned_copy_is_a_deep_copy():
    rng = random.Random(3)
    for _ in range(3000):
        value = json.loads(json.dumps(random_json(rng)))
        got = _copy(value, _plan(value))
        assert got == copy.deepcopy(value)
        ids = {id(c) for c in containers(value)}
        assert not any(id(c) in ids for c in containers(got))


def reference_plan(value):
    """Where a JSON value nests containers, one level at a time (the plan's definition)."""
    if type(value) is dict:
        it = value.items()
    elif type(value) is list:
        it = enumerate(value)
    else:
        return False
    sub = [(k, reference_plan(v)) for k, v in it if type(v) in (dict, list)]
    return sub or None


def test_plans_match_their_definition():
    rng = random.Random(11)
    for _ in range(3000):
        value = random_json(rng)
        assert _plan(value) == reference_plan(value)

