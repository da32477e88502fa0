import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError
from zenbrain.mechanisms import ib_budget as ib
from zenbrain.mechanisms.ib_budget import IBParams

FAST = settings(derandomize=True, max_examples=50, deadline=None, database=None)


# ---- golden values -------------------------------------------------------------------

def test_gain_and_cost_golden():
    # gain = 0.4 * 5/10 + 0.3 * 0.8 + 0.3 * (1 - 45/90) = 0.2 + 0.24 + 0.15
    g = ib.gain(retrievals=5, confidence=0.8, days_since_access=45)
    assert float(g) == pytest.approx(0.59)
    # cost = 0.4 * 2500/5000 + 0.3 * 10/20 + 0.3 * 0.2 = 0.2 + 0.15 + 0.06
    c = ib.cost(chars=2500, entities=10, dispersion=0.2)
    assert float(c) == pytest.approx(0.41)


def test_saturation_and_clipping():
    assert float(ib.gain(retrievals=1000, confidence=2.0, days_since_access=-5)) == pytest.approx(1.0)
    assert float(ib.gain(retrievals=0, confidence=0.0, days_since_access=1000)) == 0.0
    assert float(ib.cost(chars=10**7, entities=10**4, dispersion=9.0)) == pytest.approx(1.0)


def test_recency_is_measured_in_days():
    # A memory untouched for 80 days has a small recency gain; the production bug (freshness 0-1
    # passed as days) would have made it 0.3 * (1 - 0.x/90) ~ 0.3 regardless.
    fresh = float(ib.gain(retrievals=0, confidence=0.0, days_since_access=0))
    stale = float(ib.gain(retrievals=0, confidence=0.0, days_since_access=80))
    assert fresh == pytest.approx(0.3)
    assert stale == pytest.approx(0.3 * (1 - 80 / 90))


def test_evaluate_keeps_by_context():
    # gain 0.59, cost 0.41: finance 0.8 * 0.59 = 0.472 > 0.41 keeps; strategy 0.3 * 0.59 = 0.177 drops;
    # unknown context uses 0.5 -> 0.295 drops
    d = ib.evaluate(
        retrievals=5, confidence=0.8, days_since_access=45, chars=2500, entities=10, dispersion=0.2,
        contexts=["finance", "Strategy", "holidays"],
    )
    assert d.keep.tolist() == [True, False, False]
    np.testing.assert_allclose(d.beta, [0.8, 0.3, 0.5])
    np.testing.assert_allclose(d.gain, [0.59] * 3)
    np.testing.assert_allclose(d.cost, [0.41] * 3)
    assert d.n_kept == 1


def test_beta_overrides_and_single_context():
    assert ib.context_beta("people") == 0.6
    assert ib.context_beta("work", betas={"Work": 0.9}) == 0.9
    assert ib.context_beta("unknown") == 0.5
    d = ib.evaluate(retrievals=[0, 10], confidence=[0.5, 1.0], days_since_access=[0, 0], chars=[100, 100],
                    entities=[0, 0], contexts="operations")
    np.testing.assert_allclose(d.beta, [0.4, 0.4])
    # 0.4 * (0.15 + 0.3) = 0.18 > 0.008; 0.4 * 1.0 = 0.4 > 0.008
    assert d.keep.tolist() == [True, True]


def test_vectorised_many_memories():
    rng = np.random.default_rng(3)
    n = 5000
    d = ib.evaluate(
        retrievals=rng.integers(0, 20, n), confidence=rng.uniform(0, 1, n), days_since_access=rng.uniform(0, 200, n),
        chars=rng.integers(10, 8000, n), entities=rng.integers(0, 30, n), dispersion=rng.uniform(0, 1, n),
        contexts=[("finance", "people", "operations", "strategy", "x")[i % 5] for i in range(n)],
    )
    assert d.keep.shape == (n,) and 0 < d.n_kept < n
    # retention falls with beta, as in the authors' benchmark ordering
    kept = [d.keep[i::5].mean() for i in range(4)]
    assert kept == sorted(kept, reverse=True)


# ---- properties ----------------------------------------------------------------------

@FAST
@given(r=st.floats(0, 100), c=st.floats(0, 1), d=st.floats(0, 1000), ch=st.floats(0, 1e5), e=st.floats(0, 100),
       disp=st.floats(0, 1), ctx=st.sampled_from(["finance", "people", "operations", "strategy", "misc"]))
def test_gain_cost_in_unit_interval_and_rule(r, c, d, ch, e, disp, ctx):
    res = ib.evaluate(retrievals=r, confidence=c, days_since_access=d, chars=ch, entities=e, dispersion=disp,
                      contexts=ctx)
    assert 0.0 <= res.gain[0] <= 1.0 + 1e-12 and 0.0 <= res.cost[0] <= 1.0 + 1e-12
    assert bool(res.keep[0]) == (res.gain[0] * res.beta[0] > res.cost[0])


@FAST
@given(d1=st.floats(0, 500), d2=st.floats(0, 500), r=st.floats(0, 20), c=st.floats(0, 1))
def test_gain_never_rises_with_staleness(d1, d2, r, c):
    lo, hi = sorted((d1, d2))
    assert ib.gain(retrievals=r, confidence=c, days_since_access=hi) <= ib.gain(
        retrievals=r, confidence=c, days_since_access=lo
    )


# ---- params --------------------------------------------------------------------------

@pytest.mark.parametrize(
    "kwargs",
    [{"w_retrievals": 0.6}, {"w_length": 0.5}, {"beta_default": -0.1}, {"recency_horizon_days": 0.0},
     {"beta_finance": 11.0}],
)
def test_params_reject_bad_values(kwargs):
    with pytest.raises(ConfigError):
        IBParams(**kwargs)


def test_custom_beta_default():
    p = IBParams(beta_default=2.0)
    assert ib.context_beta("anything", params=p) == 2.0
