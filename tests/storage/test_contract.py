"""The Store contract, run against every backend in ``conftest.backends``.

Each test states one promise of the protocol in ``zenbrain.storage.base`` and checks it
against an independent oracle (``storage_helpers.matches`` / ``brute_top``).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from storage_helpers import (
    DIM,
    MODEL,
    P1,
    P2,
    T0,
    brute_top,
    chash,
    make_item,
    matches,
    put,
    random_filter,
    random_world,
    unit_rows,
)

from zenbrain.errors import ConfigError, StorageError, ValidationError, ZenBrainError
from zenbrain.model import Edge, HistoryEvent, Kind, Layer
from zenbrain.storage.base import Filter, Store, StoreStats, Transaction


class Boom(Exception):
    pass


@pytest.fixture
def world(store):
    rng = np.random.default_rng(7)
    items, vecs = random_world(rng)
    put(store, items, np.stack([vecs[i.id] for i in items]))
    return items, vecs


# --------------------------------------------------------------------------- protocol
def test_the_backend_implements_the_protocol(store):
    for name in [n for n in dir(Store) if not n.startswith("_")] + ["embedder_name", "dim"]:
        assert hasattr(store, name), name
    assert (store.embedder_name, store.dim) == (MODEL, DIM)
    with store.transaction() as tx:
        for name in [n for n in dir(Transaction) if not n.startswith("_")]:
            assert callable(getattr(tx, name)), name


def test_the_protocol_declares_every_store_method_the_engine_uses():
    """The pipeline needs nothing a backend does not promise: every ``tx.<method>`` and
    ``engine.store.<method>`` it calls is declared in the protocol."""
    import re

    import zenbrain.pipeline

    root = Path(zenbrain.pipeline.__file__).parent
    text = "\n".join(p.read_text() for p in root.rglob("*.py"))
    used_tx = set(re.findall(r"\btx\.([a-z_]+)\(", text))
    used_store = set(re.findall(r"engine\.store\.([a-z_]+)", text))
    assert used_tx and used_store
    assert used_tx <= {n for n in dir(Transaction) if not n.startswith("_")}, used_tx
    assert used_store <= {n for n in dir(Store) if not n.startswith("_")} | {"dim", "embedder_name"}, used_store


# --------------------------------------------------------------------------- transactions
def test_an_exception_inside_a_transaction_leaves_nothing(store):
    kept = make_item(P1, "already here")
    put(store, [kept], unit_rows(np.random.default_rng(0), 1))
    qv = store.vectors(P1, [kept.id])[0]
    assert store.vector_search(P1, qv, 5)[0][0] == kept.id  # index loaded before the failed write
    new = make_item(P1, "never committed", id="new")
    with pytest.raises(Boom), store.transaction() as tx:
        tx.put_embeddings(MODEL, [new.content_hash], unit_rows(np.random.default_rng(1), 1))
        tx.put_memories([new])
        tx.update_columns(P1, [kept.id], layer=["episodic"], archived=[True])
        tx.put_edges(P1, [Edge(kept.id, new.id, "related")])
        tx.log(P1, [HistoryEvent(kept.id, T0, "touched", {"x": 1})])
        tx.kv_put(P1, {"k": {"v": 1}})
        tx.delete_memory(P1, kept.id)
        raise Boom()
    assert store.get(P1, [new.id]) == []
    assert store.get(P1, [kept.id])[0] == kept  # neither changed nor deleted
    assert all_ids(store, P1) == [kept.id]
    assert store.cached_embeddings(MODEL, [new.content_hash]) == {}
    assert store.cached_embeddings(MODEL, [kept.content_hash]).keys() == {kept.content_hash}
    assert store.edges(P1) == []
    assert store.history(P1, kept.id) == []
    assert store.kv_get(P1, "k") is None
    assert store.lexical_search(P1, "never committed", 10) == []
    assert [i for i, _ in store.vector_search(P1, qv, 5)] == [kept.id]
    assert store.stats(P1).memories == 1


def test_a_transaction_commits_everything_together(store, other_handle):
    a, b = make_item(P1, "first of two"), make_item(P1, "second of two")
    with store.transaction() as tx:
        tx.put_memories([a])
        assert {i.id for i in store.query(P1)} == {a.id}  # reads in the transaction see its writes
        tx.put_memories([b])
        assert other_handle.get(P1, [a.id]) == []  # nobody else does, yet
    assert {i.id for i in other_handle.query(P1)} == {a.id, b.id}


def test_a_nested_transaction_joins_the_outer_one(store):
    a, b = make_item(P1, "outer write"), make_item(P1, "inner write")
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.put_memories([a])
        with store.transaction() as inner:
            assert inner is tx
            inner.put_memories([b])
        raise RuntimeError("abort the outer transaction")
    assert store.get(P1, [a.id, b.id]) == []  # the inner write rolled back with the outer one
    with store.transaction() as tx:
        tx.put_memories([a])
        with store.transaction() as inner:
            inner.put_memories([b])
    assert {i.id for i in store.get(P1, [a.id, b.id])} == {a.id, b.id}


def test_threads_sharing_a_store_lose_nothing(store):
    def work(t):
        for j in range(15):
            with store.transaction() as tx:
                tx.put_memories([make_item(P1, f"thread {t} item {j}", id=f"t{t}-{j}")])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(all_ids(store, P1)) == 60


# --------------------------------------------------------------------------- put / get / query
def test_put_and_get_round_trip_every_field(store):
    item = make_item(
        P1,
        "Ünïcödé content with 'quotes', \"double\" and emoji \U0001f600",
        session_id="s-1",
        context="work",
        layer=Layer.PROCEDURAL,
        kind=Kind.SKILL,
        metadata={"tags": ["a", "b"], "nested": {"n": 1.5, "none": None, "flag": True}},
        created_at=T0 + 0.125,
        updated_at=T0 + 1.5,
        event_time=T0 - 86400.25,
        last_access=T0 + 2.0,
        access_count=3,
        importance=0.7,
        valence=-0.4,
        arousal=0.9,
        stability=2.5,
        strength=0.3,
        conf_alpha=4.0,
        conf_beta=2.0,
        archived=True,
        version=5,
        state={"due_at": T0 + 99.0, "fsrs": {"reps": 2}},
    )
    other = make_item(P1, "plain")
    put(store, [item, other])
    assert store.get(P1, [item.id]) == [item]
    assert store.get(P1, [other.id, "missing", item.id]) == [other, item]  # order kept, unknown skipped
    assert store.get(P2, [item.id]) == []  # another partition
    assert store.get(P1, []) == []


def test_ids_are_unique(store):
    item = make_item(P1, "only once")
    put(store, [item])
    with pytest.raises(Exception):  # noqa: B017 - each backend raises its own integrity error
        put(store, [make_item(P2, "another user's memory", id=item.id)])
    assert store.get(P1, [item.id]) == [item] and store.get(P2, [item.id]) == []


def test_record_access_counts_each_access_and_never_moves_time_back(store, other_handle):
    a, b = make_item(P1, "accessed", id="a", last_access=T0 + 50.0), make_item(P1, "untouched", id="b")
    put(store, [a, b])
    with store.transaction() as tx:
        tx.record_access(P1, ["a"], T0 + 100.0)
    with other_handle.transaction() as tx:
        tx.record_access(P1, ["a"], T0 + 10.0)  # an older clock: the count grows, the time stays
        tx.record_access(P2, ["a"], T0 + 500.0)  # another partition: no effect
    got = {i.id: i for i in store.get(P1, ["a", "b"])}
    assert (got["a"].access_count, got["a"].last_access) == (a.access_count + 2, T0 + 100.0)
    assert (got["b"].access_count, got["b"].last_access) == (b.access_count, b.last_access)


def test_record_access_writes_states_and_columns_in_the_same_update(store, other_handle):
    a = make_item(P1, "recalled", id="a", last_access=T0 + 50.0, stability=2.0)
    b = make_item(P1, "recalled too", id="b", stability=3.0)
    c = make_item(P1, "not recalled", id="c", stability=4.0)
    put(store, [a, b, c])
    states = {"a": {"due_at": T0 + 900.0, "fsrs": {"reps": 1}}, "b": {"note": "x"}}
    with store.transaction() as tx:
        tx.record_access(P1, ["a", "b"], T0 + 100.0, states=states, stability=[5.5, np.float64(6.5)])
        tx.record_access(P2, ["a"], T0 + 500.0, states={"a": {"other": 1}}, stability=[9.0])  # no effect
    got = {i.id: i for i in store.get(P1, ["a", "b", "c"])}
    assert (got["a"].access_count, got["a"].last_access, got["a"].stability) == (a.access_count + 1, T0 + 100.0, 5.5)
    assert (got["b"].access_count, got["b"].last_access, got["b"].stability) == (b.access_count + 1, T0 + 100.0, 6.5)
    assert got["a"].state == states["a"] and got["b"].state == states["b"] and got["c"] == c
    # The due time follows the state: a review query finds "a" by it, "b" (none) not.
    assert [i.id for i in store.query(P1, Filter(due_before=T0 + 1000.0))] == ["a"]
    with other_handle.transaction() as tx:  # columns alone, from another handle, an older clock
        tx.record_access(P1, ["b"], T0 + 10.0, strength=[0.25])
    got_b = store.get(P1, ["b"])[0]
    assert (got_b.access_count, got_b.last_access, got_b.strength, got_b.state) == (
        b.access_count + 2, T0 + 100.0, 0.25, states["b"])
    with pytest.raises(StorageError), store.transaction() as tx:
        tx.record_access(P1, ["a", "b"], T0, states={"a": {}})  # a state missing: nothing written
    with pytest.raises(StorageError), store.transaction() as tx:
        tx.record_access(P1, ["a"], T0, content=["not a plain column"])
    assert store.get(P1, ["a"])[0].access_count == a.access_count + 1


def test_putting_a_stored_memory_again_replaces_it(store):
    item = make_item(P1, "first text")
    put(store, [item])
    again = make_item(P1, "second text", id=item.id)
    put(store, [again])
    assert store.get(P1, [item.id]) == [again]
    assert [mid for mid, _ in store.lexical_search(P1, "second", 5)] == [item.id]
    assert store.lexical_search(P1, "first", 5) == []


def test_query_honours_every_filter_field(store, world):
    items, _ = world
    rng = np.random.default_rng(11)
    ids = [i.id for i in items]
    fixed = [
        Filter(),
        Filter(include_archived=True),
        Filter(layers=frozenset({Layer.WORKING}), session_id="s1"),
        Filter(layers=frozenset({Layer.SHORT_TERM, Layer.WORKING}), session_id="s2", include_archived=True),
        Filter(contexts=frozenset({"work"})),
        Filter(contexts=frozenset()),
        Filter(layers=frozenset()),
        Filter(kinds=frozenset({"fact", "skill"})),
        Filter(event_after=T0, event_before=T0 + 1000),
        Filter(ids=frozenset(ids[:50])),
        Filter(ids=frozenset()),
        Filter(content_hashes=frozenset(i.content_hash for i in items[:7])),
        Filter(content_hashes=frozenset()),
        Filter(current_at=T0),
        Filter(current_at=T0 + 500.0, include_archived=True),
    ]
    for flt in fixed + [random_filter(rng, ids) for _ in range(60)]:
        for part in (P1, P2):
            expect = [i for i in items if (i.user_id, i.agent_id) == part and matches(i, flt)]
            got = store.query(part, flt)
            assert [i.id for i in got] == [i.id for i in sorted(expect, key=lambda i: (i.created_at, i.id))], flt
            assert {i.id for i in store.query(part, flt, limit=3)} <= {i.id for i in expect}


def test_query_orders_and_limits(store, world):
    items, _ = world
    flt = Filter(include_archived=True, session_id="s1")
    expect = [i for i in items if i.user_id == "alice" and matches(i, flt)]
    for order_by in ("created_at", "event_time", "last_access", "updated_at", "strength"):

        def key(i, order_by=order_by):
            if order_by == "event_time":
                return i.event_time if i.event_time is not None else i.created_at
            return getattr(i, order_by)

        asc = sorted(expect, key=lambda i: (key(i), i.id))
        assert [i.id for i in store.query(P1, flt, order_by=order_by)] == [i.id for i in asc], order_by
        desc = store.query(P1, flt, order_by=order_by, descending=True, limit=7)
        assert [key(i) for i in desc] == sorted((key(i) for i in expect), reverse=True)[:7], order_by
    # each memory through ``share`` as it is read: the same memories, in the same order
    seen = []
    shared = store.query(P1, flt, share=lambda i: seen.append(i.id) or i)
    assert [i.id for i in shared] == seen == [i.id for i in store.query(P1, flt)]


def test_query_metadata_is_the_ids_and_metadata_of_query(store, world):
    items, _ = world
    tagged = [make_item(P1, f"tagged {n}", metadata={"entities": [f"e{n}"], "n": n, "note": "é"}, created_at=T0 + n)
              for n in range(3)]
    put(store, tagged, unit_rows(np.random.default_rng(3), 3))
    items = items + tagged
    rng = np.random.default_rng(12)
    ids = [i.id for i in items]
    turns = frozenset((i.session_id, i.position) for i in items[::4] if i.session_id is not None)
    flts = [Filter(), Filter(include_archived=True, session_id="s1"), Filter(include_archived=True, all_sessions=True,
                                                                              turns=turns)]
    for flt in flts + [random_filter(rng, ids) for _ in range(20)]:
        for order_by, descending, limit in (("created_at", False, None), ("last_access", True, 7), ("due_at", False, 5)):
            expect = store.query(P1, flt, order_by=order_by, descending=descending, limit=limit)
            got = store.query_metadata(P1, flt, order_by=order_by, descending=descending, limit=limit)
            assert got == [(i.id, i.metadata) for i in expect], (flt, order_by)
    assert [meta for mid, meta in store.query_metadata(P1, Filter(ids=frozenset(i.id for i in tagged)))] == \
        [i.metadata for i in tagged]


def test_query_of_named_turns_orders_and_limits_as_any_query(store, world):
    """Named turns are looked up session by session; the order, ties and limit are those of
    every query (equally due memories in the order they were stored)."""
    items, _ = world
    turns = frozenset((i.session_id, i.position) for i in items[::3] if i.session_id is not None
                      and i.position is not None) | {("s1", 999), ("no such session", 0)}
    flt = Filter(include_archived=True, all_sessions=True, turns=turns)
    expect = [i for i in items if i.user_id == "alice" and matches(i, flt)]
    assert expect
    for order_by in ("created_at", "event_time", "strength", "position"):
        got = store.query(P1, flt, order_by=order_by, descending=True, limit=5)
        assert [getattr(i, order_by) if order_by != "event_time" else (i.event_time or i.created_at) for i in got] == \
            sorted((getattr(i, order_by) if order_by != "event_time" else (i.event_time or i.created_at)
                    for i in expect), reverse=True)[:5]
        assert {i.id for i in store.query(P1, flt, order_by=order_by)} == {i.id for i in expect}
    now = T0 + 10_000.0
    due_expect = [i for i in expect if i.state.get("due_at") is not None and i.state["due_at"] <= now]
    due_expect.sort(key=lambda i: i.state["due_at"])
    assert [i.state["due_at"] for i in due(store, P1, now, 100, flt)] == [i.state["due_at"] for i in due_expect]


def test_query_refuses_an_unknown_order(store):
    with pytest.raises(StorageError):
        store.query(P1, order_by="content; DROP TABLE memories")


def due(store, part, now, limit, flt=Filter()):
    return store.query(part, replace(flt, due_before=now), order_by="due_at", limit=limit)


def all_ids(store, part):
    return [i.id for i in store.query(part, Filter(include_archived=True, all_sessions=True))]


def test_due_lists_overdue_memories_most_overdue_first(store, world):
    items, _ = world
    now = T0 + 500.0
    for flt in (Filter(), Filter(include_archived=True, session_id="s1"), Filter(contexts=frozenset({"home"}))):
        expect = [
            i for i in items
            if i.user_id == "alice" and matches(i, flt) and i.state.get("due_at") is not None and i.state["due_at"] <= now
        ]
        expect.sort(key=lambda i: i.state["due_at"])  # a stable sort: equally due ones in the order stored
        assert [i.id for i in due(store, P1, now, 1000, flt)] == [i.id for i in expect]
        assert [i.id for i in due(store, P1, now, 4, flt)] == [i.id for i in expect[:4]]


def test_a_maintenance_filter_reads_every_memory_of_a_partition_only(store, world):
    items, _ = world
    assert sorted(all_ids(store, P1)) == sorted(i.id for i in items if i.user_id == "alice")  # archived, sessions, all
    assert all_ids(store, ("nobody", "agent")) == []


def test_stats(store, world):
    items, _ = world
    with store.transaction() as tx:
        tx.put_edges(P1, [Edge(items[0].id, items[2].id, "r"), Edge(items[2].id, items[4].id, "r")])
    for part in (P1, P2, None):
        mine = [i for i in items if part is None or (i.user_id, i.agent_id) == part]
        s = store.stats(part)
        assert isinstance(s, StoreStats)
        assert s.memories == len(mine)
        assert s.archived == sum(i.archived for i in mine)
        assert s.by_layer == {layer.value: n for layer in Layer if (n := sum(i.layer is layer for i in mine))}
        assert s.by_context == {c: n for c in ("work", "home", "default") if (n := sum(i.context == c for i in mine))}
        assert s.edges == (2 if part in (P1, None) else 0)
        # A partition's figures are its own: the vectors its memories use, the bytes they hold.
        assert s.cached_embeddings == len({i.content_hash for i in mine})
        if part is not None:
            assert s.file_bytes == 0 and s.stored_bytes >= sum(len(i.content.encode()) for i in mine)
    assert store.count() == store.stats().memories == len(items)  # every partition, archived rows too


def test_stats_through_a_filter_count_what_the_filter_admits(store, world):
    items, _ = world
    rng = np.random.default_rng(21)
    for _ in range(20):
        flt = random_filter(rng, [i.id for i in items])
        # Archived rows are counted (and reported as archived) whatever include_archived says.
        admitted = [i for i in items if i.user_id == "alice" and matches(i, replace(flt, include_archived=True))]
        s = store.stats(P1, flt)
        assert s.memories == len(admitted), flt
        assert s.archived == sum(i.archived for i in admitted)
        assert sum(s.by_layer.values()) == sum(s.by_context.values()) == len(admitted)


def test_update_state_replaces_state_and_due_time(store):
    a = make_item(P1, "stateful", id="s", state={"due_at": T0 + 100.0, "keep": "old"})
    put(store, [a])
    assert [i.id for i in due(store, P1, T0 + 100.0, 10)] == ["s"]
    with store.transaction() as tx:
        tx.update_states(P1, {"s": {"due_at": T0 + 5000.0, "fsrs": {"reps": 1}}})
        tx.update_states(P2, {"s": {"due_at": T0}})  # another partition: no effect
    got = store.get(P1, ["s"])[0]
    assert got.state == {"due_at": T0 + 5000.0, "fsrs": {"reps": 1}}
    assert due(store, P1, T0 + 4999.0, 10) == []
    assert [i.id for i in due(store, P1, T0 + 5000.0, 10)] == ["s"]
    with store.transaction() as tx:
        tx.update_states(P1, {"s": {}})
    assert due(store, P1, T0 + 10**9, 10) == [] and store.get(P1, ["s"])[0].state == {}


# --------------------------------------------------------------------------- vectors
def test_vector_search_is_exact(store, world):
    items, vecs = world
    rng = np.random.default_rng(3)
    ids = [i.id for i in items]
    for trial in range(80):
        flt = random_filter(rng, ids) if trial else Filter(include_archived=True, session_id="s1")
        part = (P1, P2)[trial % 2]
        q = unit_rows(rng, 1)[0]
        k = int(rng.integers(1, 30))
        mine = [i for i in items if (i.user_id, i.agent_id) == part]
        expect = brute_top(mine, vecs, q, k, flt)
        got = store.vector_search(part, q, k, flt)
        assert [i for i, _ in got] == [i for i, _ in expect], flt
        np.testing.assert_allclose([s for _, s in got], [s for _, s in expect], rtol=1e-5, atol=1e-6)


def test_vector_search_per_layer_is_exact(store, world):
    items, vecs = world
    rng = np.random.default_rng(5)
    for trial in range(30):
        flt = random_filter(rng, [i.id for i in items])
        q = unit_rows(rng, 1)[0]
        k = int(rng.integers(1, 6))
        mine = [i for i in items if i.user_id == "alice"]
        got = store.vector_search(P1, q, k, flt, per_layer=True)
        by_layer: dict[Layer, list[str]] = {}
        layer_of = {i.id: i.layer for i in mine}
        for mid, _ in got:
            by_layer.setdefault(layer_of[mid], []).append(mid)
        for layer in Layer:
            expect = brute_top([i for i in mine if i.layer is layer], vecs, q, k, flt)
            assert by_layer.get(layer, []) == [i for i, _ in expect], (layer, flt)


def test_vector_search_edge_cases(store, world):
    items, vecs = world
    q = vecs[items[0].id]
    assert store.vector_search(P1, q, 0) == []
    assert store.vector_search(("nobody", "agent"), q, 5) == []
    everything = store.vector_search(P1, q, 10_000, Filter(include_archived=True, session_id="s1"))
    assert len(everything) == len({i for i, _ in everything})
    assert everything[0] == (items[0].id, pytest.approx(1.0, abs=1e-3))


def test_vectors_returns_stored_vectors(store, world):
    items, vecs = world
    ids = [i.id for i in items if i.user_id == "alice"][:10]
    got = store.vectors(P1, [*ids, "missing"])
    assert got.shape == (11, DIM) and got.dtype == np.float32
    np.testing.assert_array_equal(got[:10], np.stack([vecs[i] for i in ids]))
    assert not got[10].any()
    assert not store.vectors(P2, ids[:1]).any()  # another partition's id


def test_cosines_compare_queries_with_stored_vectors(store, world):
    from zenbrain.vecmath import row_cosines

    items, vecs = world
    ids = [i.id for i in items if i.user_id == "alice"][:150]
    queries = unit_rows(np.random.default_rng(3), 2)
    got = store.cosines(P1, [*ids, "missing"], queries)
    assert got.shape == (2, len(ids) + 1) and got.dtype == np.float32
    np.testing.assert_allclose(got[:, :-1], row_cosines(queries, np.stack([vecs[i] for i in ids])), atol=1e-6)
    assert not got[:, -1].any()
    assert not store.cosines(P2, ids[:3], queries).any()  # another partition's ids
    assert store.cosines(P1, [], queries).shape == (2, 0)


def test_a_memory_without_a_vector_is_not_dense_searchable(store):
    item = make_item(P1, "no vector for me")
    put(store, [item])
    assert store.vector_search(P1, unit_rows(np.random.default_rng(0), 1)[0], 5) == []
    assert store.lexical_search(P1, "vector", 5)[0][0] == item.id


def test_the_index_follows_updates_and_deletes(store, world):
    items, vecs = world
    alive = {i.id: i for i in items}
    rng = np.random.default_rng(9)
    mine = [i for i in items if i.user_id == "alice" and not i.archived and i.layer not in (Layer.WORKING, Layer.SHORT_TERM)]
    q = unit_rows(rng, 1)[0]
    store.vector_search(P1, q, 5)  # loaded
    a, b, c, d = mine[:4]
    with store.transaction() as tx:
        tx.update_columns(P1, [a.id, b.id], archived=[True, np.bool_(True)])
        tx.update_columns(P1, [c.id], layer=[Layer.CORE.value], context=["elsewhere"])
        tx.delete_memory(P1, d.id)
    a.archived = b.archived = True
    c.layer, c.context = Layer.CORE, "elsewhere"
    del alive[d.id]
    # A content change with a new vector.
    e = mine[4]
    e.content = "brand new content for e"
    e.content_hash = chash(e.content)
    vecs[e.id] = unit_rows(rng, 1)[0]
    with store.transaction() as tx:
        tx.put_embeddings(MODEL, [e.content_hash], vecs[e.id][None, :])
        tx.put_memories([e])
    for flt in (Filter(), Filter(layers=frozenset({Layer.CORE})), Filter(contexts=frozenset({"elsewhere"})), Filter(include_archived=True)):
        expect = brute_top([i for i in alive.values() if i.user_id == "alice"], vecs, q, 25, flt)
        assert [i for i, _ in store.vector_search(P1, q, 25, flt)] == [i for i, _ in expect]
    assert store.vector_search(P1, vecs[e.id], 1)[0][0] == e.id


def test_the_index_follows_another_handle(store, other_handle, world):
    items, vecs = world
    rng = np.random.default_rng(13)
    q = unit_rows(rng, 1)[0]
    before = store.vector_search(P1, q, 10)  # this handle's index is loaded
    new = make_item(P1, "written through the other handle", id="other-1")
    v = q.copy()
    put(other_handle, [new], v[None, :])
    assert store.vector_search(P1, q, 1)[0][0] == new.id
    with other_handle.transaction() as tx:
        tx.delete_memory(P1, new.id)
        tx.update_columns(P1, [before[0][0]], archived=[True])
    after = [i for i, _ in store.vector_search(P1, q, 10)]
    assert new.id not in after and before[0][0] not in after
    assert after == [i for i, _ in brute_top(
        [i for i in items if i.user_id == "alice" and i.id != before[0][0]], vecs, q, 10, Filter())]


def test_the_index_stays_exact_through_compaction(store):
    rng = np.random.default_rng(17)
    n = 1500
    items = [make_item(P1, f"bulk item {i}", id=f"b{i:05d}", created_at=T0 + i) for i in range(n)]
    v = unit_rows(rng, n)
    vecs = {it.id: v[i] for i, it in enumerate(items)}
    put(store, items, v)
    q = unit_rows(rng, 1)[0]
    store.vector_search(P1, q, 5)
    gone = set(rng.choice(n, size=1100, replace=False).tolist())
    with store.transaction() as tx:
        for i in sorted(gone):
            tx.delete_memory(P1, items[i].id)
    left = [it for i, it in enumerate(items) if i not in gone]
    more = [make_item(P1, f"after compaction {i}", id=f"c{i:05d}", created_at=T0 + n + i) for i in range(50)]
    mv = unit_rows(rng, 50)
    vecs.update({it.id: mv[i] for i, it in enumerate(more)})
    put(store, more, mv)
    for _ in range(10):
        q = unit_rows(rng, 1)[0]
        expect = brute_top(left + more, vecs, q, 20, Filter())
        assert [i for i, _ in store.vector_search(P1, q, 20)] == [i for i, _ in expect]
    assert len(all_ids(store, P1)) == len(left) + 50


# --------------------------------------------------------------------------- lexical
def test_lexical_search_ranks_and_filters(store):
    docs = {
        "d1": ("apple apple apple banana", Layer.SEMANTIC, "work"),
        "d2": ("apple banana cherry date elderberry fig grape honeydew kiwi lemon", Layer.SEMANTIC, "work"),
        "d3": ("cherry date", Layer.EPISODIC, "work"),
        "d4": ("apple pie recipe", Layer.PROCEDURAL, "home"),
        "d5": ("an archived apple", Layer.SEMANTIC, "work"),
    }
    items = [make_item(P1, text, id=i, layer=layer, context=ctx, archived=(i == "d5")) for i, (text, layer, ctx) in docs.items()]
    put(store, items + [make_item(P2, "apple apple apple apple", id="other")])
    got = store.lexical_search(P1, "apple", 10)
    ids = [i for i, _ in got]
    assert set(ids) == {"d1", "d2", "d4"}
    assert ids.index("d1") < ids.index("d2")  # more occurrences in a shorter text rank higher
    scores = [s for _, s in got]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    assert [i for i, _ in store.lexical_search(P1, "apple", 1)] == [ids[0]]
    assert {i for i, _ in store.lexical_search(P1, "apple", 10, Filter(contexts=frozenset({"home"})))} == {"d4"}
    assert {i for i, _ in store.lexical_search(P1, "apple", 10, Filter(layers=frozenset({Layer.SEMANTIC})))} == {"d1", "d2"}
    assert {i for i, _ in store.lexical_search(P1, "apple", 10, Filter(include_archived=True))} == {"d1", "d2", "d4", "d5"}
    assert {i for i, _ in store.lexical_search(P1, "cherry OR apple", 10, Filter(ids=frozenset({"d3"})))} == {"d3"}
    assert {i for i, _ in store.lexical_search(P1, "apples", 10)} == {"d1", "d2", "d4"}  # stemming
    assert [i for i, _ in store.lexical_search(P2, "apple", 10)] == ["other"]


def test_lexical_search_honours_every_filter_field(store, world):
    items, _ = world
    rng = np.random.default_rng(21)
    ids = [i.id for i in items]
    for trial in range(60):
        flt = random_filter(rng, ids)
        part = (P1, P2)[trial % 2]
        expect = {i.id for i in items if (i.user_id, i.agent_id) == part and matches(i, flt)
                  and ("apples" in i.content or "boats" in i.content)}
        got = store.lexical_search(part, "apples or boats", 1000, flt)
        assert {mid for mid, _ in got} == expect, flt
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        k = int(rng.integers(1, 8))
        top = store.lexical_search(part, "apples or boats", k, flt)
        assert len(top) == min(k, len(expect)) and {mid for mid, _ in top} <= expect, (k, flt)


def test_lexical_search_among_given_ids_returns_the_best_k(store):
    items = [make_item(P1, "apple " * (1 + i % 5) + f"note {i}", id=f"a{i:02d}") for i in range(30)]
    put(store, items)
    full = store.lexical_search(P1, "apple", 100)
    assert len(full) == 30
    for k in (1, 3, 7):
        for ids in (frozenset(i.id for i in items), frozenset(i.id for i in items[:12])):
            got = store.lexical_search(P1, "apple", k, Filter(ids=ids))
            expect = [(mid, s) for mid, s in full if mid in ids][:k]
            assert [s for _, s in got] == pytest.approx([s for _, s in expect]), (k, len(ids))
            assert len(got) == k and {mid for mid, _ in got} <= ids


def test_lexical_search_treats_query_syntax_as_text(store):
    put(store, [make_item(P1, "apple banana", id="x")])
    for query in ['apple" OR *', "NEAR(apple banana)", "apple AND", "-apple", "^apple", "content:apple", "apple*"]:
        assert [i for i, _ in store.lexical_search(P1, query, 5)] == ["x"], query
    for query in ["(", '"', "a:b:c", "NOT", "*", "{}"]:
        assert store.lexical_search(P1, query, 5) == [], query


def test_lexical_search_edge_cases(store):
    put(store, [make_item(P1, "the cat sat", id="x")])
    assert store.lexical_search(P1, "the and of", 5) == []  # stopwords only
    assert store.lexical_search(P1, "   ", 5) == []
    assert store.lexical_search(P1, "cat", 0) == []
    assert store.lexical_search(P1, "dog", 5) == []


def test_update_memory_replaces_the_lexical_entry(store):
    item = make_item(P1, "old words here", id="u")
    put(store, [item])
    item.content = "completely different now"
    item.content_hash = chash(item.content)
    item.version = 2
    with store.transaction() as tx:
        tx.put_memories([item])
    assert store.lexical_search(P1, "old words", 5) == []
    assert [i for i, _ in store.lexical_search(P1, "different", 5)] == ["u"]
    assert store.get(P1, ["u"]) == [item]


# --------------------------------------------------------------------------- update_columns
def test_update_columns_is_vectorised_and_typed(store):
    items = [make_item(P1, f"col {i}", id=f"c{i}") for i in range(3)]
    put(store, items)
    with store.transaction() as tx:
        tx.update_columns(
            P1,
            ["c0", "c1", "c2"],
            strength=[np.float32(0.25), 0.5, np.float64(0.75)],
            access_count=[np.int64(4), 5, 6],
            archived=[np.bool_(False), 1, True],
        )
        tx.update_columns(P2, ["c0"], strength=[0.99])  # another partition: no effect
        tx.update_columns(P1, [], strength=[])
    got = {i.id: i for i in store.get(P1, ["c0", "c1", "c2"])}
    assert [got[f"c{i}"].strength for i in range(3)] == [0.25, 0.5, 0.75]
    assert [got[f"c{i}"].access_count for i in range(3)] == [4, 5, 6]
    assert [got[f"c{i}"].archived for i in range(3)] == [False, True, True]
    for bad in ({"content": ["x"]}, {"id": ["y"]}, {"user_id": ["z"]}, {"nonexistent": [1]}):
        with pytest.raises(StorageError), store.transaction() as tx:
            tx.update_columns(P1, ["c0"], **bad)
    assert store.get(P1, ["c0"])[0].content == "col 0"


# --------------------------------------------------------------------------- delete
def test_delete_memory_erases_row_lexical_edges_history_and_orphaned_vector(store):
    rng = np.random.default_rng(2)
    a, b, c = make_item(P1, "shared text", id="a"), make_item(P2, "shared text", id="b"), make_item(P1, "own text", id="c")
    put(store, [a, b, c], unit_rows(rng, 3))
    with store.transaction() as tx:
        tx.put_edges(P1, [Edge("a", "c", "r"), Edge("c", "a", "r"), Edge("c", "z", "r")])
        tx.log(P1, [HistoryEvent("a", T0, "created")])
        tx.log(P1, [HistoryEvent("c", T0, "created")])
        tx.kv_put(P1, {"keep": 1})
    with store.transaction() as tx:
        tx.delete_memory(P1, "a")
        tx.delete_memory(P1, "does-not-exist")
    assert store.get(P1, ["a"]) == []
    assert store.lexical_search(P1, "shared", 5) == []
    assert [(e.src, e.dst) for e in store.edges(P1)] == [("c", "z")]
    assert store.history(P1, "a") == [] and len(store.history(P1, "c")) == 1
    assert store.cached_embeddings(MODEL, [a.content_hash]) != {}  # still used by b
    assert [i for i, _ in store.lexical_search(P2, "shared", 5)] == ["b"]
    with store.transaction() as tx:
        tx.delete_memory(P2, "b")
        tx.delete_memory(P1, "c")
    assert store.cached_embeddings(MODEL, [a.content_hash, c.content_hash]) == {}
    assert store.kv_get(P1, "keep") == 1
    assert store.stats().memories == 0


def test_delete_needs_the_right_partition(store):
    put(store, [make_item(P1, "mine", id="m")])
    with store.transaction() as tx:
        tx.delete_memory(P2, "m")
    assert store.get(P1, ["m"])[0].id == "m"


# --------------------------------------------------------------------------- edges, history, kv, embeddings
def test_edges_upsert_delete_and_query(store):
    e1 = Edge("a", "b", "similar", 0.5, 1.0, 1, T0)
    e2 = Edge("b", "c", "similar", 0.2, 0.5, 0, T0)
    e3 = Edge("a", "b", "temporal", 0.1, 1.0, 0, T0)
    with store.transaction() as tx:
        tx.put_edges(P1, [e1, e2, e3])
        tx.put_edges(P2, [Edge("a", "b", "similar", 9.0)])
    assert {(e.src, e.dst, e.relation) for e in store.edges(P1)} == {("a", "b", "similar"), ("b", "c", "similar"), ("a", "b", "temporal")}
    upd = Edge("a", "b", "similar", 0.9, 0.3, 2, T0 + 5)
    with store.transaction() as tx:
        tx.put_edges(P1, [upd])
    got = {(e.src, e.dst, e.relation): e for e in store.edges(P1)}
    assert len(got) == 3 and got[("a", "b", "similar")] == upd
    assert {(e.src, e.dst, e.relation) for e in store.edges(P1, ["c"])} == {("b", "c", "similar")}
    assert len(store.edges(P1, ["a", "b", "b"])) == 3  # touching either end, each edge once
    assert store.edges(P1, []) == [] and store.edges(P1, ["zzz"]) == []
    # one relation only, on each path (all, touching, both ends)
    assert [(e.src, e.dst) for e in store.edges(P1, relation="temporal")] == [("a", "b")]
    assert {(e.src, e.dst) for e in store.edges(P1, ["b"], relation="similar")} == {("a", "b"), ("b", "c")}
    assert [e.relation for e in store.edges(P1, ["a", "b"], both_ends=True, relation="temporal")] == ["temporal"]
    assert store.edges(P1, ["c"], relation="temporal") == [] and store.edges(P2, relation="temporal") == []
    # each edge through ``share`` as it is read, on each path
    def share(e: Edge) -> Edge:
        e.relation = f"shared {e.relation}"
        return e

    for got_edges in (store.edges(P1, share=share), store.edges(P1, ["b"], share=share),
                      store.edges(P1, ["a", "b"], both_ends=True, share=share)):
        assert got_edges and all(e.relation.startswith("shared ") for e in got_edges)
    with store.transaction() as tx:
        tx.delete_edges(P1, [("a", "b", "similar"), ("x", "y", "none")])
    assert {(e.src, e.dst, e.relation) for e in store.edges(P1)} == {("b", "c", "similar"), ("a", "b", "temporal")}
    assert [e.weight for e in store.edges(P2)] == [9.0]


def test_history_is_ordered_and_partitioned(store):
    events = [HistoryEvent("m", T0 + i, f"action{i}", {"i": i, "nested": {"x": [1, 2]}}) for i in range(5)]
    with store.transaction() as tx:
        for ev in events:
            tx.log(P1, [ev])
        tx.log(P2, [HistoryEvent("m", T0, "elsewhere")])
    assert store.history(P1, "m") == events  # in logging order
    assert [e.action for e in store.history(P2, "m")] == ["elsewhere"]
    assert store.history(P1, "other") == []


def test_kv_put_get_overwrite_and_isolation(store):
    values = {"dict": {"a": [1, 2.5, "x"], "b": None}, "list": [1, 2, 3], "num": 3.25, "text": "hello", "flag": True}
    with store.transaction() as tx:
        for k, v in values.items():
            tx.kv_put(P1, {k: v})
    for k, v in values.items():
        assert store.kv_get(P1, k) == v
    with store.transaction() as tx:
        tx.kv_put(P1, {"num": 4})
    assert store.kv_get(P1, "num") == 4
    assert store.kv_get(P2, "num") is None
    assert store.kv_get(P2, "num", default="d") == "d"


def test_kv_get_many_reads_the_set_records_of_one_partition(store):
    with store.transaction() as tx:
        tx.kv_put(P1, {"a": {"x": [1, 2.5]}, "b": "text", "c": None})
        tx.kv_put(P2, {"a": "other user's", "d": 1})
    assert store.kv_get_many(P1, ["a", "b", "c", "d", "a"]) == {"a": {"x": [1, 2.5]}, "b": "text", "c": None}
    assert store.kv_get_many(P2, iter(["a", "b"])) == {"a": "other user's"}
    assert store.kv_get_many(P1, []) == {}
    many = [f"k{i}" for i in range(1200)]  # more keys than one statement binds on SQLite
    with store.transaction() as tx:
        tx.kv_put(P1, {k: i for i, k in enumerate(many)})
    assert store.kv_get_many(P1, many) == {k: i for i, k in enumerate(many)}


def test_cached_embeddings_by_model_and_hash(store):
    rng = np.random.default_rng(4)
    v = unit_rows(rng, 3)
    hashes = [chash(f"text {i}") for i in range(3)]
    with store.transaction() as tx:
        tx.put_embeddings(MODEL, hashes, v)
    # A store keeps the vectors of its own embedder: another model's are refused, and
    # asking for them finds nothing.
    with pytest.raises(ValidationError), store.transaction() as tx:
        tx.put_embeddings("another-model", hashes[:1], v[2:3])
    got = store.cached_embeddings(MODEL, [*hashes, "missing", hashes[0]])
    assert set(got) == set(hashes)
    for i, h in enumerate(hashes):
        assert got[h].dtype == np.float32
        np.testing.assert_array_equal(got[h], v[i])
    assert store.cached_embeddings("another-model", hashes) == {}
    # Keys that are no content hash are kept too (an application's own), each apart.
    own = ["k" * 64, "K" * 64, "short key"]
    with store.transaction() as tx:
        tx.put_embeddings(MODEL, own, v)
    got = store.cached_embeddings(MODEL, own)
    for i, h in enumerate(own):
        np.testing.assert_array_equal(got[h], v[i])
    assert store.cached_embeddings(MODEL, []) == {}
    many = [chash(f"many {i}") for i in range(1200)]  # more than one SQL parameter chunk
    with store.transaction() as tx:
        tx.put_embeddings(MODEL, many, unit_rows(rng, 1200))
    assert len(store.cached_embeddings(MODEL, many)) == 1200


# --------------------------------------------------------------------------- opening
def test_refuses_another_embedder(backend, tmp_path):
    s = backend.create(tmp_path)
    loc = s.contract_location
    put(s, [make_item(P1, "x")], unit_rows(np.random.default_rng(0), 1))
    s.close()
    for kw in ({"embedder_name": "other-model"}, {"dim": DIM * 2}, {"embedder_name": "other", "dim": 8}):
        with pytest.raises(ConfigError):
            backend.open(loc, **kw)
    s = backend.open(loc)
    assert len(all_ids(s, P1)) == 1
    s.close()


def test_migrations_are_recorded_and_idempotent(backend, tmp_path):
    if not backend.has_migrations:
        pytest.skip("backend has no migration table")
    from zenbrain.storage.sqlite.migrations import MIGRATIONS

    s = backend.create(tmp_path)
    loc = s.contract_location
    expect = [(v, m[0]) for v, m in enumerate(MIGRATIONS, start=1)]
    assert backend.migrations(s) == expect
    put(s, [make_item(P1, "survives reopening")])
    s.close()
    for _ in range(2):
        s = backend.open(loc)
        assert backend.migrations(s) == expect
        assert [i.content for i in s.query(P1)] == ["survives reopening"]
        s.close()


def test_refuses_a_store_written_by_a_newer_version(backend, tmp_path):
    if not backend.has_migrations:
        pytest.skip("backend has no migration table")
    s = backend.create(tmp_path)
    loc = s.contract_location
    backend.record_unknown_migration(s, "9999_from_the_future")
    s.close()
    with pytest.raises(StorageError):
        backend.open(loc)


def test_refused_operations_raise_from_the_exception_tree(store):
    put(store, [make_item(P1, "x", id="x")])
    calls = [
        lambda: store.query(P1, order_by="nope"),
        lambda: _in_tx(store, lambda tx: tx.update_columns(P1, ["x"], content=["y"])),
    ]
    for call in calls:
        with pytest.raises(ZenBrainError):
            call()
    assert store.get(P1, ["x"])[0].content == "x"


def _in_tx(store, fn):
    with store.transaction() as tx:
        fn(tx)


def test_a_busy_store_gives_up_with_a_storage_error(backend, tmp_path):
    if not hasattr(backend, "hold_write_lock"):
        pytest.skip("backend cannot simulate a competing writer")
    s = backend.create(tmp_path, timeout=0.2)
    try:
        with backend.hold_write_lock(s.contract_location), pytest.raises(StorageError), s.transaction() as tx:
            tx.put_memories([make_item(P1, "blocked")])
        put(s, [make_item(P1, "after the lock", id="ok")])
        assert [i.id for i in s.query(P1)] == ["ok"]
    finally:
        s.close()


def test_a_corrupt_store_is_refused_with_a_storage_error(backend, tmp_path):
    if not hasattr(backend, "corrupt"):
        pytest.skip("backend cannot simulate corruption")
    loc = backend.location(tmp_path)
    backend.corrupt(loc)
    with pytest.raises(StorageError):
        backend.open(loc)


# --------------------------------------------------------------------------- crashes
HERE = str(Path(__file__).resolve().parent)

# The children need only the storage layer: they register the package without running its
# __init__ (which imports the whole engine) so that they start in a fraction of a second.
LIGHT_IMPORT = """
import importlib.util, sys, types
try:
    _spec = importlib.util.find_spec("zenbrain")
    _pkg = types.ModuleType("zenbrain")
    _pkg.__path__ = list(_spec.submodule_search_locations)
    sys.modules["zenbrain"] = _pkg
    import zenbrain.storage.sqlite, zenbrain.model  # noqa
except Exception:
    for _m in [m for m in sys.modules if m == "zenbrain" or m.startswith("zenbrain.")]:
        del sys.modules[_m]
"""

CRASH_IN_TRANSACTION = LIGHT_IMPORT + """
import os, sys
sys.path.insert(0, {here!r})
import numpy as np
from storage_helpers import P1, MODEL, make_item, put, unit_rows
{open_code}
rng = np.random.default_rng(1)
for i in range(5):
    put(store, [make_item(P1, f"committed number {{i}}", id=f"c{{i}}")], unit_rows(rng, 1))
with store.transaction() as tx:
    tx.delete_memory(P1, "pre1")
with store.transaction() as tx:
    for i in range(5):
        item = make_item(P1, f"uncommitted number {{i}}", id=f"u{{i}}")
        tx.put_embeddings(MODEL, [item.content_hash], unit_rows(rng, 1))
        tx.put_memories([item])
    tx.delete_memory(P1, "pre2")
    tx.update_columns(P1, ["pre3"], archived=[True], layer=["core"])
    tx.kv_put(P1, {{"crash": True}})
    sys.stdout.write("inside\\n"); sys.stdout.flush()
    os._exit(3)
"""

CRASH_AT_A_RANDOM_POINT = LIGHT_IMPORT + """
import os, sys, threading, time
sys.path.insert(0, {here!r})
import numpy as np
from storage_helpers import P1, MODEL, make_item, put, unit_rows
{open_code}
rng = np.random.default_rng({seed})
def killer():
    time.sleep({delay})
    os._exit(4)
threading.Thread(target=killer, daemon=True).start()
for b in range(100000):
    items = [make_item(P1, f"batch {{b}} item {{j}}", id=f"b{{b}}-{{j}}") for j in range(3)]
    with store.transaction() as tx:
        tx.put_embeddings(MODEL, [i.content_hash for i in items], unit_rows(rng, 3))
        for i in items:
            tx.put_memories([i])
        if b % 7 == 3:
            tx.delete_memory(P1, f"b{{b - 2}}-0")
    sys.stdout.write(f"{{b}}\\n"); sys.stdout.flush()
"""


def _run_child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)


def _index_agrees_with_database(s, part=P1):
    """Dense search over everything returns exactly the live rows, each with its own vector."""
    flt = Filter(include_archived=True, session_id="s1")
    rows = {i.id: i for i in s.query(part, flt)}
    q = unit_rows(np.random.default_rng(0), 1)[0]
    found = [i for i, _ in s.vector_search(part, q, 100_000, flt)]
    assert sorted(found) == sorted(rows)
    cached = s.cached_embeddings(MODEL, [i.content_hash for i in rows.values()])
    vecs = s.vectors(part, list(rows))
    for j, (mid, item) in enumerate(rows.items()):
        np.testing.assert_array_equal(vecs[j], cached[item.content_hash])
    return rows


def test_a_crash_inside_a_transaction_keeps_committed_writes_only(backend, store):
    if not backend.processes:
        pytest.skip("backend cannot be opened from another process")
    rng = np.random.default_rng(0)
    pre = [make_item(P1, f"pre-existing number {i}", id=f"pre{i}") for i in range(5)]
    put(store, pre, unit_rows(rng, 5))
    _index_agrees_with_database(store)  # this handle's index is loaded before the crash
    res = _run_child(CRASH_IN_TRANSACTION.format(here=HERE, open_code=backend.child_open_code(store.contract_location)))
    assert res.returncode == 3 and res.stdout == "inside\n", res.stderr
    for s in (store, backend.open(store.contract_location)):
        rows = _index_agrees_with_database(s)
        assert set(rows) == {"pre0", "pre2", "pre3", "pre4"} | {f"c{i}" for i in range(5)}
        assert rows["pre3"].archived is False and rows["pre3"].layer is Layer.SEMANTIC
        assert s.get(P1, [f"u{i}" for i in range(5)]) == []
        assert s.kv_get(P1, "crash") is None
        assert s.lexical_search(P1, "uncommitted", 10) == []
        assert len(s.lexical_search(P1, "committed", 10)) == 5
        assert s.cached_embeddings(MODEL, [chash(f"uncommitted number {i}") for i in range(5)]) == {}
        new = make_item(P1, "written after the crash", id="after")
        put(s, [new], unit_rows(rng, 1))
        assert s.vector_search(P1, s.vectors(P1, ["after"])[0], 1)[0][0] == "after"
        with s.transaction() as tx:
            tx.delete_memory(P1, "after")
        if s is not store:
            s.close()


@pytest.mark.parametrize("delay", [0.15, 0.4])
def test_a_crash_at_any_point_leaves_the_index_agreeing_with_the_database(backend, store, delay):
    if not backend.processes:
        pytest.skip("backend cannot be opened from another process")
    _index_agrees_with_database(store)
    code = CRASH_AT_A_RANDOM_POINT.format(
        here=HERE, open_code=backend.child_open_code(store.contract_location), seed=int(delay * 100), delay=delay
    )
    res = _run_child(code)
    assert res.returncode == 4, res.stderr
    reported = [int(x) for x in res.stdout.split()]
    for s in (store, backend.open(store.contract_location)):
        rows = _index_agrees_with_database(s)
        batches: dict[int, set[int]] = {}
        for mid in rows:
            b, j = mid[1:].split("-")
            batches.setdefault(int(b), set()).add(int(j))
        assert set(reported) <= set(batches) | {b - 2 for b in reported if b % 7 == 3}
        # Every batch is all or nothing (except the first item of a batch deleted later).
        for b, js in batches.items():
            assert js in ({0, 1, 2}, {1, 2}), (b, js)
        # At most the one transaction that committed before it could be reported is extra.
        assert len(set(batches) - set(reported)) <= 1
        if s is not store:
            s.close()


def test_lexical_search_beyond_the_ranked_head_matches_a_full_ranking(store):
    """More matches than the first ranking step reads, most of them filtered out: the
    result is still the best k the filter allows, in BM25 order."""
    rng = np.random.default_rng(3)
    words = ["river", "stone", "maple", "harbor", "lantern"]
    items = []
    for n in range(400):
        text = " ".join(rng.choice(words, size=int(rng.integers(2, 9)))) + f" item{n}"
        items.append(make_item(P1, text, id=f"m{n:03d}", archived=bool(n % 7), layer=Layer.SEMANTIC if n % 3 else Layer.EPISODIC))
    put(store, items + [make_item(P2, "river river river", id="foreign")])
    for flt, k in ((Filter(), 10), (Filter(), 80), (Filter(include_archived=True), 30),
                   (Filter(layers=frozenset({Layer.EPISODIC})), 25), (Filter(include_archived=True), 200)):
        allowed = {i.id for i in items if (flt.include_archived or not i.archived)
                   and (flt.layers is None or i.layer in flt.layers)}
        full = store.lexical_search(P1, "river harbor", 1000, Filter(include_archived=True))
        expect = [(i, s) for i, s in full if i in allowed][:k]
        got = store.lexical_search(P1, "river harbor", k, flt)
        assert [s for _, s in got] == pytest.approx([s for _, s in expect])
        assert {i for i, _ in got} == {i for i, _ in expect} or len({s for _, s in expect}) < len(expect)
