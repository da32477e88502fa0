"""zenbrain as conversation memory for the OpenAI Agents SDK (its ``Session`` protocol).

    from agents import Agent, Runner
    from zenbrain import open_async_memory, Scope
    from zenbrain.integrations.openai_agents import ZenbrainSession

    memory = open_async_memory("memory.db")
    session = ZenbrainSession("chat-42", memory, Scope("alice"))
    await Runner.run(agent, "I moved to Lyon last week", session=session)

Install with ``pip install "zenbrain[openai-agents]"``.

What it keeps
-------------
* The transcript: every item the runner adds (messages, tool calls and their outputs,
  reasoning items) is one episodic memory of ``scope``, its text readable by recall
  (``"user: ..."``, ``"[tool call] name(args)"``) and the item itself in the metadata
  (``agents_session``, ``seq``, ``item``), so ``get_items`` returns exactly what was
  added, in order. An item must fit zenbrain's metadata limit (64 KB as JSON).
* Durable memories: the user and assistant messages of each ``add_items`` call go
  through :func:`zenbrain.ingest.add_messages` (episodes off, since the transcript already
  holds them) with the session's extractor (offline rules by default, or an
  :class:`~zenbrain.ingest.LLMExtractor`), so facts, preferences, identity and plans
  outlive the session: ``pop_item`` and ``clear_session`` remove transcript items only.

:meth:`ZenbrainSession.recall` and :meth:`ZenbrainSession.context` give the agent what it
remembers across sessions (e.g. in dynamic instructions).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

try:
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings
except ImportError as exc:  # pragma: no cover - depends on the extra
    raise ImportError('zenbrain.integrations.openai_agents needs the OpenAI Agents SDK: '
                      'pip install "zenbrain[openai-agents]"') from exc

from ..aio import AsyncMemory
from ..api import MemoryCoordinator
from ..errors import ValidationError
from ..ingest import Extractor, RuleExtractor, add_messages
from ..ingest.messages import content_text
from ..model import Layer, MemoryItem, Scope
from ..results import RecallResult

__all__ = ["ZenbrainSession", "item_text"]

SOURCE = "openai-agents"
_MAX_TEXT = 4000


def item_text(item: dict[str, Any]) -> str:
    """Readable text of a Responses-API input item (what recall ranks)."""
    kind = item.get("type")
    if "role" in item and kind in (None, "message"):
        text = content_text(item.get("content"))
        return f"{item['role']}: {text}" if text else f"[{item['role']} message]"
    if kind == "function_call":
        return f"[tool call] {item.get('name', '?')}({item.get('arguments', '')})"
    if kind == "function_call_output":
        out = item.get("output")
        return f"[tool output] {out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)}"
    return f"[{kind or 'item'}]"


class ZenbrainSession:
    """An OpenAI Agents SDK session whose history and lasting memories live in zenbrain.

    ``session_id`` names the conversation (any non-empty string); ``scope`` is whose
    memory it is. ``extractor`` finds durable memories (default
    :class:`~zenbrain.ingest.RuleExtractor`); ``ingest=False`` keeps the transcript only.
    """

    def __init__(
        self,
        session_id: str,
        memory: MemoryCoordinator | AsyncMemory,
        scope: Scope,
        *,
        extractor: Extractor | None = None,
        ingest: bool = True,
        session_settings: SessionSettings | None = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ValidationError("session_id must be a non-empty string")
        if not isinstance(scope, Scope):
            raise ValidationError(f"scope must be a zenbrain.Scope, got {type(scope).__name__}")
        self.session_id = session_id
        self.memory = memory if isinstance(memory, AsyncMemory) else AsyncMemory(memory)
        self.scope = scope
        self.extractor = extractor or RuleExtractor()
        self.ingest = bool(ingest)
        self.session_settings: SessionSettings | None = session_settings or SessionSettings()

    # ------------------------------------------------------------------ transcript
    def _transcript(self, m: MemoryCoordinator) -> list[MemoryItem]:
        # Every episode of the scope, filtered here: the facade has no metadata filter yet.
        items = [i for i in m.list_memories(self.scope, layer=Layer.EPISODIC, include_archived=True)
                 if i.metadata.get("agents_session") == self.session_id and "item" in i.metadata]
        items.sort(key=lambda i: int(i.metadata.get("seq", 0)))
        return items

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history, oldest first; with ``limit``, its latest ``limit`` items."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        items = await self.memory.run(self._transcript, write=False)
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return [i.metadata["item"] for i in items]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items to the history and keep what lasts from their messages."""
        raw = [self._plain(x) for x in items]
        if raw:
            await self.memory.run(lambda m: self._add(m, raw))

    @staticmethod
    def _plain(item: Any) -> dict[str, Any]:
        if hasattr(item, "model_dump"):  # a pydantic item from the SDK
            item = item.model_dump(exclude_unset=True, mode="json")
        if not isinstance(item, dict):
            raise ValidationError(f"a session item must be a dict, got {type(item).__name__}")
        return item

    def _add(self, m: MemoryCoordinator, raw: list[dict[str, Any]]) -> None:
        existing = self._transcript(m)
        seq = int(existing[-1].metadata.get("seq", 0)) + 1 if existing else 0
        records = []
        for offset, item in enumerate(raw):
            text = item_text(item)
            records.append(dict(
                content=text[:_MAX_TEXT], kind="episode", layer=Layer.EPISODIC,
                metadata={"source": SOURCE, "agents_session": self.session_id, "seq": seq + offset,
                          "role": item.get("role") or item.get("type") or "item", "item": item},
            ))
        m.store_many(records, self.scope)
        if self.ingest:
            messages = [{"role": it["role"], "content": it.get("content")} for it in raw
                        if it.get("role") in ("user", "assistant") and it.get("type") in (None, "message")]
            if any(content_text(x["content"]).strip() for x in messages):
                add_messages(m, messages, self.scope, extractor=self.extractor, episode_roles=(), source=SOURCE)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the latest item of the history and return it (None when empty)."""

        def pop(m: MemoryCoordinator) -> TResponseInputItem | None:
            items = self._transcript(m)
            if not items:
                return None
            m.forget(items[-1].id, self.scope)
            item: TResponseInputItem = items[-1].metadata["item"]
            return item

        return await self.memory.run(pop)

    async def clear_session(self) -> None:
        """Erase this session's history (durable memories stay)."""

        def clear(m: MemoryCoordinator) -> None:
            for item in self._transcript(m):
                m.forget(item.id, self.scope)

        await self.memory.run(clear)

    # ------------------------------------------------------------------ long-term memory
    async def recall(self, query: str, k: int = 5, **options: Any) -> RecallResult:
        """What zenbrain remembers about ``query`` in this scope, across sessions."""
        result: RecallResult = await self.memory.recall(query, self.scope, k, **options)
        return result

    async def context(self, query: str, *, k: int = 5, layers: Sequence[str] = ("semantic", "core", "procedural")) -> str:
        """The durable memories most related to ``query`` as lines for a prompt ("" when none)."""
        hits = await self.recall(query, k, layers=list(layers))
        return "\n".join(f"- {h.content}" for h in hits)
