"""The MCP server: ``zenbrain mcp`` over real stdio with the SDK's client, and ``create_server`` in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from zenbrain import Scope, open_memory
from zenbrain.cli import main
from zenbrain.server.mcp_server import create_server

SRC = Path(__file__).resolve().parents[2] / "src"
EMB = ["--embedder", "hashing:64"]
TOOLS = {
    "remember", "recall", "get_memory", "update_memory", "forget", "history", "relate", "relations",
    "record_evidence", "review_queue", "review", "sleep", "stats", "assemble_prompt",
    "revise", "rollback", "restore", "episodes", "intend", "due_intentions", "set_goal", "end_session", "decay",
    "unrelate", "remember_many",
}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ZENBRAIN_EMBEDDER", "ZENBRAIN_USER")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH")) if p)
    return env


def _command(db: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "zenbrain.cli", "mcp", "--path", str(db), *EMB, *options]


@asynccontextmanager
async def serve(db: Path, errlog: Any, *options: str) -> AsyncIterator[ClientSession]:
    """A client session with ``zenbrain mcp`` launched as a subprocess, over its stdin/stdout."""
    cmd = _command(db, *options)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=_env())
    garbage: list[Exception] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):  # a line on stdout that is not a protocol message
            garbage.append(message)

    async with stdio_client(params, errlog=errlog) as (read, write), \
            ClientSession(read, write, message_handler=on_message) as session:
        await session.initialize()
        yield session
    assert not garbage, garbage


async def call(session: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured result; fails on a tool error."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def error(session: Any, tool: str, **arguments: Any) -> str:
    """A tool error's text; fails when the call succeeds."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    text = " ".join(c.text for c in result.content)
    assert "Traceback" not in text
    return text


def test_stdio_tools_store_recall_relate_and_report_errors(tmp_path: Path):
    db = tmp_path / "memory.db"

    async def body(errlog: Any) -> None:
        async with serve(db, errlog, "--user", "alice") as s:
            listed = {t.name: t for t in (await s.list_tools()).tools}
            assert TOOLS <= set(listed)
            assert all(listed[name].description for name in TOOLS)
            assert "content" in listed["remember"].input_schema["properties"]
            assert "forget_scope" not in listed  # too destructive for an agent's tool
            assert listed["episodes"].annotations.read_only_hint
            assert listed["unrelate"].annotations.destructive_hint and not listed["revise"].annotations.destructive_hint

            many = (await call(s, "remember_many", memories=[
                {"content": "Alice likes green tea", "kind": "preference"},
                {"content": "Alice ran a marathon", "metadata": {"n": 1}, "event_time": "2023-04-01T09:00:00Z"},
            ]))["memories"]
            assert len(many) == 2 and many[0]["kind"] == "preference"
            ran = await call(s, "get_memory", id=many[1]["id"])
            assert ran["metadata"]["n"] == 1 and ran["event_time"] == pytest.approx(1680339600.0)
            for m in many:
                await call(s, "forget", id=m["id"])

            a = await call(s, "remember", content="Caroline went to a support group on 7 May 2023",
                           event_time="2023-05-07T10:00:00Z", metadata={"source": "chat"})
            assert set(a) == {"id", "layer", "kind"}
            b = await call(s, "remember", content="Caroline is researching adoption agencies", importance=0.8)
            hits = (await call(s, "recall", query="When did Caroline go to the support group?", k=3))["hits"]
            assert hits[0]["id"] == a["id"]
            assert hits[0]["metadata"] == {"source": "chat"}
            assert hits[0]["event_time"] == pytest.approx(1683453600.0)
            assert {"score", "layer", "content"} <= set(hits[0])

            edge = await call(s, "relate", src_id=a["id"], relation="supports", dst_id=b["id"], weight=0.7)
            assert (edge["src"], edge["relation"], edge["dst"]) == (a["id"], "supports", b["id"])
            rels = (await call(s, "relations", id=b["id"], relation="supports"))["relations"]
            assert [(e["src"], e["relation"]) for e in rels] == [(a["id"], "supports")]

            ev = await call(s, "record_evidence", id=b["id"], supports=False, strength=2.0)
            assert ev["confidence"] == pytest.approx(1 / 4)

            stats = await call(s, "stats")
            assert stats["memories"] == 2 and stats["scope"]["user_id"] == "alice"

            gone = await call(s, "forget", id=a["id"])
            assert gone["forgotten"] == a["id"] and gone["receipt"]["memory_ids"] == [a["id"]]
            assert gone["receipt"]["scrubbed"] is True
            assert f"no memory {a['id']!r} in this scope" in await error(s, "get_memory", id=a["id"])
            assert "content is empty" in await error(s, "remember", content="")
            assert "unknown kind" in await error(s, "remember", content="x", kind="gossip")
            assert (await call(s, "stats"))["memories"] == 1  # the server still serves after errors

    with open(tmp_path / "server.err", "w") as errlog:
        anyio.run(body, errlog)
    assert "Traceback" not in (tmp_path / "server.err").read_text()


def test_a_server_serves_one_user_only(tmp_path: Path):
    db = tmp_path / "memory.db"
    open_memory(str(db), embedder="hashing:64").close()  # both servers open an existing store

    async def body(errlog: Any) -> None:
        async with serve(db, errlog, "--user", "alice") as alice, serve(db, errlog, "--user", "bob") as bob:
            mine = await call(alice, "remember", content="My bank PIN hint is the name of my first cat")
            assert (await call(alice, "recall", query="bank PIN hint"))["hits"][0]["id"] == mine["id"]

            assert (await call(bob, "recall", query="bank PIN hint first cat", k=10))["hits"] == []
            for tool in ("get_memory", "history", "forget", "relations"):
                assert "in this scope" in await error(bob, tool, id=mine["id"])
            assert "in this scope" in await error(bob, "update_memory", id=mine["id"], content="hacked")
            assert (await call(bob, "stats"))["memories"] == 0

            theirs = await call(bob, "remember", content="Bob's bank PIN hint is his street")
            assert "in this scope" in await error(alice, "get_memory", id=theirs["id"])
            assert (await call(alice, "get_memory", id=mine["id"]))["content"].startswith("My bank PIN")

    with open(tmp_path / "server.err", "w") as errlog:
        anyio.run(body, errlog)
    assert "Traceback" not in (tmp_path / "server.err").read_text()


def test_the_server_writes_nothing_but_protocol_to_stdout(tmp_path: Path):
    db = tmp_path / "new.db"  # created on first launch
    run = subprocess.run(_command(db, "--user", "alice"), input="", capture_output=True, text=True,
                         env=_env(), timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout == ""
    assert db.exists()


def test_without_the_sdk_the_command_names_the_extra(tmp_path: Path, monkeypatch, capsys):
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if the SDK were not installed
    monkeypatch.delitem(sys.modules, "zenbrain.server.mcp_server", raising=False)
    code = main(["mcp", "--path", str(tmp_path / "m.db"), *EMB])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert 'pip install "zenbrain[server]"' in err[0]


def test_create_server_in_process(tmp_path: Path):
    mem = open_memory(str(tmp_path / "memory.db"), embedder="hashing:64")
    scope = Scope("carol", agent_id="planner", context="work")
    server = create_server(mem, scope)

    async def body() -> None:
        async with Client(server) as c:
            m = await call(c, "remember", content="The quarterly report is due on Friday", event_time=1.7e9)
            item = await call(c, "update_memory", id=m["id"], content="The quarterly report is due on Monday",
                              importance=0.9)
            assert (item["content"], item["version"], item["importance"]) == (
                "The quarterly report is due on Monday", 2, 0.9)
            assert item["context"] == "work" and item["agent_id"] == "planner"
            actions = [e["action"] for e in (await call(c, "history", id=m["id"]))["events"]]
            assert actions == ["created", "updated"]
            assert isinstance((await call(c, "review_queue", limit=5))["memories"], list)
            assert (await call(c, "review", id=m["id"], grade="good"))["id"] == m["id"]
            assert "unknown feedback" in await error(c, "review", id=m["id"], grade="splendid")
            assert "event_time must be ISO 8601" in await error(c, "remember", content="x", event_time="someday")
            # Strict arguments: unknown names, wrong types and out-of-range numbers are named in one line.
            text = await error(c, "remember", content="x", importanse=0.9)
            assert "unknown argument(s) 'importanse'" in text and "importance" in text and "http" not in text
            assert "k:" in await error(c, "recall", query="report", k=10**9)
            assert "limit:" in await error(c, "episodes", limit=10**12)
            text = await error(c, "remember_many", memories=[{"content": "fine"}, {"content": "   "}])
            assert "memories[1]: content is empty" in text
            assert "memories[0]" in await error(c, "remember_many", memories=[{"content": "x", "colour": "red"}])
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert tools["remember"].input_schema["additionalProperties"] is False
            assert (await call(c, "sleep"))["operation"] == "sleep"
            ctx = await call(c, "assemble_prompt", query="when is the quarterly report due?", budget_tokens=200)
            assert "Monday" in ctx["text"] and ctx["tokens"] <= 200
            res = await c.read_resource("zenbrain://stats")
            assert json.loads(res.contents[0].text)["scope"]["context"] == "work"

            def broken(*args: Any, **kw: Any) -> Any:
                raise RuntimeError("secret internals")

            await more_tools(c)

            mem.stats = broken  # a failure that is not the library's: generic message only
            text = await error(c, "stats")
            assert "secret" not in text and "stats" in text

    try:
        anyio.run(body)
    finally:
        mem.close()


async def more_tools(c: Any) -> None:
    """revise, rollback, restore, episodes, intentions, goal, decay, unrelate, end_session."""
    old = await call(c, "remember", content="The printer code is 4411", event_time=1.6e9)
    new = await call(c, "remember", content="The new printer code is 9020", event_time=1.65e9, supersedes=[old["id"]])
    ids = [h["id"] for h in (await call(c, "recall", query="printer code", k=5, touch=False))["hits"]]
    assert new["id"] in ids and old["id"] not in ids
    then = (await call(c, "recall", query="printer code", k=5, touch=False, as_of="2020-10-01T00:00:00Z"))["hits"]
    assert [h["id"] for h in then] == [old["id"]]
    m = await call(c, "remember", content="The team meeting is on Tuesday at ten in room four")
    out = await call(c, "revise", id=m["id"], content="The team meeting is on Wednesday at ten in room four",
                     correction=True)
    assert out["mode"] in {"confirmed", "selective_edit", "integration", "new_episode", "blocked", "protected"}
    assert out["memory"]["id"] == m["id"]
    events = (await call(c, "history", id=m["id"]))["events"]
    # a new episode from the correction supersedes the memory after the reconsolidation
    done = [e for e in events if e["action"] == "reconsolidated"]
    assert done and done[-1]["detail"]["mode"] == out["mode"]
    before = out["memory"]["content"]
    await call(c, "update_memory", id=m["id"], content="The team meeting is cancelled")
    assert (await call(c, "rollback", id=m["id"]))["content"] == before
    assert (await call(c, "restore", id=m["id"]))["archived"] is False
    for tool in ("revise", "rollback", "restore"):
        args = {"content": "x"} if tool == "revise" else {}
        assert "no memory 'nope' in this scope" in await error(c, tool, id="nope", **args)

    for text, t in [("Dana moved to Oslo", 1683450000), ("Dana started a new job", 1690000000),
                    ("Dana adopted a cat", 1700000000)]:
        await call(c, "remember", content=text, kind="episode", event_time=t)
    got = (await call(c, "episodes", start="2023-06-01T00:00:00Z", end=1695000000))["memories"]
    assert [e["content"] for e in got] == ["Dana started a new job"]
    assert "start must be ISO 8601" in await error(c, "episodes", start="last spring")

    cued = await call(c, "intend", action="Ask whether Dana's cat has a name", cue="cat")
    assert "cue_embedding" not in cued
    fired = (await call(c, "recall", query="tell me about the cat", k=1))["intentions"]
    assert [(f["intention_id"], f["trigger"]) for f in fired] == [(cued["id"], "keyword")]
    timed = await call(c, "intend", action="Water the plants", due_at="2020-01-01T08:00:00Z")
    assert [f["intention_id"] for f in (await call(c, "due_intentions"))["intentions"]] == [timed["id"]]
    assert (await call(c, "due_intentions"))["intentions"] == []
    assert "needs a cue or a due time" in await error(c, "intend", action="something")

    assert await call(c, "set_goal", goal="prepare the team meeting") == {"goal": "prepare the team meeting"}
    assert (await call(c, "decay"))["operation"] == "decay"
    a, b = got[0]["id"], m["id"]
    await call(c, "relate", src_id=a, relation="causes", dst_id=b)
    assert await call(c, "unrelate", src_id=a, relation="causes", dst_id=b) == {"removed": True}
    assert await call(c, "unrelate", src_id=a, relation="causes", dst_id=b) == {"removed": False}
    assert "session_id" in await error(c, "end_session")  # this server's scope has no session
    before = (await call(c, "stats"))["memories"]
    assert "content is empty" in await error(c, "remember_many", memories=[{"content": "fine"}, {"content": ""}])
    assert (await call(c, "stats"))["memories"] == before  # all or nothing


def test_end_session_with_a_session_scope(tmp_path: Path):
    with open_memory(str(tmp_path / "memory.db"), embedder="hashing:64") as mem:
        server = create_server(mem, Scope("erin", session_id="s1"))

        async def body() -> None:
            async with Client(server) as c:
                await call(c, "remember", content="We are talking about trains", layer="working")
                assert (await call(c, "end_session"))["operation"] == "end_session"

        anyio.run(body)
