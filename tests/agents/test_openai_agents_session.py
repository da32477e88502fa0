"""ZenbrainSession against the real OpenAI Agents SDK: the runner keeps its history in
zenbrain (the model is a local server on 127.0.0.1 speaking the chat-completions format)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("agents")

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.memory import Session
from openai import AsyncOpenAI

from zenbrain import AsyncMemory, Scope, SimulatedClock, open_memory
from zenbrain.integrations.openai_agents import ZenbrainSession, item_text
from zenbrain.providers.hashing import HashingEmbedder
from zenbrain.providers.testing import FakeProviderServer

ALICE = Scope("alice")


@pytest.fixture(scope="module")
def server():
    set_tracing_disabled(True)  # no trace export: the tests stay on the loopback
    with FakeProviderServer() as srv:
        yield srv


def _agent(server) -> Agent:
    client = AsyncOpenAI(base_url=server.openai_url, api_key="k", max_retries=0)
    return Agent(name="assistant", instructions="Be brief.",
                 model=OpenAIChatCompletionsModel(model="fake-chat", openai_client=client))


def _open(path):
    return AsyncMemory(open_memory(path, embedder=HashingEmbedder(64), clock=SimulatedClock(1_700_000_000.0)))


def test_the_runner_keeps_history_in_zenbrain_across_runs_and_reopen(server, tmp_path):
    path = tmp_path / "agents.db"

    async def first():
        memory = _open(path)
        session = ZenbrainSession("conv-1", memory, ALICE)
        assert isinstance(session, Session)  # the SDK's own protocol check
        out = await Runner.run(_agent(server), "My name is Alice and I live in Lyon.", session=session)
        await memory.aclose()
        return out.final_output

    async def second():
        memory = _open(path)
        session = ZenbrainSession("conv-1", memory, ALICE)
        out = await Runner.run(_agent(server), "What is my name?", session=session)
        items = await session.get_items()
        lyon = await session.context("where does the user live?")
        other = await ZenbrainSession("conv-2", memory, ALICE).get_items()
        await memory.aclose()
        return out.final_output, items, lyon, other

    assert asyncio.run(first()) == "echo: My name is Alice and I live in Lyon."
    server.requests.clear()
    answer, items, lyon, other = asyncio.run(second())
    assert answer == "echo: What is my name?"
    # The model saw the first run's exchange, read back from the store.
    sent = server.requests_to("/v1/chat/completions")[-1].body["messages"]
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", "My name is Alice and I live in Lyon."),
        ("assistant", "echo: My name is Alice and I live in Lyon."),
        ("user", "What is my name?"),
    ]
    assert [i["role"] for i in items] == ["user", "assistant", "user", "assistant"]
    assert items[0] == {"content": "My name is Alice and I live in Lyon.", "role": "user"}
    # Durable memories were extracted from the messages and outlive the session.
    assert "I live in Lyon." in lyon
    assert other == []  # another session's history is its own


def test_limit_pop_and_clear(tmp_path):
    async def main():
        memory = _open(tmp_path / "s.db")
        session = ZenbrainSession("s1", memory, ALICE)
        call = {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": '{"city": "Lyon"}'}
        output = {"type": "function_call_output", "call_id": "c1", "output": "sunny"}
        await session.add_items([{"role": "user", "content": "I love hiking in the Alps."}, call, output])
        await session.add_items([{"role": "assistant", "content": [{"type": "output_text", "text": "Sunny!"}]}])
        last_two = await session.get_items(limit=2)
        popped = await session.pop_item()
        after_pop = await session.get_items()
        await session.clear_session()
        cleared = await session.get_items()
        empty_pop = await session.pop_item()
        durable = await session.context("what does the user love?")
        await memory.aclose()
        return last_two, popped, after_pop, cleared, empty_pop, durable, call, output

    last_two, popped, after_pop, cleared, empty_pop, durable, call, output = asyncio.run(main())
    assert last_two == [output, {"role": "assistant", "content": [{"type": "output_text", "text": "Sunny!"}]}]
    assert popped["role"] == "assistant" and after_pop[1:] == [call, output]
    assert cleared == [] and empty_pop is None
    assert "I love hiking in the Alps." in durable  # clear_session keeps durable memories


def test_item_text_is_readable():
    assert item_text({"role": "user", "content": "hi"}) == "user: hi"
    assert item_text({"type": "function_call", "name": "f", "arguments": "{}"}) == "[tool call] f({})"
    assert item_text({"type": "function_call_output", "output": "ok"}) == "[tool output] ok"
    assert item_text({"type": "reasoning", "summary": []}) == "[reasoning]"
