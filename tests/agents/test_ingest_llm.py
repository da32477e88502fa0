"""add_messages with the LLM extractor, against a local server on 127.0.0.1 that speaks the
OpenAI chat-completions and Anthropic Messages wire formats (structured output as
``response_format: json_schema`` and as a forced tool call)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import jsonschema
import pytest

from zenbrain import ConfigError, ProviderError, Scope, SimulatedClock
from zenbrain.ingest import LLMExtractor, add_messages
from zenbrain.ingest.llm import SCHEMA, SCHEMA_NAME, SYSTEM_PROMPT
from zenbrain.providers.anthropic import AnthropicChat
from zenbrain.providers.openai_compat import OpenAICompatChat, TokenUsage
from zenbrain.providers.pricing import Price, PriceTable
from zenbrain.providers.testing import FakeProviderServer, FunctionChat, count_tokens

ALICE = Scope("alice", session_id="s1")
MAY1 = datetime(2024, 5, 1, 15, 0, tzinfo=UTC).timestamp()
PRICES = PriceTable({"fake-extract": {"input": 0.5, "output": 2.0}})


def _decision(action, kind, text, *, target=None, turn=1, when=None, cue=None, reason=""):
    return {"action": action, "type": kind, "text": text, "target_id": target, "turn": turn,
            "when": when, "cue": cue, "reason": reason}


def scripted_model(messages):
    """A stand-in model: reads the prompt as a real model would (stored ids, conversation)."""
    prompt = messages[-1]["content"]
    stored = dict(re.findall(r"- id=(\w+) \(\w+\) (.+)", prompt))
    if "moved to Paris" in prompt:
        berlin = next(i for i, text in stored.items() if "Berlin" in text)
        tea = next(i for i, text in stored.items() if "tea" in text)
        out = [_decision("update", "identity", "Alice lives in Paris", target=berlin, reason="she moved"),
               _decision("ignore", "preference", "Alice likes green tea", target=tea, reason="already stored")]
    else:
        out = [_decision("add", "identity", "Alice lives in Berlin"),
               _decision("add", "preference", "Alice likes green tea"),
               _decision("add", "plan", "Alice flies to Lisbon", turn=3, when="2024-05-06T09:00:00Z"),
               _decision("add", "plan", "Remind Alice to buy sunscreen", turn=3, cue="packing")]
    reply = {"memories": out}
    jsonschema.validate(reply, SCHEMA)  # what a strict server guarantees
    return json.dumps(reply)


CONVO_1 = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "I live in Berlin and I like green tea.", "timestamp": MAY1},
    {"role": "assistant", "content": "Noted!", "timestamp": MAY1 + 1},
    {"role": "user", "content": "I fly to Lisbon next Monday; remind me to buy sunscreen when packing.",
     "timestamp": MAY1 + 2},
]
CONVO_2 = [{"role": "user", "content": "I moved to Paris. Still love green tea.", "timestamp": MAY1 + 86400}]


@pytest.fixture(scope="module")
def server():
    with FakeProviderServer(reply=scripted_model, api_key="k") as srv:
        yield srv


def test_the_schema_is_a_strict_json_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    item = SCHEMA["properties"]["memories"]["items"]
    # OpenAI's strict mode: every property required, no others allowed.
    assert set(item["required"]) == set(item["properties"]) and item["additionalProperties"] is False


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_llm_extraction_adds_then_supersedes_over_http(open_store, server, provider):
    server.requests.clear()
    if provider == "openai":
        chat = OpenAICompatChat("fake-extract", base_url=server.openai_url, api_key="k", max_retries=0)
        path = "/v1/chat/completions"
    else:
        chat = AnthropicChat("fake-extract", base_url=server.url, api_key="k", max_retries=0)
        path = "/v1/messages"
    m = open_store(clock=SimulatedClock(MAY1 + 10))
    extractor = LLMExtractor(chat, prices=PRICES)
    first = add_messages(m, CONVO_1, ALICE, extractor=extractor)
    assert [a.content for a in first.added] == ["Alice lives in Berlin", "Alice likes green tea",
                                               "Alice flies to Lisbon", "Remind Alice to buy sunscreen"]
    assert len(first.episodes) == 3
    lisbon = first.added[2]
    assert lisbon.event_time == datetime(2024, 5, 6, 9, tzinfo=UTC).timestamp()
    assert sorted((i["due_at"] is not None, tuple(i["cue_keywords"])) for i in first.intentions) == [
        (False, ("packing",)), (True, ())]

    # The request in the provider's own structured-output form.
    [req] = server.requests_to(path)
    if provider == "openai":
        fmt = req.body["response_format"]
        assert fmt == {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": SCHEMA, "strict": True}}
        sent = req.body["messages"]
    else:
        assert req.body["tool_choice"] == {"type": "tool", "name": SCHEMA_NAME}
        assert req.body["tools"][0]["input_schema"] == SCHEMA
        sent = [{"role": "system", "content": req.body["system"]}, *req.body["messages"]]
    assert sent[0]["content"] == SYSTEM_PROMPT
    # Usage is the server's count, and the cost is usage times the configured price.
    prompt_tokens = sum(count_tokens(x["content"]) for x in sent)
    assert first.usage.prompt_tokens == prompt_tokens and first.usage.calls == 1
    assert first.cost_usd == pytest.approx((prompt_tokens * 0.5 + first.usage.completion_tokens * 2.0) / 1e6)
    assert first.model == "fake-extract"

    # Second conversation: the model is shown the stored memories with their ids and
    # decides to supersede one and ignore another.
    second = add_messages(m, CONVO_2, ALICE, extractor=extractor)
    assert "Alice lives in Berlin" in server.requests_to(path)[-1].body["messages"][-1]["content"]
    [updated] = second.updated
    assert updated.id == first.added[0].id and updated.content == "Alice lives in Paris" and updated.version == 2
    assert [e.action for e in m.history(updated.id, ALICE)][-1] == "updated"
    assert [d.reason for d in second.ignored] == ["already stored"] and not second.added
    chat.close()


def test_a_malformed_answer_is_a_provider_error_and_writes_nothing(open_store):
    m = open_store()
    for reply in ["not json at all", json.dumps({"memories": [{"action": "delete", "type": "fact", "text": "x"}]}),
                  json.dumps({"memories": [_decision("add", "plan", "x", when="next tuesday")]})]:
        extractor = LLMExtractor(FunctionChat(lambda msgs, r=reply: r))
        with pytest.raises(ProviderError):
            add_messages(m, CONVO_1, ALICE, extractor=extractor)
    assert m.stats(ALICE)["memories"] == 0


def test_a_plain_chat_model_gets_the_schema_in_its_prompt(open_store):
    seen = []

    class PlainChat:
        name = "plain"
        last_usage = TokenUsage(10, 5, 1)

        def complete(self, messages, *, max_tokens=512, temperature=0.0):
            seen.append(messages)
            return "```json\n" + json.dumps({"memories": [_decision("add", "fact", "Alice owns a kayak")]}) + "\n```"

    m = open_store()
    res = add_messages(m, [{"role": "user", "content": "I own a kayak"}], ALICE, extractor=LLMExtractor(PlainChat()))
    assert [a.content for a in res.added] == ["Alice owns a kayak"]
    assert '"memories"' in seen[0][0]["content"]  # the schema travelled in the system prompt
    assert res.usage.prompt_tokens == 10 and res.cost_usd is None  # no price configured


def test_price_tables_are_configuration(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"gpt-x": {"input": 1.0, "output": 4.0}}))
    table = PriceTable.from_env({"ZENBRAIN_PRICES": str(path)})
    usage = TokenUsage(1000, 500, 1)
    assert table.cost("openai:gpt-x", usage) == pytest.approx((1000 * 1.0 + 500 * 4.0) / 1e6)
    assert table.cost("other", usage) is None
    assert len(PriceTable.from_env({})) == 0
    with pytest.raises(ConfigError):
        PriceTable({"m": {"input": -1, "output": 1}})
    with pytest.raises(ConfigError):
        PriceTable({"m": {"in": 1}})
    assert Price(2.0, 0.0).cost(usage) == pytest.approx(0.002)
