"""add_messages with the offline extractor: episodes with speakers and times, durable
memories by type, supersession by slot, plans as intentions, validation before writing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from zenbrain import Layer, Scope, SimulatedClock, ValidationError
from zenbrain.ingest import (
    Decision,
    Extraction,
    RuleExtractor,
    add_messages,
    normalize_messages,
)
from zenbrain.ingest.when import resolve_when

ALICE = Scope("alice", session_id="chat-1")
MAY1 = datetime(2024, 5, 1, 15, 0, tzinfo=UTC).timestamp()  # a Wednesday


def _ts(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


def test_messages_are_normalised_from_the_openai_layout():
    turns = normalize_messages([
        {"role": "system", "content": "be brief"},
        {"role": "user", "name": "Alice", "timestamp": "2024-05-01T15:00:00Z",
         "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "u"}},
                     {"type": "input_text", "text": "at this"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
    ])
    assert [t.role for t in turns] == ["system", "user", "assistant"]
    assert turns[1].text == "look\nat this" and turns[1].speaker == "Alice" and turns[1].timestamp == MAY1
    assert turns[2].text == "" and turns[2].speaker == "assistant"


@pytest.mark.parametrize("bad", [
    "hello", [], [{"content": "no role"}], [{"role": "wizard", "content": "x"}],
    [{"role": "user", "content": 5}], [{"role": "user", "content": "x", "timestamp": "yesterday"}],
    [{"role": "user", "content": "x", "name": ""}], [{"role": "user", "content": [3]}],
])
def test_bad_messages_are_refused_before_anything_is_written(open_store, bad):
    m = open_store()
    with pytest.raises(ValidationError):
        add_messages(m, bad, ALICE)
    assert m.stats(ALICE)["memories"] == 0


def test_a_conversation_becomes_episodes_and_durable_memories(open_store):
    m = open_store(clock=SimulatedClock(MAY1))
    result = add_messages(m, [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "name": "Alice", "timestamp": MAY1,
         "content": "Hi! My name is Alice and I live in Berlin. I love green tea."},
        {"role": "assistant", "content": "Nice to meet you, Alice!", "timestamp": MAY1 + 5},
        {"role": "user", "name": "Alice", "timestamp": MAY1 + 60,
         "content": "I'm going to Lisbon next week. Remind me to buy sunscreen when I pack."},
        {"role": "user", "name": "Alice", "timestamp": MAY1 + 120,
         "content": "To deploy the blog: first run the tests. Then push the tag."},
        {"role": "user", "name": "Alice", "timestamp": MAY1 + 180,
         "content": "What time is it? If I lived in Rome I would eat pasta every day."},
    ], ALICE)
    # Episodes: every user and assistant turn (not the system prompt), with speaker, role,
    # turn index, session and the turn's time.
    assert [e.content for e in result.episodes][:2] == [
        "Alice: Hi! My name is Alice and I live in Berlin. I love green tea.",
        "assistant: Nice to meet you, Alice!",
    ]
    assert all(e.layer is Layer.EPISODIC for e in result.episodes)
    first = result.episodes[0]
    assert first.metadata == {"source": "conversation", "session": "chat-1", "speaker": "Alice", "role": "user", "turn": 1}
    assert first.event_time == MAY1 and result.episodes[1].event_time == MAY1 + 5
    # Durable memories, by type and layer.
    added = {a.content: a for a in result.added}
    assert set(added) == {"My name is Alice", "I live in Berlin.", "I love green tea.",
                          "I'm going to Lisbon next week.", "Remind me to buy sunscreen when I pack.",
                          "To deploy the blog: first run the tests. Then push the tag."}
    assert added["I live in Berlin."].layer is Layer.CORE
    assert added["I live in Berlin."].metadata["slot"] == "residence"
    assert added["I love green tea."].metadata["memory_type"] == "preference"
    assert added["To deploy the blog: first run the tests. Then push the tag."].layer is Layer.PROCEDURAL
    plan = added["I'm going to Lisbon next week."]
    assert plan.metadata["memory_type"] == "plan" and plan.event_time == _ts(2024, 5, 6, 9)
    # Plans with a time or a cue are intentions too.
    assert sorted((i["action"], i["due_at"], tuple(i["cue_keywords"])) for i in result.intentions) == [
        ("I'm going to Lisbon next week.", _ts(2024, 5, 6, 9), ()),
        ("Remind me to buy sunscreen when I pack.", None, ("pack",)),
    ]
    # The cue fires when it comes up.
    fired = m.recall("what should I pack for the trip?", ALICE.with_session(None))
    assert any("sunscreen" in f["action"] for f in fired.info.get("intentions", []))
    # Recall finds the user's facts.
    assert m.recall("where does Alice live?", ALICE, k=3)[0].content in {"I live in Berlin.",
                                                                        "Alice: Hi! My name is Alice and I live in Berlin. I love green tea."}


def test_a_new_value_supersedes_the_stored_one_and_keeps_its_history(open_store):
    m = open_store(clock=SimulatedClock(MAY1))
    first = add_messages(m, [{"role": "user", "content": "I live in Berlin. My favorite color is blue. I love green tea."}], ALICE)
    berlin = next(a for a in first.added if "Berlin" in a.content)
    second = add_messages(m, [{"role": "user", "content": "I moved to Paris last month. I love green tea."}], ALICE)
    assert [u.id for u in second.updated] == [berlin.id]
    now = m.get(berlin.id, ALICE)
    assert now.content == "I moved to Paris last month." and now.version == 2
    assert now.metadata["supersedes"] == "I live in Berlin."
    assert [d.text for d in second.ignored] == ["I love green tea."]  # already stored
    assert not second.added
    assert m.rollback(berlin.id, ALICE).content == "I live in Berlin."
    # Within one conversation the last value wins.
    third = add_messages(m, [{"role": "user", "content": "My favorite color is green. Actually my favorite color is red."}],
                         ALICE)
    assert [u.content for u in third.updated] == ["Actually my favorite color is red."]


def test_the_rules_leave_out_questions_hypotheticals_and_the_assistant():
    turns = normalize_messages([
        {"role": "user", "content": "Can you tell me a joke? What if I lived on Mars?"},
        {"role": "assistant", "content": "I love jokes! My name is Assistant."},
        {"role": "user", "content": "ok thanks. I'm so proud of you for finishing the marathon!"},
    ])
    assert RuleExtractor().extract(turns, [], now=MAY1).decisions == []
    # A feeling about one's kids may be kept, but it is no value of a "kids" slot.
    turns = normalize_messages([{"role": "user", "content": "My kids are so excited about summer break!"}])
    assert all(d.slot is None for d in RuleExtractor().extract(turns, [], now=MAY1).decisions)


def test_emotionally_significant_first_person_statements_are_kept():
    turns = normalize_messages([{"role": "user", "content": "I was devastated when my old dog Rex died last year."}])
    [d] = RuleExtractor().extract(turns, [], now=MAY1).decisions
    assert (d.action, d.type) == ("add", "fact")
    off = RuleExtractor(significance=1.01).extract(turns, [], now=MAY1).decisions
    assert off == []


@pytest.mark.parametrize(("text", "expected"), [
    ("I'm going to Lisbon next week", (2024, 5, 6, 9)),
    ("call mom tomorrow at 6pm", (2024, 5, 2, 18)),
    ("dentist on Friday", (2024, 5, 3, 9)),
    ("next month I start", (2024, 6, 1, 9)),
    ("this weekend", (2024, 5, 4, 9)),
    ("the party on 8 May 2024", (2024, 5, 8, 9)),
])
def test_plan_times_resolve_against_when_they_were_said(text, expected):
    assert resolve_when(text, MAY1) == _ts(*expected)


def test_relative_durations_and_no_time():
    assert resolve_when("in 3 days", MAY1) == MAY1 + 3 * 86400
    assert resolve_when("in two weeks", MAY1) == MAY1 + 14 * 86400
    assert resolve_when("some day", MAY1) is None


def test_a_custom_extractor_plugs_in_and_bad_decisions_are_refused(open_store):
    class Fixed:
        name = "fixed"

        def __init__(self, decisions):
            self.decisions = decisions

        def extract(self, turns, related, *, now):
            return Extraction(self.decisions)

    m = open_store()
    res = add_messages(m, [{"role": "user", "content": "hello there"}], ALICE,
                       extractor=Fixed([Decision("add", "fact", "Alice owns a boat", turn=0),
                                        Decision("update", "fact", "Alice owns two boats", target_id="nope")]))
    assert [a.content for a in res.added] == ["Alice owns a boat", "Alice owns two boats"]  # unknown target: added
    assert res.added[0].metadata["extractor"] == "fixed"
    before = m.stats(ALICE)["memories"]
    with pytest.raises(ValidationError):
        add_messages(m, [{"role": "user", "content": "x"}], ALICE, extractor=Fixed([Decision("delete", "fact", "x")]))
    assert m.stats(ALICE)["memories"] == before
