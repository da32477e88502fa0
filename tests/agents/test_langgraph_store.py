"""ZenbrainStore against the real LangGraph package: the BaseStore operations, the
namespace-to-scope mapping, and a compiled graph that reads and writes memories."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, TypedDict

import pytest

pytest.importorskip("langgraph")

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, PutOp, SearchOp

from zenbrain import AsyncMemory, Scope, SimulatedClock, ValidationError
from zenbrain.integrations.langgraph import (
    NamespaceMap,
    ZenbrainStore,
    decode_label,
    encode_label,
)

T0 = 1_700_000_000.0


@pytest.fixture
def store(open_store):
    return ZenbrainStore(open_store(clock=SimulatedClock(T0)))


def test_put_get_update_delete(store):
    ns = ("alice", "memories")
    store.put(ns, "tea", {"content": "Alice prefers green tea", "topic": "drinks"})
    item = store.get(ns, "tea")
    assert (item.namespace, item.key, item.value) == (ns, "tea", {"content": "Alice prefers green tea", "topic": "drinks"})
    assert item.created_at.timestamp() == T0
    store.put(ns, "tea", {"content": "Alice now prefers black tea"})
    assert store.get(ns, "tea").value == {"content": "Alice now prefers black tea"}
    # The update kept the earlier version in the memory's history.
    m = store.memory.sync
    [mem] = [x for x in m.list_memories(Scope("alice", "langgraph", context="lg.memories")) if x.metadata["lg_key"] == "tea"]
    assert mem.version == 2 and [e.action for e in m.history(mem.id, mem.scope)] == ["created", "updated"]
    store.delete(ns, "tea")
    assert store.get(ns, "tea") is None
    assert store.get(ns, "never") is None


def test_namespaces_map_to_one_users_scope_and_contexts():
    nm = NamespaceMap()
    assert nm.scope(("alice",)) == Scope("alice", "langgraph", context="lg")
    assert nm.scope(("alice", "memories")) == Scope("alice", "langgraph", context="lg.memories")
    assert nm.scope(("bob", "prefs", "ui v2")) == Scope("bob", "langgraph", context="lg.prefs.ui+20v2")
    assert NamespaceMap(user_label=1).scope(("memories", "alice")) == Scope("alice", "langgraph", context="lg.memories")
    for label in ["ui v2", "é/ü+x", "a:b@c-d_e", "emoji 🙂"]:
        assert decode_label(encode_label(label)) == label
    assert nm.namespace("bob", "lg.prefs.ui+20v2") == ("bob", "prefs", "ui v2")
    assert nm.namespace("bob", "default") is None
    with pytest.raises(ValidationError):
        NamespaceMap(user_label=1).scope(("memories",))


def test_search_ranks_by_recall_and_never_crosses_users(store):
    store.put(("alice", "memories"), "tea", {"content": "Alice prefers green tea in the morning"})
    store.put(("alice", "memories"), "home", {"content": "Alice lives in Lyon near the river"})
    store.put(("alice", "work"), "job", {"content": "Alice works as a baker at the market"})
    store.put(("bob", "memories"), "tea", {"content": "Bob prefers green tea too"})
    hits = store.search(("alice", "memories"), query="green tea", limit=1)
    assert [(h.namespace, h.key) for h in hits] == [(("alice", "memories"), "tea")] and hits[0].score > 0
    everything = store.search(("alice",), query="green tea", limit=10)
    assert {h.namespace for h in everything} == {("alice", "memories"), ("alice", "work")}
    assert all(h.namespace[0] == "alice" for h in everything)
    assert everything == sorted(everything, key=lambda h: -h.score)
    with pytest.raises(ValidationError):
        ZenbrainStore(store.memory, user_label=1).search(("memories",), query="tea")


def test_search_without_query_filters_offsets_and_index_false(store):
    ns = ("alice", "notes")
    for i in range(5):
        store.memory.sync.clock.advance(seconds=10)
        store.put(ns, f"n{i}", {"content": f"note number {i}", "n": i, "tags": {"kind": "odd" if i % 2 else "even"}})
    store.memory.sync.clock.advance(seconds=10)
    store.put(ns, "secret", {"content": "hidden from ranking", "n": 99}, index=False)
    newest = store.search(ns, limit=2)
    assert [h.key for h in newest] == ["secret", "n4"] and all(h.score is None for h in newest)
    assert [h.key for h in store.search(ns, limit=2, offset=2)] == ["n3", "n2"]
    assert sorted(h.key for h in store.search(ns, filter={"n": {"$gte": 3, "$lt": 50}})) == ["n3", "n4"]
    assert sorted(h.key for h in store.search(ns, filter={"tags": {"kind": "odd"}})) == ["n1", "n3"]
    assert sorted(h.key for h in store.search(ns, filter={"n": {"$ne": 0}, "tags": {"kind": "even"}})) == ["n2", "n4"]
    ranked = store.search(ns, query="hidden from ranking", limit=10)
    assert "secret" not in {h.key for h in ranked} and ranked


def test_index_fields_choose_the_ranked_text(open_store):
    store = ZenbrainStore(open_store(), index={"dims": 64, "embed": "unused", "fields": ["title"]})
    store.put(("alice", "docs"), "d1", {"title": "sourdough starter feeding", "body": "unrelated words here"})
    m = store.memory.sync
    [mem] = m.list_memories(Scope("alice", "langgraph", context="lg.docs"))
    assert mem.content == "sourdough starter feeding"
    store.put(("alice", "docs"), "d2", {"title": "x", "body": "kayak trip"}, index=["body"])
    assert {x.content for x in m.list_memories(Scope("alice", "langgraph", context="lg.docs"))} == {
        "sourdough starter feeding", "kayak trip"}


def test_list_namespaces_with_conditions(store):
    for ns in [("alice", "memories"), ("alice", "prefs", "ui"), ("bob", "memories"), ("bob", "prefs", "ui")]:
        store.put(ns, "k", {"content": f"value in {'/'.join(ns)}"})
    assert store.list_namespaces() == [("alice", "memories"), ("alice", "prefs", "ui"), ("bob", "memories"),
                                       ("bob", "prefs", "ui")]
    assert store.list_namespaces(prefix=("bob",)) == [("bob", "memories"), ("bob", "prefs", "ui")]
    assert store.list_namespaces(suffix=("ui",)) == [("alice", "prefs", "ui"), ("bob", "prefs", "ui")]
    assert store.list_namespaces(prefix=("*", "prefs")) == [("alice", "prefs", "ui"), ("bob", "prefs", "ui")]
    assert store.list_namespaces(max_depth=1) == [("alice",), ("bob",)]
    assert store.list_namespaces(limit=1, offset=1) == [("alice", "prefs", "ui")]
    store.delete(("bob", "memories"), "k")
    assert ("bob", "memories") not in store.list_namespaces()


def test_batch_runs_mixed_ops_in_order(store):
    ns = ("alice", "m")
    out = store.batch([PutOp(ns, "a", {"content": "Alice rides a red bike"}), GetOp(ns, "a"),
                       SearchOp(ns, query="bike"), ListNamespacesOp(), PutOp(ns, "a", None), GetOp(ns, "a")])
    assert out[0] is None and out[1].value == {"content": "Alice rides a red bike"}
    assert [h.key for h in out[2]] == ["a"] and out[3] == [ns] and out[5] is None
    with pytest.raises(Exception, match="periods"):
        store.batch([GetOp(("alice", "a.b"), "k")])


def test_async_operations_share_the_store_safely(open_store):
    async def main():
        am = AsyncMemory(open_store())
        store = ZenbrainStore(am)
        await asyncio.gather(*(store.aput(("u", "facts"), f"k{i}", {"content": f"fact {i} about lakes"})
                               for i in range(60)))
        found, listed, got = await asyncio.gather(store.asearch(("u", "facts"), query="lakes", limit=5),
                                                  store.asearch(("u", "facts"), limit=100),
                                                  store.aget(("u", "facts"), "k7"))
        sync_view = store.get(("u", "facts"), "k8")  # the sync entry point on the same lock
        await am.aclose()
        return found, listed, got, sync_view

    found, listed, got, sync_view = asyncio.run(main())
    assert len(found) == 5 and len(listed) == 60
    assert got.value == {"content": "fact 7 about lakes"} and sync_view.value == {"content": "fact 8 about lakes"}


class State(TypedDict):
    user: str
    message: str
    replies: Annotated[list[str], operator.add]


def _remember(state: State, *, store: BaseStore) -> dict:
    ns = (state["user"], "memories")
    if state["message"].startswith("remember "):
        fact = state["message"].removeprefix("remember ")
        store.put(ns, f"m{len(store.search(ns, limit=100))}", {"content": fact})
        return {"replies": ["noted"]}
    hits = store.search(ns, query=state["message"], limit=1)
    return {"replies": [hits[0].value["content"] if hits else "I don't know"]}


def _graph(store: ZenbrainStore):
    builder = StateGraph(State)
    builder.add_node("remember", _remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    return builder.compile(store=store)


def test_a_compiled_graph_remembers_across_invocations_and_reopens(tmp_path):
    from zenbrain import open_memory
    from zenbrain.providers.hashing import HashingEmbedder

    path = tmp_path / "graph.db"
    with open_memory(path, embedder=HashingEmbedder(64)) as m:
        graph = _graph(ZenbrainStore(m))
        graph.invoke({"user": "alice", "message": "remember Alice's cat is called Miso", "replies": []})
        graph.invoke({"user": "alice", "message": "remember Alice drives a green van", "replies": []})
        graph.invoke({"user": "bob", "message": "remember Bob's cat is called Tiger", "replies": []})
    with open_memory(path, embedder=HashingEmbedder(64)) as m:  # a new process would see the same
        graph = _graph(ZenbrainStore(m))
        out = graph.invoke({"user": "alice", "message": "what is the cat called?", "replies": []})
        assert out["replies"] == ["Alice's cat is called Miso"]
        out = asyncio.run(graph.ainvoke({"user": "bob", "message": "what is the cat called?", "replies": []}))
        assert out["replies"] == ["Bob's cat is called Tiger"]
