"""The small formulas that carry one mechanism's output into another's input."""

from __future__ import annotations

import numpy as np
import pytest

from zenbrain.errors import ValidationError
from zenbrain.mechanisms import emotional, sleep_selection
from zenbrain.pma import triple_copy

DAY = 86400.0


def test_trace_factor_is_the_strength_ratio_and_favours_weak_memories():
    assert sleep_selection.trace_factor(old_strength=0.6, new_strength=0.7) == pytest.approx(7 / 6)
    assert sleep_selection.trace_factor(old_strength=0.6, new_strength=0.55) == pytest.approx(11 / 12)
    gains = sleep_selection.trace_factor(old_strength=np.array([0.3, 0.9]), new_strength=np.array([0.4, 1.0]))
    assert gains[0] > gains[1] > 1.0  # the same Delta_LTP helps the weaker trace more
    with pytest.raises(ValidationError):
        sleep_selection.trace_factor(old_strength=0.0, new_strength=0.1)


def test_rescale_scales_the_copies_and_continues_the_deep_copy():
    st = triple_copy.consolidate(triple_copy.encode(s0=0.6, now=0.0), now=2 * DAY, amount=1.0)
    before = triple_copy.evaluate(st, now=3 * DAY)
    new = triple_copy.rescale(st, factor=0.5, now=3 * DAY)
    after = triple_copy.evaluate(new, now=3 * DAY)
    assert new.s0 == pytest.approx(0.3) and new.deep_target == pytest.approx(st.deep_target * 0.5)
    assert after.fast == pytest.approx(before.fast * 0.5) and after.medium == pytest.approx(before.medium * 0.5)
    assert after.deep == pytest.approx(before.deep)  # the deep copy bends towards its new target, no jump
    assert triple_copy.rescale(st, factor=10.0, now=3 * DAY).s0 == 1.0


def test_encoding_multiplier_from_stored_fields_equals_the_tag():
    for text in ("The terrible car accident left me terrified!", "Don't forget the passport deadline",
                 "The car was parked near the office."):
        t = emotional.tag(text)
        m = emotional.encoding_multiplier(arousal=t.arousal, significance=t.significance)
        assert m == pytest.approx(t.encoding_multiplier)
