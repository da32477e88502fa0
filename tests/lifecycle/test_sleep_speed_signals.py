"""episode_signals on Python floats agrees with the formula on array elements."""

from types import SimpleNamespace

import numpy as np

from zenbrain import dynamics
from zenbrain.lifecycle_common import LIMITS, META_REWARD, META_TD_ERROR
from zenbrain.lifecycle_sleep import episode_signals


def _reference(items, limits):
    n = len(items)
    reward, td = np.zeros(n), np.zeros(n)
    for k, it in enumerate(items):
        r = it.metadata.get(META_REWARD)
        out = it.state.get(dynamics.OUTCOMES)
        if isinstance(r, (int, float)) and not isinstance(r, bool):
            rv = float(r)
        elif isinstance(out, dict) and int(out.get("ok", 0)) + int(out.get("fail", 0)) > 0:
            ok, fail = int(out.get("ok", 0)), int(out.get("fail", 0))
            rv = ok / (ok + fail)
        else:
            rv = min(1.0, it.access_count / limits.reward_saturation)
        reward[k] = min(1.0, max(0.0, rv))
        t = it.metadata.get(META_TD_ERROR)
        if isinstance(t, (int, float)) and not isinstance(t, bool):
            td[k] = min(1.0, abs(float(t)))
        else:
            td[k] = abs(reward[k] - it.confidence)
    return reward, td


def test_episode_signals_match_the_elementwise_formula():
    rng = np.random.default_rng(0)
    items = []
    for k in range(400):
        meta, state = {}, {}
        c = k % 6
        if c == 0:
            meta[META_REWARD] = float(rng.uniform(-0.5, 1.5))
        elif c == 1:
            meta[META_REWARD] = True  # a bool is not a reward
            state[dynamics.OUTCOMES] = {"ok": int(rng.integers(0, 4)), "fail": int(rng.integers(0, 4))}
        elif c == 2:
            meta[META_TD_ERROR] = float(rng.uniform(-2, 2))
            meta[META_REWARD] = int(rng.integers(0, 2))
        elif c == 3:
            state[dynamics.OUTCOMES] = {"ok": 0, "fail": 0}
        elif c == 4:
            meta[META_REWARD] = float("nan")
        a, b = float(rng.uniform(0.1, 9)), float(rng.uniform(0.1, 9))
        items.append(SimpleNamespace(metadata=meta, state=state, access_count=int(rng.integers(0, 12)),
                                     confidence=a / (a + b)))
    got, ref = episode_signals(items, LIMITS), _reference(items, LIMITS)
    for x, y in zip(got, ref):
        assert x.dtype == np.float64 and x.shape == y.shape
        assert np.array_equal(x, y, equal_nan=True)
    empty = episode_signals([], LIMITS)
    assert empty[0].shape == (0,) and empty[1].shape == (0,)
