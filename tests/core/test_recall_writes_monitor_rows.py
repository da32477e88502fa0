"""The monitor log's rows leave out the optional fields that are None: they read back as
the same events, and the segment's JSON holds no null."""

from __future__ import annotations

from core_helpers import DIM, open_mem

from zenbrain import monitor_log
from zenbrain.pma import metacognition as mc
from zenbrain.providers.hashing import HashingEmbedder

PART = ("alice", "default")


def _events():
    return [
        mc.retrieval_event(at=10.0, returned=3, used=1),
        mc.retrieval_event(at=11.0, returned=2, used=2, query_kind="keyword", confidence=0.5, correct=False,
                           recent_share=0.0, recent_base=1.0),
        mc.retrieval_event(at=12.0, returned=0, used=0, correct=True),
    ]


def test_rows_read_back_as_the_events(tmp_path):
    mem = open_mem(str(tmp_path / "m.db"), embedder=HashingEmbedder(DIM))
    store = mem.storage
    evs = _events()
    surprise = mc.surprise_event(at=12.5, pe=0.9)
    writes = monitor_log.appended(store, PART, retrievals=evs, surprises=[surprise])
    rows = writes[next(k for k in writes if ":retrievals:" in k)]
    assert rows[0] == {"at": 10.0, "query_kind": "general", "returned": 3, "used": 1}
    assert rows[1] == dict(vars(evs[1]))  # nothing None: every field kept
    assert all(v is not None for r in rows for v in r.values())
    with store.transaction() as tx:
        monitor_log.put(tx, PART, writes)
    state = monitor_log.load(store, PART)
    assert state.retrievals == tuple(evs)
    assert state.surprises == (surprise,)
    text = store._db.execute("SELECT value FROM kv WHERE key LIKE 'metacognition:retrievals:%'").fetchone()[0]
    assert "null" not in text
    mem.close()


def test_rows_written_with_nulls_still_read(tmp_path):
    mem = open_mem(str(tmp_path / "m.db"), embedder=HashingEmbedder(DIM))
    store = mem.storage
    old = [dict(vars(e)) for e in _events()[:1]]  # a row as earlier versions wrote it
    with store.transaction() as tx:
        tx.kv_put(PART, "metacognition:retrievals:0", old)
        tx.kv_put(PART, monitor_log.HEAD_KEY, {"retrievals": {"seg": 0, "n": 1}})
    new = _events()[1:]
    with store.transaction() as tx:
        monitor_log.put(tx, PART, monitor_log.appended(store, PART, retrievals=new))
    assert monitor_log.load(store, PART).retrievals == tuple(_events())
    mem.close()
