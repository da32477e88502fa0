"""LangMem's memory tools on zenbrain: they find the store they are given and use it
through the BaseStore interface (LangMem's namespace puts the user second)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langmem")

from langmem import create_manage_memory_tool, create_search_memory_tool

from zenbrain import Scope
from zenbrain.integrations.langgraph import ZenbrainStore

NS = ("memories", "{langgraph_user_id}")


def _cfg(user: str) -> dict:
    return {"configurable": {"langgraph_user_id": user}}


def test_langmem_tools_create_search_update_and_delete_in_zenbrain(open_store):
    memory = open_store()
    store = ZenbrainStore(memory, user_label=1)
    manage = create_manage_memory_tool(namespace=NS, store=store)
    search = create_search_memory_tool(namespace=NS, store=store, response_format="content_and_artifact")

    manage.invoke({"content": "Alice prefers dark roast coffee", "action": "create"}, config=_cfg("alice"))
    manage.invoke({"content": "Alice's sister is called Lea", "action": "create"}, config=_cfg("alice"))
    manage.invoke({"content": "Bob prefers green tea", "action": "create"}, config=_cfg("bob"))
    # Stored as zenbrain memories of each user, in the context of the namespace's other label.
    assert {m.content for m in memory.list_memories(Scope("alice", "langgraph", context="lg.memories"))} == {
        "Alice prefers dark roast coffee", "Alice's sister is called Lea"}

    hits = search.invoke({"type": "tool_call", "id": "1", "name": "search_memory",
                             "args": {"query": "what coffee does she like?"}}, config=_cfg("alice")).artifact
    assert hits[0].value == {"content": "Alice prefers dark roast coffee"}
    assert all(h.namespace == ("memories", "alice") for h in hits)

    coffee = hits[0].key
    manage.invoke({"content": "Alice switched to decaf", "action": "update", "id": coffee}, config=_cfg("alice"))
    assert store.get(("memories", "alice"), coffee).value == {"content": "Alice switched to decaf"}
    manage.invoke({"action": "delete", "id": coffee}, config=_cfg("alice"))
    assert store.get(("memories", "alice"), coffee) is None

    bob = asyncio.run(search.ainvoke({"type": "tool_call", "id": "2", "name": "search_memory",
                                      "args": {"query": "sister"}}, config=_cfg("bob"))).artifact
    assert [h.value["content"] for h in bob] == ["Bob prefers green tea"]  # never Alice's
