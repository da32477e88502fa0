"""End to end: an iMAD debate on the coordinator's store path, argued by a chat model over
HTTP (OpenAICompatChat against the local FakeProviderServer on 127.0.0.1).

The server's scripted judge decides the verdict; the coordinator applies it to the
confidences of the facts involved and logs it.
"""

from __future__ import annotations

import threading
import time

import pytest

from zenbrain import state as keys
from zenbrain.api import open_memory
from zenbrain.config import Config
from zenbrain.model import Scope
from zenbrain.providers.hashing import HashingEmbedder
from zenbrain.providers.openai_compat import OpenAICompatChat
from zenbrain.providers.testing import FakeProviderServer

SCOPE = Scope("u1")
PART = (SCOPE.user_id, SCOPE.agent_id)
STORED = ["Alice lives in Berlin", "Alice lives in Berlin with her two cats"]
NEW = "Alice lives in Paris"


def scripted(judge_lines: list[str]):
    """A reply function: debaters argue, the judge answers from ``judge_lines`` in turn."""
    turns = iter(judge_lines)

    def reply(messages: list[dict[str, str]]) -> str:
        system = messages[0]["content"]
        if system.startswith("You judge"):
            return next(turns)
        if "argue that the NEW" in system:
            return "The new statement is the most recent one."
        return "Two stored statements agree with each other."

    return reply


def _store_conflict(coord, clock):
    old = []
    for text in STORED:
        old.append(coord.store(text, SCOPE))
        clock.advance(minutes=1)
    new = coord.store(NEW, SCOPE)
    return old, new


@pytest.fixture(scope="module")
def shared_server():
    """One local server for the module (starting and stopping one costs about half a second)."""
    with FakeProviderServer(api_key="test-key") as server:
        yield server


@pytest.fixture
def server(shared_server):
    """The shared server with no recorded requests and no queued failures."""
    shared_server.requests.clear()
    shared_server._failures.clear()
    yield shared_server
    shared_server.requests.clear()
    shared_server._failures.clear()


@pytest.fixture
def chat(server):
    client = OpenAICompatChat("fake-judge", base_url=server.openai_url, api_key="test-key",
                              timeout=10.0, max_retries=0, backoff=0.0)
    yield client
    client.close()


def test_llm_judge_accepts_the_new_fact_over_http(open_coord, server, chat):
    """Arbitration alone would keep the two old facts; the scripted judge accepts the new
    one, so the old facts lose confidence and the new one keeps its prior."""
    server.reply = scripted(["VERDICT: accept_new\nREASON: the move to Paris is the latest news"])
    coord, clock = open_coord(label="llm")
    coord.chat = chat
    old, new = _store_conflict(coord, clock)

    calls = server.requests_to("/v1/chat/completions")
    assert len(calls) == 3  # proponent, opponent, judge: one round
    systems = [c.body["messages"][0]["content"] for c in calls]
    assert "argue that the NEW" in systems[0] and "argue that the STORED" in systems[1]
    assert systems[2].startswith("You judge")
    for c in calls:
        assert c.body["model"] == "fake-judge"
        assert c.headers["authorization"] == "Bearer test-key"
        user = c.body["messages"][1]["content"]
        assert f'"{NEW}"' in user and all(f'"{t}"' in user for t in STORED)
    assert "The new statement is the most recent one." in calls[2].body["messages"][1]["content"]
    assert chat.usage.calls == 3

    (debate,) = coord.last_store_report["debates"]
    assert debate["method"] == "llm" and debate["verdict"] == "accept_new"
    assert debate["rationale"] == "the move to Paris is the latest news"
    assert debate["winners"] == [new.id] and set(debate["losers"]) == {o.id for o in old}
    assert coord.storage.kv_get(PART, keys.KV_DEBATES) == [debate]
    for o in old:
        item = coord.get(o.id, SCOPE)
        assert (item.conf_alpha, item.conf_beta) == (1.0, 2.0)
        assert item.superseded_by == new.id  # accepted as a change: the old facts end where it begins
    item = coord.get(new.id, SCOPE)
    assert (item.conf_alpha, item.conf_beta) == (1.0, 1.0) and "disputed" not in item.metadata


def test_without_a_chat_model_the_same_conflict_is_arbitrated_the_other_way(open_coord, server):
    coord, clock = open_coord(label="no_chat")
    old, new = _store_conflict(coord, clock)
    (debate,) = coord.last_store_report["debates"]
    assert debate["method"] == "arbitration" and debate["verdict"] == "keep_old"
    assert coord.get(new.id, SCOPE).conf_beta == 2.0
    assert all(coord.get(o.id, SCOPE).valid_until is None for o in old)  # a rejected change supersedes nothing
    assert server.requests == []


def test_llm_judge_asks_for_a_second_round_then_keeps_the_old_facts(open_coord, server, chat):
    server.reply = scripted(["VERDICT: undecided\nREASON: need more", "VERDICT: keep_old\nREASON: two witnesses"])
    coord, clock = open_coord(label="llm2")
    coord.chat = chat
    _old, new = _store_conflict(coord, clock)
    calls = server.requests_to("/v1/chat/completions")
    assert len(calls) == 6
    assert "round 2 of 3" in calls[3].body["messages"][1]["content"]

    (debate,) = coord.last_store_report["debates"]
    assert debate["method"] == "llm" and debate["verdict"] == "keep_old"
    assert debate["rationale"] == "two witnesses"
    item = coord.get(new.id, SCOPE)
    assert (item.conf_alpha, item.conf_beta) == (1.0, 2.0) and item.metadata["disputed"] is True


def test_failing_chat_server_falls_back_to_arbitration(open_coord, server, chat):
    server.reply = scripted(["VERDICT: accept_new\nREASON: unused"])
    server.fail_next(1, status=500)
    coord, clock = open_coord(label="llm_fail")
    coord.chat = chat
    _old, new = _store_conflict(coord, clock)
    assert len(server.requests_to("/v1/chat/completions")) == 1

    (debate,) = coord.last_store_report["debates"]
    assert debate["method"] == "arbitration_fallback"
    assert debate["verdict"] == "keep_old"
    assert debate["rationale"].startswith("chat debate unusable (ProviderError")
    assert coord.get(new.id, SCOPE).conf_beta == 2.0


@pytest.mark.parametrize("verdict", ["accept_new", "keep_old"])
def test_the_servers_verdict_decides_the_confidences(open_coord, server, chat, verdict):
    server.reply = scripted([f"VERDICT: {verdict}\nREASON: scripted"])
    coord, clock = open_coord(label=verdict)
    coord.chat = chat
    old, new = _store_conflict(coord, clock)
    new_item = coord.get(new.id, SCOPE)
    old_betas = [coord.get(o.id, SCOPE).conf_beta for o in old]
    if verdict == "accept_new":
        assert new_item.conf_beta == 1.0 and old_betas == [2.0, 2.0]
    else:
        assert new_item.conf_beta == 2.0 and old_betas == [1.0, 1.0]


def test_imad_debate_off_sends_nothing_to_the_chat_model(open_coord, server, chat):
    server.reply = scripted(["VERDICT: accept_new\nREASON: unused"])
    coord, clock = open_coord(Config().without("imad_debate"), label="imad_off")
    coord.chat = chat
    _old, new = _store_conflict(coord, clock)
    assert server.requests == []
    assert coord.last_store_report["debates"] == []
    assert coord.get(new.id, SCOPE).confidence == 0.5


def test_a_slow_model_never_holds_the_database(open_coord, server, chat, tmp_path):
    """The debate's chat turns run before the store's write transaction opens: while the
    model takes its time, another process's handle on the same file writes at once."""
    first_turn = threading.Event()

    def slow(messages):
        first_turn.set()
        time.sleep(0.5)  # three turns: the debate takes 1.5 s
        return scripted(["VERDICT: keep_old\nREASON: two sources agree"])(messages) if messages[0][
            "content"].startswith("You judge") else "An argument."

    server.reply = slow
    coord, clock = open_coord(label="slow")
    coord.chat = chat
    for text in STORED:
        coord.store(text, SCOPE)
        clock.advance(minutes=1)
    other = open_memory(coord.storage.path, embedder=HashingEmbedder(384), timeout=0.2)
    done: dict[str, float] = {}

    def debate() -> None:
        coord.store(NEW, SCOPE)
        done["debate"] = time.monotonic()

    thread = threading.Thread(target=debate)
    thread.start()
    assert first_turn.wait(5.0)
    start = time.monotonic()
    other.store("Bob plays the cello", Scope("bob"))  # refused with StorageError if the file were held for 0.2 s
    done["other"] = time.monotonic()
    thread.join(10.0)
    other.close()
    assert done["other"] - start < 0.2 and done["other"] < done["debate"]
    (entry,) = coord.last_store_report["debates"]
    assert entry["method"] == "llm"
