"""A chat agent that remembers across runs, in one file.

    python examples/chat_agent.py                       # offline: a deterministic stand-in model
    ZENBRAIN_CHAT="openai:gpt-4o-mini" OPENAI_API_KEY=... python examples/chat_agent.py
    ZENBRAIN_CHAT="ollama:qwen2.5:7b" python examples/chat_agent.py --extractor llm

Type a message per line (or pipe them in); an empty line or end of input ends the run.
Each turn: recall what is relevant to the message, answer with it in the system prompt,
then ingest the exchange with ``add_messages`` (episodes plus durable memories, by the
offline rules or, with ``--extractor llm``, by the chat model). At the end of the run the
session is closed and the memory sleeps (consolidation, forgetting, replay).

Options: ``--path`` (default ``$ZENBRAIN_PATH`` or ``~/.zenbrain/memory.db``), ``--user``,
``--session``. The embedder follows ``$ZENBRAIN_EMBEDDER`` (default MiniLM, offline).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import uuid
from collections.abc import Sequence

from zenbrain import Scope, open_memory
from zenbrain.api import default_path
from zenbrain.ingest import LLMExtractor, RuleExtractor, add_messages
from zenbrain.providers.base import ChatModel
from zenbrain.providers.factory import make_chat

SYSTEM = "You are a helpful assistant with a long-term memory of this user."


class OfflineModel:
    """A deterministic stand-in for an LLM: it answers from the memories in its prompt.

    It repeats the remembered line that shares most words with the question, or
    acknowledges a statement. Enough to see memory work without any model."""

    name = "offline:echo-memory"

    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int = 512, temperature: float = 0.0) -> str:
        question = messages[-1]["content"]
        remembered = re.findall(r"^- (.+)$", messages[0]["content"], re.MULTILINE)
        if not question.rstrip().endswith("?"):
            return "Got it, I'll remember that."
        words = set(re.findall(r"[a-z']+", question.lower())) - {"what", "where", "do", "does", "i", "my", "is", "the"}
        best = max(remembered, key=lambda m: len(words & set(re.findall(r"[a-z']+", m.lower()))), default=None)
        return f"You told me: {best}" if best else "I don't remember that yet."


def chat_model() -> ChatModel:
    spec = os.environ.get("ZENBRAIN_CHAT")
    return make_chat(spec) if spec else OfflineModel()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A chat agent that remembers across runs.")
    parser.add_argument("--path", default=default_path())
    parser.add_argument("--user", default="me")
    parser.add_argument("--session", default=None, help="session id (default: a new one per run)")
    parser.add_argument("--extractor", choices=["rules", "llm"], default="rules")
    args = parser.parse_args(argv)

    model = chat_model()
    extractor = LLMExtractor(model) if args.extractor == "llm" else RuleExtractor()
    session = args.session or uuid.uuid4().hex[:12]
    scope = Scope(args.user, "chat-agent", session_id=session)
    history: list[dict[str, str]] = []
    with open_memory(args.path) as memory:
        for line in sys.stdin:
            text = line.strip()
            if not text:
                break
            recalled = memory.recall(text, scope.with_session(None), k=5)
            notes = "\n".join(f"- {h.content}" for h in recalled)
            system = SYSTEM + ("\nWhat you remember:\n" + notes if notes else "")
            answer = model.complete([{"role": "system", "content": system}, *history[-6:],
                                     {"role": "user", "content": text}])
            print(f"> {text}\n{answer}", flush=True)
            exchange = [{"role": "user", "content": text}, {"role": "assistant", "content": answer}]
            history += exchange
            add_messages(memory, exchange, scope, extractor=extractor)
        memory.end_session(scope)
        memory.sleep(scope.with_session(None))
        print(f"[{memory.stats(scope.with_session(None))['memories']} memories; slept]", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
