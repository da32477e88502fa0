"""Running a mechanism's dialogue with the chat model.

Mechanisms that may consult an LLM (the iMAD debate, System-2 abstraction) write their
exchange as a generator: it yields the messages of each turn, takes the reply (or the
exception the model raised) and returns its result. The pipeline runs it here, before
any write transaction opens, so a slow model never holds the database.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

from ..providers.base import ChatModel

T = TypeVar("T")


def run_dialogue(chat: ChatModel, dialogue: Generator[list[dict[str, str]], str | BaseException, T], *,
                 max_tokens: int, temperature: float) -> T:
    """Drive ``dialogue`` with ``chat`` until it returns; a provider failure is handed to
    the dialogue (which decides how to fall back), never raised."""
    try:
        messages = next(dialogue)
        while True:
            reply: str | BaseException
            try:
                reply = chat.complete(messages, max_tokens=max_tokens, temperature=temperature)
            except Exception as exc:  # noqa: BLE001 - any provider failure is the dialogue's to handle
                reply = exc
            messages = dialogue.send(reply)
    except StopIteration as stop:
        return stop.value
