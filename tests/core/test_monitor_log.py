"""The metacognitive monitor's log in append-only kv segments."""

from __future__ import annotations

from zenbrain import state as keys
from zenbrain.pipeline import monitor_log
from zenbrain.pma import metacognition as mc
from zenbrain.storage.sqlite import SQLiteStore

PART = ("u", "a")


def _store() -> SQLiteStore:
    return SQLiteStore(":memory:", embedder_name="test", dim=4)


def _append(store, params, **events):
    with store.transaction() as tx:
        tx.kv_put(PART, monitor_log.appended(store, PART, params, **events))


def test_appends_keep_order_across_segments_and_drop_beyond_max_events():
    store = _store()
    params = mc.MetacognitionParams(max_events=150)
    for i in range(400):
        _append(store, params, retrievals=[mc.retrieval_event(at=float(i), returned=3, used=1)])
    state = monitor_log.load(store, PART, params)
    assert [r.at for r in state.retrievals] == [float(i) for i in range(250, 400)]
    assert state.evidence == () and state.surprises == ()
    # the ring bounds what is stored: segments are reused, not added
    keys = store._db.execute("SELECT key FROM kv WHERE key LIKE 'metacognition:retrievals:%'").fetchall()
    assert len(keys) <= monitor_log.ring_size(params)


def test_an_append_rewrites_only_the_newest_segment():
    store = _store()
    for i in range(monitor_log.SEGMENT * 3 + 5):
        _append(store, mc.DEFAULT_PARAMS, retrievals=[mc.retrieval_event(at=float(i), returned=1, used=1)])
    writes = monitor_log.appended(store, PART, mc.DEFAULT_PARAMS, retrievals=[mc.retrieval_event(at=1e6, returned=1, used=0)])
    assert set(writes) == {monitor_log.HEAD_KEY, "metacognition:retrievals:3"}
    assert len(writes["metacognition:retrievals:3"]) == 6


def test_since_reads_only_recent_segments_and_legacy_values_are_read_first():
    store = _store()
    legacy = mc.log_prediction_error(mc.MonitorState(), at=0.0, pe=0.9)
    with store.transaction() as tx:
        tx.kv_put(PART, {keys.KV_METACOG: legacy.to_dict()})
    for i in range(1, 200):
        _append(store, mc.DEFAULT_PARAMS, surprises=[mc.surprise_event(at=float(i), pe=0.8)])
    full = monitor_log.load(store, PART)
    assert [s.at for s in full.surprises] == [float(i) for i in range(200)]
    recent = monitor_log.load(store, PART, kinds=("surprises",), since=190.0)
    assert recent.surprises[-1].at == 199.0 and len(recent.surprises) < 200
    assert all(s.at >= 190.0 for s in recent.surprises[-10:])


def test_surprises_below_the_threshold_leave_no_event():
    assert mc.surprise_event(at=1.0, pe=0.5) is None
    assert monitor_log.appended(_store(), PART, mc.DEFAULT_PARAMS) == {}
