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
    newest = monitor_log.segment_key("retrievals", 3, monitor_log.ring_size(mc.DEFAULT_PARAMS))
    assert set(writes) == {monitor_log.HEAD_KEY, newest}
    assert len(writes[newest]) == 6


def test_a_log_in_the_older_64_event_layout_is_read_as_the_oldest_part_and_never_rewritten():
    store = _store()
    rows = [mc.event_row(mc.retrieval_event(at=float(i), returned=1, used=1)) for i in range(74)]
    with store.transaction() as tx:  # as earlier versions wrote it: 64 events a segment
        tx.kv_put(PART, {"metacognition:retrievals:0": rows[:64], "metacognition:retrievals:1": rows[64:],
                         monitor_log.HEAD_KEY: {"retrievals": {"seg": 1, "n": 10}}})
    assert [r.at for r in monitor_log.load(store, PART).retrievals] == [float(i) for i in range(74)]
    for i in range(74, 100):
        writes = monitor_log.appended(store, PART, mc.DEFAULT_PARAMS,
                                      retrievals=[mc.retrieval_event(at=float(i), returned=1, used=1)])
        assert not {"metacognition:retrievals:0", "metacognition:retrievals:1"} & set(writes)
        assert all(len(v) <= monitor_log.SEGMENT for k, v in writes.items() if k != monitor_log.HEAD_KEY)
        with store.transaction() as tx:
            tx.kv_put(PART, writes)
    assert [r.at for r in monitor_log.load(store, PART).retrievals] == [float(i) for i in range(100)]
    recent = monitor_log.load(store, PART, since=90.0).retrievals
    assert recent[-1].at == 99.0 and recent[0].at >= 80.0  # the older layout is not read for it
    small = mc.MetacognitionParams(max_events=30)
    assert [r.at for r in monitor_log.load(store, PART, small).retrievals] == [float(i) for i in range(70, 100)]


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


def test_a_recalls_ids_and_feedback_survive_the_store_and_rate_it():
    store = _store()
    _append(store, mc.DEFAULT_PARAMS, retrievals=[mc.retrieval_event(at=1.0, returned=2, used=None, ids=["a", "b"])])
    _append(store, mc.DEFAULT_PARAMS, feedback=[mc.feedback_event(at=2.0, memory_id="b", used=True, correct=True,
                                                                   confidence=0.9)])
    state = monitor_log.load(store, PART)
    assert state.retrievals[0].ids == ("a", "b") and state.retrievals[0].used is None
    assert state.feedback == (mc.FeedbackEvent(at=2.0, memory_id="b", used=True, correct=True, confidence=0.9),)
    sig = mc.signals(state, now=3.0)
    assert sig.hit_rate == 1.0 and sig.n_calibrated == 1
