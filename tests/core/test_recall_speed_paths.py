"""The scalar and direct paths of recall agree exactly with the general formulas they replace."""

from __future__ import annotations

import numpy as np
import pytest

from zenbrain import dynamics, reinforcement
from zenbrain.errors import ValidationError
from zenbrain.mechanisms import two_factor
from zenbrain.model import Kind, Layer, MemoryItem
from zenbrain.pma import triple_copy


def _edge_samples() -> list[tuple[float, float]]:
    rng = np.random.default_rng(7)
    w = np.concatenate([rng.random(3000) * 3, rng.random(500) * 1e-3, [0.0, -0.0, -1.0, 0.5, 1e-300, 2.0]])
    v = np.concatenate([rng.random(3000), rng.random(500) * 0.02, [0.01, 0.3, 1e-9, 1.0, 0.01, 0.0]])
    return [(float(a), float(b)) for a, b in zip(w, v)]


@pytest.mark.parametrize("params", [two_factor.DEFAULTS,
                                    two_factor.TwoFactorParams(boost_alpha=0.7, boost_half_weight=0.3,
                                                               boost_importance_exponent=0.37, min_variance=0.05)])
def test_recall_boost_scalar_path_matches_general(params):
    for w, var in _edge_samples():
        assert reinforcement._recall_boost(w, var, params) == two_factor.recall_boost(w, var, params=params)


def test_recall_boost_non_float_inputs_take_general_path():
    tp = two_factor.DEFAULTS
    assert reinforcement._recall_boost(1, 1, tp) == two_factor.recall_boost(1, 1, params=tp)
    assert np.isnan(reinforcement._recall_boost(float("nan"), 0.5, tp)) == np.isnan(
        two_factor.recall_boost(float("nan"), 0.5, params=tp))


def _item(n: int, state: dict, strength: float = 0.7, last_access: float = 1.7e9) -> MemoryItem:
    return MemoryItem(id=f"m{n}", user_id="u", agent_id="a", session_id=None, context="default",
                      layer=Layer.EPISODIC, kind=Kind.FACT, content="x", content_hash="h", metadata={},
                      created_at=1.6e9, updated_at=1.6e9, event_time=None, last_access=last_access,
                      strength=strength, state=state)


def test_copy_composite_matches_evaluate_many():
    rng = np.random.default_rng(3)
    now = 1.7e9 + 5 * 86400
    items = []
    for n in range(200):
        if n % 7 == 0:
            items.append(_item(n, {}, strength=float(rng.random()), last_access=1.7e9 - rng.random() * 1e6))
            continue
        s = triple_copy.CopyState(s0=float(rng.random()), anchor=1.7e9 - float(rng.random()) * 1e6,
                                  deep_base=float(rng.random()), deep_target=float(rng.random()),
                                  deep_anchor=1.7e9 - float(rng.random()) * 2e6)
        d = s.to_dict()
        if n % 5 == 0:
            d = {k: int(v) if k == "anchor" else v for k, v in d.items()}  # ints read as floats
        items.append(_item(n, {dynamics.COPIES: d}))
    for params in (triple_copy.DEFAULT_PARAMS, triple_copy.TripleCopyParams(deep_initial_share=0.4, tau_fast_s=600.0)):
        states = [triple_copy.CopyState.from_dict(i.state[dynamics.COPIES]) if dynamics.COPIES in i.state
                  else triple_copy.encode(s0=min(1.0, max(0.0, i.strength)), now=i.last_access, params=params)
                  for i in items]
        want = np.asarray(triple_copy.evaluate_many(states, now=now, params=params).composite, dtype=float)
        got = np.asarray(dynamics._copy_composite(items, now, params), dtype=float)
        assert np.array_equal(got, want)


def test_decoded_context_is_decode_vec_and_read_only():
    v = np.linspace(-1, 1, 32).astype(np.float32)
    text = dynamics.encode_vec(v)
    a = reinforcement._decode_ctx(text)
    b = reinforcement._decode_ctx(text)
    assert a is b
    assert np.array_equal(a, dynamics.decode_vec(text)) and a.dtype == dynamics.decode_vec(text).dtype
    with pytest.raises(ValueError):
        a[0] = 3.0


def test_edges_among_subset_matches_store_query(tmp_path):
    from zenbrain.model import Edge
    from zenbrain.storage.sqlite import SQLiteStore

    store = SQLiteStore(str(tmp_path / "e.db"), embedder_name="t", dim=4)
    part = ("u", "a")
    ids = [f"n{i}" for i in range(8)]
    edges = [Edge(ids[i], ids[j], rel, 0.1 * (i + j), 0.5, i, 1.0)
             for i in range(8) for j in range(8) if i != j and (i * j) % 3 != 1
             for rel in ("co_recall", "contradicts")[: 1 + (i + j) % 2]]
    with store.transaction() as tx:
        tx.put_edges(part, edges)
    pool = ids[:6]
    read = reinforcement.EdgesAmong(frozenset(pool), store.edges_among(part, pool))
    key = lambda e: (e.src, e.dst, e.relation)
    for sub in (ids[:2], ids[1:5], ids[:6], [ids[5], ids[0], ids[3]]):
        assert sorted(read.among(sub), key=key) == sorted(store.edges_among(part, sub), key=key)
    assert read.among([ids[0], ids[7]]) is None
    store.close()


def test_classify_remembered_equals_fresh():
    from zenbrain.retrieval import query

    for q in ("When did I move to Berlin?", "how do I install it", "what is my name", "in May 2023 what happened",
              "before 8 May, 2023 who called", "the latest news", "hello"):
        assert query.classify(q) == query._classify.__wrapped__(q)
        assert query.classify(q) is query.classify(q)


@pytest.mark.parametrize("module", ["zenbrain.dynamics", "zenbrain.mechanisms.ebbinghaus", "zenbrain.pma.triple_copy"])
def test_clip_ufunc_matches_np_clip(module):
    import importlib

    clip = importlib.import_module(module)._clip
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.normal(0.5, 1.0, 500), [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, 2.0]])
    for lo, hi in ((0.0, 1.0), (0.05, 36500.0), (-0.0, 0.0)):
        a, b = clip(x, lo, hi), np.clip(x, lo, hi)
        assert np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b))
        s, t = clip(np.asarray(0.3), lo, hi), np.clip(np.asarray(0.3), lo, hi)
        assert s == t and type(s) is type(t)


def test_pair_index_is_every_pair_row_by_row():
    for n in range(2, 7):
        ii, jj = reinforcement._pair_index(n)
        assert list(zip(ii.tolist(), jj.tolist())) == [(i, j) for i in range(n) for j in range(i + 1, n)]


def test_fsrs_datetime_is_fromtimestamp():
    from datetime import UTC, datetime

    from zenbrain.mechanisms import fsrs_schedule

    for t in (0.0, 1.7e9, 1703888000.123456, 1706785655.2958918):
        assert fsrs_schedule._dt(t) == datetime.fromtimestamp(t, tz=UTC)
        assert fsrs_schedule._dt(t).timestamp() == datetime.fromtimestamp(t, tz=UTC).timestamp()


def _reference_retrievability(items, now, mechanisms, ebb, copies):
    """dynamics.retrievability as written before its columns were gathered in one pass."""
    from zenbrain.clock import DAY
    from zenbrain.mechanisms import ebbinghaus

    n = len(items)
    core = np.fromiter((i.layer is Layer.CORE for i in items), dtype=bool, count=n)
    use_ebb, use_copies = mechanisms.on("ebbinghaus_decay"), mechanisms.on("triple_copy")
    if not use_ebb and not use_copies:
        return np.ones(n)
    r = np.zeros(n)
    if use_ebb:
        elapsed = np.maximum(0.0, (now - np.fromiter((i.last_access for i in items), float, n)) / DAY)
        r = np.asarray(ebbinghaus.retrievability(
            elapsed_days=elapsed, stability=np.fromiter((i.stability for i in items), float, n),
            arousal=np.fromiter((i.arousal for i in items), float, n),
            valence=np.fromiter((i.valence for i in items), float, n),
            significance=np.fromiter((float(i.state.get(dynamics.SIGNIFICANCE, 0.0)) for i in items), float, n),
            params=ebb), dtype=float)
    if use_copies:
        states = [triple_copy.CopyState.from_dict(i.state[dynamics.COPIES]) if dynamics.COPIES in i.state
                  else triple_copy.encode(s0=min(1.0, max(0.0, i.strength)), now=i.last_access, params=copies)
                  for i in items]
        r = np.maximum(r, np.asarray(triple_copy.evaluate_many(states, now=now, params=copies).composite, dtype=float))
    return np.where(core, 1.0, np.clip(r, 0.0, 1.0))


@pytest.mark.parametrize("off", [(), ("triple_copy",), ("ebbinghaus_decay",), ("triple_copy", "ebbinghaus_decay")])
@pytest.mark.parametrize("with_core", [False, True])
def test_retrievability_matches_reference(off, with_core):
    from zenbrain.mechanisms import ebbinghaus
    from zenbrain.registry import Mechanisms

    rng = np.random.default_rng(5)
    now = 1.7e9 + 40 * 86400
    items = []
    for n in range(150):
        state = {}
        if n % 6:
            state[dynamics.COPIES] = triple_copy.CopyState(
                s0=float(rng.random()), anchor=1.7e9 + float(rng.random()) * 3e6, deep_base=float(rng.random()),
                deep_target=float(rng.random()), deep_anchor=1.7e9 + float(rng.random()) * 3e6).to_dict()
        if n % 4 == 0:
            state[dynamics.SIGNIFICANCE] = float(rng.random())
        it = _item(n, state, strength=float(rng.random()), last_access=1.7e9 + float(rng.random()) * 3e6)
        it.stability = float(rng.random() * 30)
        it.arousal, it.valence = float(rng.random()), float(rng.random() * 2 - 1)
        if with_core and n % 9 == 0:
            it.layer = Layer.CORE
        items.append(it)
    mech = Mechanisms(disabled=frozenset(off))
    for ebb, copies in ((ebbinghaus.DEFAULTS, triple_copy.DEFAULT_PARAMS),
                        (ebbinghaus.EbbinghausParams(default_stability=4.0), triple_copy.TripleCopyParams(deep_initial_share=0.5))):
        for sub in (items, items[:1], items[:7], items[3:64]):
            got = dynamics.retrievability(sub, now, mech, ebb=ebb, copies=copies)
            want = _reference_retrievability(sub, now, mech, ebb, copies)
            assert got.dtype == want.dtype and np.array_equal(got, want)


def test_copy_state_from_dict_and_finite_checks():
    from zenbrain.errors import ValidationError

    d = {"s0": 1, "anchor": 1.7e9, "deep_base": np.float64(0.25), "deep_target": 0.5, "deep_anchor": 17, "x": 3}
    keys = ("s0", "anchor", "deep_base", "deep_target", "deep_anchor")
    got = triple_copy.CopyState.from_dict(d)
    assert got == triple_copy.CopyState(**{k: float(d[k]) for k in keys})
    assert all(type(getattr(got, k)) is float for k in keys)
    for q in (0.3, 1, np.float64(0.7), np.float32(2.0), True, -5.0):
        assert triple_copy._check_q(q) == float(min(1.0, max(0.0, q)))
    for bad in (float("nan"), float("inf"), np.float64("nan"), -np.inf):
        with pytest.raises(ValidationError):
            triple_copy._check_q(bad)
        with pytest.raises(ValidationError):
            triple_copy.encode(s0=0.5, now=bad)


def test_score_breakdown_positional_order():
    from zenbrain.model import ScoreBreakdown

    assert ScoreBreakdown(0.5, 0.25, 1.5, 0.75) == ScoreBreakdown(dense=0.5, lexical=0.25, layer_weight=1.5, fused=0.75)


def test_retrievability_weight_python_floats_match_numpy_scalars():
    rng = np.random.default_rng(9)
    r = np.concatenate([rng.random(5000), [0.0, 1.0, 1e-300, 0.5]])
    for floor in (0.0, 0.05, 0.3, 1 / 3):
        assert [float(floor + (1.0 - floor) * ri) for ri in r] == [float(floor + (1.0 - floor) * ri) for ri in r.tolist()]


def _co_update_reference(w, var, k, tag, amp, lock_on, tp):
    var_a = np.array(var, dtype=float)
    lock = np.asarray(two_factor.variance_lock(var_a)) if lock_on else np.zeros(len(w))
    w2, v2, k2 = two_factor.update(np.array(w, dtype=float), var_a, np.array(k), np.array(tag, dtype=float),
                                   np.array(amp, dtype=np.float32), lock, params=tp)
    return np.asarray(w2, dtype=float).tolist(), np.asarray(v2, dtype=float).tolist(), np.asarray(k2).tolist()


@pytest.mark.parametrize("lock_on", [True, False])
@pytest.mark.parametrize("tp", [two_factor.DEFAULTS,
                                two_factor.TwoFactorParams(learning_rate=0.37, lock_gate=0.9, maturation_rate=0.4,
                                                           maturation_decay=2.5, min_weight=0.2, max_weight=1.3)])
def test_co_update_float_path_matches_two_factor_update(lock_on, tp):
    rng = np.random.default_rng(11)
    n = 400
    w = (rng.random(n) * 3).tolist()
    var = np.concatenate([rng.random(n - 4) * 1.5, [0.0, 1.0, 0.01, 2.0]]).tolist()
    k = rng.integers(0, 50, n).tolist()
    tag = np.minimum(1.0, rng.random(n) * 1.2).tolist()
    amp = np.maximum(0.0, rng.normal(size=n).astype(np.float32)).tolist()  # float32 values, as the einsum gives
    fast = reinforcement._co_update(w, var, k, tag, amp, lock_on, tp)
    assert fast == _co_update_reference(w, var, k, tag, amp, lock_on, tp)
    assert all(type(x) is float for x in fast[0] + fast[1]) and all(type(x) is int for x in fast[2])


def test_co_update_non_finite_or_non_float_takes_general_path():
    tp = two_factor.DEFAULTS
    w, var, k, amp = [0.5, 1.0], [0.3, 0.5], [1, 2], [0.25, 0.875]
    for tag in ([float("nan"), 0.5], [np.float64(0.25), 0.5]):
        fast = reinforcement._co_update(w, var, k, tag, amp, True, tp)
        ref = _co_update_reference(w, var, k, tag, amp, True, tp)
        assert np.array_equal(np.array(fast[0]), np.array(ref[0]), equal_nan=True)
        assert fast[1:] == ref[1:]


@pytest.mark.parametrize("vp", [reinforcement.vmpfc.DEFAULTS, reinforcement.vmpfc.VmpfcParams(missing_context_pe=0.3)])
def test_context_pe_matches_prediction_error(vp):
    rng = np.random.default_rng(4)
    for n in range(200):
        prev = rng.normal(size=32).astype(np.float32)
        if n % 17 == 0:
            prev[:] = 0.0
        text = dynamics.encode_vec(prev)
        now = rng.normal(size=32).astype(np.float32)
        if n % 3 == 0:
            now = now / np.float32(np.linalg.norm(now))
        ref = float(reinforcement.vmpfc.prediction_error(c_prev=dynamics.decode_vec(text), c_now=now, params=vp))
        assert reinforcement._context_pe(text, reinforcement._pe_operand(now), vp) == ref
    with pytest.raises(ValidationError):  # contexts of different dimensions, as prediction_error refuses them
        reinforcement._context_pe(dynamics.encode_vec(np.ones(8)), reinforcement._pe_operand(np.ones(32)), vp)


def test_retrievability_both_on_matches_reference_at_the_edges():
    from zenbrain.mechanisms import ebbinghaus
    from zenbrain.registry import Mechanisms

    now = 1.7e9
    items = []
    cases = [(now + 500.0, 0.0, 1.5, -0.2), (now, 1e6, 0.5, 1.2), (now - 1e7, 0.05, -0.3, 0.5), (now - 3600.0, 2.0, 1.0, 0.0)]
    for n, (la, stab, s0, base) in enumerate(cases * 3):
        state = {dynamics.COPIES: {"s0": s0, "anchor": la + (n - 5) * 100.0, "deep_base": base, "deep_target": 1.3 - 0.2 * n,
                                   "deep_anchor": int(la) - n * 7}}
        if n % 2:
            state[dynamics.SIGNIFICANCE] = 1.5 if n % 3 else -0.5
        it = _item(n, state, last_access=la)
        it.stability, it.arousal, it.valence = stab, [0.0, 2.0, -1.0][n % 3], [-3.0, 0.5, 0.0][n % 3]
        items.append(it)
    mech = Mechanisms(disabled=frozenset())
    got = dynamics.retrievability(items, now, mech)
    want = _reference_retrievability(items, now, mech, ebbinghaus.DEFAULTS, triple_copy.DEFAULT_PARAMS)
    assert np.array_equal(got, want)


def test_fsrs_scheduler_and_state_lookups_match_the_general_ones():
    from fsrs import State

    from zenbrain.mechanisms import fsrs_schedule

    a, b = fsrs_schedule.FsrsParams(desired_retention=0.8), fsrs_schedule.FsrsParams(desired_retention=0.8)
    for p in (a, b, fsrs_schedule.DEFAULTS, a):
        assert fsrs_schedule._scheduler(p) is fsrs_schedule.scheduler(p)
    for s in State:
        assert fsrs_schedule._state(int(s)) is State(int(s))
        assert fsrs_schedule._state(float(int(s))) is State(int(s))
    with pytest.raises(ValueError):
        fsrs_schedule._state(9)
    with pytest.raises(ValidationError):
        fsrs_schedule.state_to_card({**fsrs_schedule.new_card(now=0.0), "state": 9})
