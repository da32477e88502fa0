"""An OpenAI Agents SDK agent whose conversation and long-term memory live in zenbrain.

    pip install "zenbrain[openai-agents]"
    python examples/openai_agents_session.py [--path memory.db]

With ``OPENAI_API_KEY`` set (and optionally ``OPENAI_BASE_URL`` for any OpenAI-compatible
server) it talks to that model; without, it starts zenbrain's local stand-in server on
127.0.0.1 (answers echo the question) so the example runs offline.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import tempfile
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

from zenbrain import Scope, open_async_memory
from zenbrain.integrations.openai_agents import ZenbrainSession
from zenbrain.providers.testing import FakeProviderServer


async def run(path: str, base_url: str, api_key: str, model: str) -> None:
    memory = open_async_memory(path)
    session = ZenbrainSession("demo-conversation", memory, Scope("alice"))
    client = AsyncOpenAI(base_url=base_url, api_key=api_key)

    async def instructions(ctx, agent) -> str:  # what zenbrain remembers, in the system prompt
        items = await session.get_items(limit=1)
        last = items[-1].get("content") if items else ""
        notes = await session.context(last if isinstance(last, str) and last else "the user")
        return "You are a helpful assistant." + (f"\nYou remember:\n{notes}" if notes else "")

    agent = Agent(name="assistant", instructions=instructions,
                  model=OpenAIChatCompletionsModel(model=model, openai_client=client))
    for message in ["Hi, I'm Alice. I live in Porto and I love surfing.", "What do you know about me?"]:
        result = await Runner.run(agent, message, session=session)
        print(f"> {message}\n{result.final_output}")
    print("history items:", len(await session.get_items()))
    print("remembered:\n" + await session.context("Alice surfing Porto"))
    await memory.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", default=str(Path(tempfile.gettempdir()) / "zenbrain-agents-example.db"))
    args = parser.parse_args()
    set_tracing_disabled(True)
    key = os.environ.get("OPENAI_API_KEY")
    with contextlib.ExitStack() as stack:
        if key:
            base, model = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"), "gpt-4o-mini"
        else:
            server = stack.enter_context(FakeProviderServer())
            base, key, model = server.openai_url, "offline", "stand-in"
        asyncio.run(run(args.path, base, key, model))


if __name__ == "__main__":
    main()
