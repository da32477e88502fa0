"""Parameter fields and their descriptions name only what exists."""

from __future__ import annotations

import dataclasses

from zenbrain.config import (
    EncodingParams,
    LayerParams,
    LifecycleLimits,
    LinkParams,
    MechanismParams,
    RecallParams,
)
from zenbrain.mechanisms.two_factor import TwoFactorParams


def _params_classes() -> list[type]:
    mech = [type(f.default_factory()) for f in dataclasses.fields(MechanismParams)]  # type: ignore[misc]
    return [*mech, RecallParams, EncodingParams, LinkParams, LayerParams, LifecycleLimits]


def test_no_params_class_keeps_the_dead_alpha_boost_field():
    for cls in _params_classes():
        assert "alpha_boost" not in {f.name for f in dataclasses.fields(cls)}, cls.__name__


def test_the_recall_boost_field_describes_itself_by_its_own_name():
    (doc,) = [d for name, _, _, d in TwoFactorParams.describe() if name == "boost_alpha"]
    assert "boost_alpha" in doc
