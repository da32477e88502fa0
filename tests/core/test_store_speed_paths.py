"""The batch paths of store agree exactly with the per-item code they replace."""

from __future__ import annotations

import numpy as np
import pytest

from zenbrain import encoding


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (1, 2), (5, 3), (40, 300), (300, 556)])
def test_top_links_is_the_per_row_argsort(dtype, shape):
    rng = np.random.default_rng(shape[1])
    sims = (np.round(rng.uniform(-1, 1, size=shape) * 8) / 8).astype(dtype)  # many ties
    out = encoding._top_links(sims)
    assert len(out) == shape[0]
    for row, (cols, vals) in enumerate(out):
        ref = np.argsort(-sims[row])[: encoding.LINKS_PER_ITEM]
        assert cols == ref.tolist()
        assert vals == [float(sims[row, j]) for j in ref]
