"""A LangGraph graph whose node keeps per-user memories in zenbrain.

    pip install "zenbrain[langgraph]"
    python examples/langgraph_store.py [--path memory.db]

Run it twice: the second run finds what the first stored (the store is a file).
"""

from __future__ import annotations

import argparse
import hashlib
import operator
import tempfile
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from zenbrain import open_memory
from zenbrain.integrations.langgraph import ZenbrainStore


class State(TypedDict):
    user: str
    message: str
    replies: Annotated[list[str], operator.add]


def respond(state: State, *, store: BaseStore) -> dict:
    """Store "remember ..." messages; answer anything else from the closest memory."""
    ns = (state["user"], "memories")  # label 0 is the zenbrain user (see NamespaceMap)
    text = state["message"]
    if text.lower().startswith("remember "):
        fact = text[len("remember "):]
        store.put(ns, "fact-" + hashlib.sha256(fact.encode()).hexdigest()[:12], {"content": fact})
        return {"replies": [f"noted: {fact}"]}
    hits = store.search(ns, query=text, limit=1)
    return {"replies": [hits[0].value["content"] if hits else "nothing remembered yet"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", default=str(Path(tempfile.gettempdir()) / "zenbrain-langgraph-example.db"))
    args = parser.parse_args()
    builder = StateGraph(State)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    with open_memory(args.path) as memory:
        store = ZenbrainStore(memory)
        graph = builder.compile(store=store)
        for message in ["remember my sister Lea lives in Porto", "where does my sister live?"]:
            out = graph.invoke({"user": "alice", "message": message, "replies": []})
            print(f"> {message}\n{out['replies'][-1]}")
        print("namespaces:", store.list_namespaces())


if __name__ == "__main__":
    main()
