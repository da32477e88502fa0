"""iMAD: conflict cues, contradiction search, evidence arbitration and the LLM debate loop."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zenbrain.errors import ConfigError, ProviderError, ValidationError
from zenbrain.mechanisms import imad as I
from zenbrain.model import Kind, Layer, MemoryItem
from zenbrain.pipeline.llm import run_dialogue
from zenbrain.providers.hashing import HashingEmbedder

PROPS = settings(derandomize=True, max_examples=50, deadline=None)
DAY = 86400.0
NOW = 1_700_000_000.0


class ScriptedChat:
    name = "scripted"

    def __init__(self, reply):
        self.reply = reply
        self.calls = []

    def complete(self, messages, *, max_tokens=512, temperature=0.0):
        self.calls.append(list(messages))
        out = self.reply(messages, len(self.calls))
        if isinstance(out, Exception):
            raise out
        return out


def test_params_validation():
    I.IMADParams()
    for bad in ({"min_contradictions": 0}, {"max_rounds": 11}, {"margin": -1.0}, {"max_rounds": 1.5}):
        with pytest.raises(ConfigError):
            I.IMADParams(**bad)


@pytest.mark.parametrize(
    "a,b,kind",
    [
        ("Alice likes coffee", "Alice doesn't like coffee", "negation"),
        ("Alice never drinks coffee", "Alice drinks coffee every day", "negation"),
        ("The API is not deprecated", "The API is deprecated", "negation"),
        ("Alice likes coffee", "Alice dislikes coffee", "antonym:like/dislike"),
        ("The store is open on Sunday", "The store is closed on Sunday", "antonym:open/closed"),
        ("Alice is married", "Alice is single", "antonym:married/single"),
        ("Alice lives in Berlin", "Alice lives in Paris", "value:berlin->paris"),
        ("The meeting is at 3pm", "The meeting is at 4pm", "value:3pm->4pm"),
        ("My birthday is on 5 May", "My birthday is on 7 May", "value:5->7"),
        ("Server runs on port 8080", "Server runs on port 9090", "value:8080->9090"),
        ("My favourite colour is blue", "My favourite colour is green", "value:blue->green"),
        ("Alice works at Acme as an engineer", "Alice works at Globex as an engineer", "value:acme->globex"),
        ("Kenji's car is a Kia Niro", "Kenji's car is a Mini Cooper", "value:kia niro->mini cooper"),
        ("My boss is Tom", "My boss is Jerry", "value:tom->jerry"),
        # A past tense with a predicate of one value, or after "has": still a change.
        ("Alice worked at Acme", "Alice worked at Globex", "value:acme->globex"),
        ("Alice has moved to Berlin", "Alice has moved to Paris", "value:berlin->paris"),
    ],
)
def test_conflict_cues_fire(a, b, kind):
    assert kind in I.conflict_cues(a, b)
    assert I.conflict_cues(b, a)  # detection is symmetric


@pytest.mark.parametrize(
    "a,b",
    [
        ("Alice likes coffee", "Alice likes coffee"),
        ("Bob lives in Paris", "Alice lives in Paris"),  # different subjects
        ("Alice lives in Berlin", "The weather in Berlin is cold"),
        ("I like coffee", "I like tea"),  # not a functional predicate
        ("Alice does not dislike coffee", "Alice likes coffee"),  # double negation agrees
        ("Alice lives in Berlin", "Alice lives in Berlin since 2019"),  # more detail, no conflict
        ("Alice works at Google", "Bob works at Google"),
        ("Alice lives in Berlin", "Alice lives with her sister Carol"),  # another relation
        ("Alice lives in Berlin", "Alice lives near Hamburg"),
        ("Henrik has a home in Lyon", "Jakob has a home in Ljubljana"),  # other subject, other value
        ("You can reach Aisha on +1 555 839 7546", "You can reach Henrik on +1 555 350 3160"),
        ("The billing team's weekly sync is on Wednesday at 15:00",
         "The data team's weekly sync is on Wednesday at 10:00"),
        # A name in the subject's place (no preposition before it, a verb phrase after it).
        ("Lately Aisha only drinks rooibos", "Lately Esme only drinks rooibos"),
        ("These days Jakob is hooked on pottery", "These days Esme is hooked on pottery"),
        # Two events told as done: both happened, the later one replaces nothing.
        ("Talked with Emil about the football match", "Talked with Talia about the football match"),
        ("Alice met Emil for lunch", "Alice met Talia for lunch"),
        ("Bought flowers for Mira on Friday", "Bought flowers for Jonas on Friday"),
    ],
)
def test_conflict_cues_stay_quiet(a, b):
    assert I.conflict_cues(a, b) == ()


def test_stem_merges_inflections():
    assert I.stem("likes") == I.stem("liked") == I.stem("like")
    assert I.stem("dislikes") == I.stem("dislike")


def _fact(fid, text, emb, **kw):
    return I.Fact(fid, text, emb.embed([text])[0], **kw)


def test_find_contradictions_filters_by_similarity_and_cue():
    emb = HashingEmbedder(384)
    new = "Alice lives in Paris"
    stored = [
        _fact("s1", "Alice lives in Berlin", emb),
        _fact("s2", "Alice lives in Paris", emb),  # same statement: no cue
        _fact("s3", "Alice lives in Munich", emb),
        _fact("s4", "The capital of Peru is Lima", emb),  # dissimilar
    ]
    got = I.find_contradictions(new_text=new, new_vec=emb.embed([new])[0], candidates=stored)
    assert {c.id for c in got} == {"s1", "s3"}
    assert all(c.similarity >= I.IMADParams().similarity_threshold for c in got)
    assert got[0].similarity >= got[1].similarity
    assert I.needs_debate(got) and not I.needs_debate(got[:1])
    strict = I.IMADParams(similarity_threshold=0.99)
    assert I.find_contradictions(new_text=new, new_vec=emb.embed([new])[0], candidates=stored, params=strict) == []


def test_find_contradictions_validation():
    with pytest.raises(ValidationError):
        I.find_contradictions(new_text=" ", new_vec=[1.0], candidates=[])
    with pytest.raises(ValidationError):
        I.find_contradictions(new_text="x", new_vec=[1.0, 0.0], candidates=[I.Fact("a", "y", [1.0, 0.0, 0.0])])
    assert I.find_contradictions(new_text="x", new_vec=[1.0], candidates=[]) == []


def _golden_score(alpha, beta, support, age_days, rel, p=I.IMADParams()):
    conf = alpha / (alpha + beta)
    return (p.w_confidence * math.log(conf / (1 - conf)) + p.w_support * math.log(1 + support)
            + p.w_recency * math.exp(-age_days / p.recency_tau_days) + p.w_source * math.log(rel / (1 - rel)))


def test_evidence_score_golden_value():
    f = I.Fact("x", "t", alpha=9.0, beta=3.0, support=4, updated_at=NOW - 15 * DAY, source_reliability=0.8)
    assert I.evidence_score(f, now=NOW) == pytest.approx(_golden_score(9, 3, 4, 15, 0.8))


def test_arbitration_keeps_well_supported_old_facts():
    new = I.Fact("new", "Alice lives in Paris", alpha=1, beta=1, updated_at=NOW, source_reliability=0.5)
    old = [I.Fact("s1", "Alice lives in Berlin", alpha=9, beta=1, support=3, updated_at=NOW - 10 * DAY, source_reliability=0.9),
           I.Fact("s3", "Alice lives in Munich", alpha=4, beta=1, support=1, updated_at=NOW - 40 * DAY, source_reliability=0.7)]
    d = I.arbitrate(new=new, stored=old, now=NOW)
    s_new = _golden_score(1, 1, 0, 0, 0.5)
    s_old = math.log(math.exp(_golden_score(9, 1, 3, 10, 0.9)) + math.exp(_golden_score(4, 1, 1, 40, 0.7)))
    assert d.scores["new"] == pytest.approx(s_new) and d.scores["stored"] == pytest.approx(s_old)
    assert d.verdict == "keep_old" and d.winner_ids == ["s1", "s3"] and d.loser_ids == ["new"]
    assert d.method == "arbitration" and "keep_old" in d.rationale


def test_arbitration_accepts_strong_new_evidence_and_merges_ties():
    old = [I.Fact("s1", "a", alpha=2, beta=2, updated_at=NOW - 300 * DAY, source_reliability=0.3),
           I.Fact("s2", "b", alpha=2, beta=2, updated_at=NOW - 300 * DAY, source_reliability=0.3)]
    new = I.Fact("new", "c", alpha=20, beta=1, updated_at=NOW, source_reliability=0.95)
    d = I.arbitrate(new=new, stored=old, now=NOW)
    assert d.verdict == "accept_new" and d.winner_ids == ["new"] and d.loser_ids == ["s1", "s2"]
    # Make the new fact exactly as strong as the pooled stored side: a tie within the margin.
    s_old = d.scores["stored"]
    p = I.IMADParams(w_support=0.0, w_recency=0.0, w_source=0.0)
    conf = 1 / (1 + math.exp(-s_old))
    tie = I.Fact("new", "c", alpha=conf * 10, beta=(1 - conf) * 10, updated_at=NOW)
    old_conf_only = [I.Fact("s1", "a", alpha=conf * 10, beta=(1 - conf) * 10),
                     I.Fact("s2", "b", alpha=conf * 10, beta=(1 - conf) * 10)]
    d2 = I.arbitrate(new=tie, stored=old_conf_only, now=NOW, params=p.replace(margin=1.0))
    assert d2.verdict == "merge" and d2.loser_ids == [] and set(d2.winner_ids) == {"new", "s1", "s2"}


@PROPS
@given(
    a=st.floats(0.1, 100), b=st.floats(0.1, 100), bump=st.floats(0.0, 100),
    support=st.integers(0, 20), rel=st.floats(0.0, 1.0), age=st.floats(0, 1000),
)
def test_arbitration_is_monotone_in_the_new_facts_evidence(a, b, bump, support, rel, age):
    rank = {"keep_old": 0, "merge": 1, "accept_new": 2}
    old = [I.Fact("s1", "x", alpha=3, beta=1, support=2, updated_at=NOW - 5 * DAY),
           I.Fact("s2", "y", alpha=2, beta=2, updated_at=NOW - 50 * DAY)]
    base = I.Fact("new", "z", alpha=a, beta=b, support=support, updated_at=NOW - age * DAY, source_reliability=rel)
    stronger = I.Fact("new", "z", alpha=a + bump, beta=b, support=support + 1, updated_at=NOW - age * DAY,
                      source_reliability=rel)
    v0 = I.arbitrate(new=base, stored=old, now=NOW).verdict
    v1 = I.arbitrate(new=stronger, stored=old, now=NOW).verdict
    assert rank[v1] >= rank[v0]


@pytest.mark.parametrize(
    "reply,expected",
    [("VERDICT: accept_new\nREASON: x", "accept_new"), ("**Verdict:** keep old", "keep_old"),
     ("verdict = MERGE", "merge"), ("VERDICT: undecided", "undecided"), ("I think the new one", None),
     ("VERDICT: keep_old ... on reflection VERDICT: accept-new", "accept_new")],
)
def test_parse_verdict(reply, expected):
    assert I.parse_verdict(reply) == expected


NEW = I.Fact("new", "Alice lives in Paris", alpha=1, beta=1, updated_at=NOW)
OLD = [I.Fact("s1", "Alice lives in Berlin", alpha=9, beta=1, support=3, updated_at=NOW - 10 * DAY),
       I.Fact("s3", "Alice lives in Munich", alpha=4, beta=1, updated_at=NOW - 40 * DAY)]


def _debate(chat, params=I.IMADParams()):
    """The debate driven by ``chat``, as the pipeline drives it."""
    return run_dialogue(chat, I.debate(new=NEW, stored=OLD, now=NOW, params=params),
                        max_tokens=int(params.llm_max_tokens), temperature=float(params.llm_temperature))


def test_llm_debate_runs_three_roles_and_follows_the_judge():
    def reply(messages, call):
        system = messages[0]["content"]
        if "judge" in system:
            return "Both sides argued.\nVERDICT: accept_new\nREASON: the user said they moved last week."
        return "argument " + str(call)

    chat = ScriptedChat(reply)
    d = _debate(chat)
    assert d.method == "llm" and d.verdict == "accept_new"
    assert d.winner_ids == ["new"] and d.loser_ids == ["s1", "s3"]
    assert d.rationale == "the user said they moved last week."
    assert [t["speaker"] for t in d.transcript] == ["proponent", "opponent", "judge"]
    # Every turn sees the case with its evidence, and later turns see earlier ones.
    assert all("Alice lives in Berlin" in c[-1]["content"] for c in chat.calls)
    assert "argument 1" in chat.calls[1][-1]["content"]


def test_undecided_judge_gets_at_most_max_rounds_then_arbitration():
    chat = ScriptedChat(lambda m, n: "VERDICT: undecided" if "judge" in m[0]["content"] else "hmm")
    d = _debate(chat)
    assert len(chat.calls) == 9 and len(d.transcript) == 9
    assert d.method == "arbitration_fallback" and "no verdict after 3 rounds" in d.rationale
    assert d.verdict == I.arbitrate(new=NEW, stored=OLD, now=NOW).verdict


def test_second_round_verdict_stops_the_debate():
    chat = ScriptedChat(lambda m, n: ("VERDICT: undecided" if n == 3 else "VERDICT: merge")
                        if "judge" in m[0]["content"] else "point")
    d = _debate(chat)
    assert d.verdict == "merge" and d.method == "llm" and len(chat.calls) == 6


@pytest.mark.parametrize("failure", [ProviderError("timeout"), "no verdict here"])
def test_failing_llm_falls_back_to_arbitration(failure):
    chat = ScriptedChat(lambda m, n: failure if ("judge" in m[0]["content"] or isinstance(failure, Exception))
                        else "point")
    d = _debate(chat)
    assert d.method == "arbitration_fallback" and d.verdict == "keep_old"
    assert "chat debate unusable" in d.rationale


def test_arbitration_decides_without_chat_and_a_debate_needs_stored_facts():
    assert I.arbitrate(new=NEW, stored=OLD, now=NOW).method == "arbitration"
    with pytest.raises(ValidationError):
        I.debate(new=NEW, stored=[], now=NOW)


def test_loser_updates_add_contradicting_evidence():
    d = I.arbitrate(new=NEW, stored=OLD, now=NOW)  # keep_old: the new fact loses
    ups = I.loser_updates(d, {"new": (1.0, 1.0), "s1": (9.0, 1.0)}, params=I.IMADParams(loser_penalty=2.0))
    assert ups == {"new": (1.0, 3.0)}


def test_contradiction_weight_weighs_the_new_facts_odds_and_the_losers_penalty():
    """w multiplies the contradicting side: + log w on the new fact's score, w x loser_penalty."""
    base = I.arbitrate(new=NEW, stored=OLD, now=NOW)
    heavy = I.arbitrate(new=NEW, stored=OLD, now=NOW, contradiction_weight=3.0)
    assert heavy.scores["new"] == pytest.approx(base.scores["new"] + math.log(3.0))
    assert heavy.scores["stored"] == pytest.approx(base.scores["stored"])
    ups = I.loser_updates(base, {"new": (1.0, 1.0)}, params=I.IMADParams(loser_penalty=2.0), contradiction_weight=1.5)
    assert ups == {"new": (1.0, 4.0)}
    with pytest.raises(ValidationError):
        I.arbitrate(new=NEW, stored=OLD, now=NOW, contradiction_weight=0.0)


def test_fact_from_memory_item():
    item = MemoryItem(
        id="m1", user_id="u", agent_id="a", session_id=None, context="default", layer=Layer.SEMANTIC,
        kind=Kind.FACT, content="Alice lives in Berlin", content_hash="h", metadata={"source_reliability": "0.9"},
        created_at=NOW - DAY, updated_at=NOW - DAY, event_time=None, last_access=NOW, conf_alpha=5.0, conf_beta=2.0,
    )
    f = I.Fact.from_item(item, np.ones(3), support=2)
    assert (f.id, f.text, f.alpha, f.beta, f.support, f.updated_at, f.source_reliability) == (
        "m1", "Alice lives in Berlin", 5.0, 2.0, 2, NOW - DAY, 0.9)


def test_candidates_may_be_tuples_or_mappings_but_need_vectors():
    emb = HashingEmbedder(384)
    new = "Alice lives in Paris"
    as_tuple = ("s1", "Alice lives in Berlin", emb.embed(["Alice lives in Berlin"])[0], 3.0, 1.0)
    as_dict = {"id": "s2", "text": "Alice lives in Rome", "vector": emb.embed(["Alice lives in Rome"])[0]}
    got = I.find_contradictions(new_text=new, new_vec=emb.embed([new])[0], candidates=[as_tuple, as_dict])
    assert {c.id for c in got} == {"s1", "s2"}
    assert next(c for c in got if c.id == "s1").fact.alpha == 3.0
    with pytest.raises(ValidationError):
        I.find_contradictions(new_text=new, new_vec=emb.embed([new])[0], candidates=[I.Fact("s3", "x")])
