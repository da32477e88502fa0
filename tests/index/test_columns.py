"""Filter masks kept up to date row by row equal masks built afresh."""

from __future__ import annotations

import numpy as np
import pytest

from zenbrain.index.columns import LAYER_NAMES, Columns
from zenbrain.storage.base import Filter

FILTERS = [
    None,
    Filter(),
    Filter(include_archived=True),
    Filter(session_id="s1"),
    Filter(contexts=frozenset({"c1"}), kinds=frozenset({"fact"})),
    Filter(layers=frozenset({"semantic", "working"}), session_id="s2", event_after=30.0, event_before=400.0),
    Filter(ids=frozenset({"m3", "m40", "m77", "m500"})),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_patched_masks_equal_fresh_ones(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cols = Columns()
    ids: list[str] = []
    pos: dict[str, int] = {}

    def put(mid: str) -> None:
        old = pos.get(mid)
        if old is not None and rng.random() < 0.5:  # a new row version
            cols.kill(old)
            old = None
        if old is None:
            row = cols.append()
            ids.append(mid)
            pos[mid] = row
        cols.set(pos[mid], layer=LAYER_NAMES[int(rng.integers(0, len(LAYER_NAMES)))],
                 context=f"c{rng.integers(0, 3)}", session_id=rng.choice(["s1", "s2", None]),
                 kind=str(rng.choice(["fact", "episode"])), archived=bool(rng.random() < 0.2),
                 event_time=float(rng.integers(0, 500)), chash=0, dense=bool(rng.random() < 0.9))

    for i in range(600):
        put(f"m{i}")
    for step in range(40):
        for flt in FILTERS:
            for layer in (None, 3):
                for dense in (False, True):
                    got, count = cols.cached_mask(flt, ids, pos, layer=layer, dense=dense)
                    fresh = cols.mask(flt, ids, pos, layer=layer, dense=dense)
                    assert np.array_equal(got, fresh) and count == int(fresh.sum()), (step, flt, layer, dense)
        for _ in range(int(rng.integers(1, 12))):  # a few writes between searches
            r = rng.random()
            if r < 0.2:
                put(f"m{rng.integers(600, 700)}")  # new memories
            elif r < 0.3 and pos:
                cols.kill(pos.pop(str(rng.choice(list(pos)))))
            else:
                put(f"m{rng.integers(0, 600)}")
