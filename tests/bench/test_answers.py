"""Answer generation and judging end to end against the local OpenAI/Anthropic test server.

The server's scripted replies are deterministic: the answer model says the secret word
when an excerpt holds it, else that it does not know; the judge says yes exactly when the
answer contains the word the reference names. Token counts are the server's (words per
message), so the expected totals can be recomputed from the recorded requests.
"""

from __future__ import annotations

import pytest

from zenbrain.bench.answers import (
    AnswerTask,
    add_answers,
    answer_messages,
    answers_markdown,
    answers_table,
    evaluate_answers,
    judge_messages,
    judge_rule,
    locomo_answer_tasks,
    longmemeval_answer_tasks,
    parse_verdict,
)
from zenbrain.bench.base import Doc
from zenbrain.bench.locomo import parse_locomo
from zenbrain.bench.longmemeval import parse_longmemeval
from zenbrain.providers.factory import make_chat
from zenbrain.providers.testing import FakeProviderServer, count_tokens

JUDGE_MARK = "You grade answers"


def scripted(messages: list[dict[str, str]]) -> str:
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    user = "\n".join(m["content"] for m in messages if m["role"] == "user")
    if system.startswith(JUDGE_MARK):
        ref = user.split("Reference answer: ", 1)[1].split("\n", 1)[0] if "Reference answer: " in user else ""
        answer = user.split("Assistant's answer: ", 1)[1].split("\n", 1)[0]
        if "does not contain the information" in user:  # abstention rule
            return "yes" if "do not know" in answer else "no"
        return "Yes." if ref and ref.lower() in answer.lower() else "No"
    for word in ("Biscuit", "Lisbon", "violin"):
        if word in user.split("Question:", 1)[0]:
            return f"The answer is {word}."
    return "I do not know."


def task(qid: str, ref: str, texts: list[str], **kw) -> AnswerTask:
    docs = [Doc(f"{qid}-{i}", t, time=1683554160.0, speaker="Alice") for i, t in enumerate(texts)]
    return AnswerTask(qid=qid, group=kw.pop("group", "g"), question=f"question {qid}?", reference=ref, docs=docs, **kw)


TASKS = [
    task("q1", "Biscuit", ["I adopted a puppy named Biscuit."], group="single-hop"),
    task("q2", "Lisbon", ["My sister moves to Lisbon."], group="single-hop"),
    task("q3", "violin", ["The weather was nice."], group="multi-hop"),  # evidence not retrieved: wrong
    task("q4", "", ["I like dogs."], group="abstention", abstention=True),  # says it does not know: right
]


@pytest.fixture
def server():
    with FakeProviderServer(reply=scripted) as srv:
        yield srv


def expected_usage(srv: FakeProviderServer) -> list[tuple[int, int]]:
    """(prompt, completion) tokens of every chat request, recomputed from what was sent."""
    out = []
    for r in srv.requests:
        msgs = list(r.body["messages"])
        if r.path == "/v1/messages" and r.body.get("system"):
            msgs.insert(0, {"role": "system", "content": r.body["system"]})
        out.append((sum(count_tokens(m["content"]) for m in msgs), count_tokens(scripted(msgs))))
    return out


@pytest.mark.parametrize("judge_provider", ["openai", "anthropic"])
def test_accuracy_and_token_accounting_end_to_end(server, judge_provider):
    answer = make_chat(f"openai:answer-model@{server.openai_url}", env={})
    judge_url = server.openai_url if judge_provider == "openai" else server.url
    judge = make_chat(f"{judge_provider}:judge-model@{judge_url}", env={})
    out = evaluate_answers(TASKS, answer, judge)
    recs, s = out["questions"], out["summary"]

    assert [r["correct"] for r in recs] == [True, True, False, True]
    assert [r["response"] for r in recs] == ["The answer is Biscuit.", "The answer is Lisbon.", "I do not know.", "I do not know."]
    assert s["accuracy"]["mean"] == pytest.approx(0.75) and s["accuracy"]["n"] == 4
    assert s["accuracy"]["low"] is not None and s["accuracy"]["low"] <= 0.75 <= s["accuracy"]["high"]
    assert s["groups"]["single-hop"] == {"mean": 1.0, "n": 2}
    assert s["groups"]["multi-hop"] == {"mean": 0.0, "n": 1}
    assert s["judged"] == 4 and s["errors"] == 0 and s["usage_reported"] is True

    # Two calls per question, answer then judge; usage per record equals the server's counts.
    assert len(server.requests) == 8
    usage = expected_usage(server)
    for i, r in enumerate(recs):
        assert (r["answer_prompt_tokens"], r["answer_completion_tokens"]) == usage[2 * i]
        assert (r["judge_prompt_tokens"], r["judge_completion_tokens"]) == usage[2 * i + 1]
    total = sum(p + c for p, c in usage)
    assert s["tokens_total"]["total"] == total
    assert s["tokens_total"]["answer_prompt_tokens"] == sum(usage[i][0] for i in range(0, 8, 2))
    assert s["tokens_total"]["judge_completion_tokens"] == sum(usage[i][1] for i in range(1, 8, 2))
    assert s["tokens_per_query"]["total"] == pytest.approx(total / 4)
    assert s["tokens_per_query"]["answer_prompt_tokens"] == pytest.approx(s["tokens_total"]["answer_prompt_tokens"] / 4)
    # The client-side running totals agree with the per-query accounting.
    assert answer.usage.total_tokens + (judge.usage.total_tokens if judge is not answer else 0) == total


def test_provider_failure_loses_one_question_not_the_run(server):
    chat = make_chat(f"openai:m@{server.openai_url}", env={})
    chat.max_retries = 0
    server.fail_next(1, status=400)
    out = evaluate_answers(TASKS[:2], chat)
    first, second = out["questions"]
    assert first["correct"] is None and "HTTP 400" in first["error"] and first["response"] is None
    assert second["correct"] is True
    s = out["summary"]
    assert s["judged"] == 1 and s["errors"] == 1 and s["accuracy"]["mean"] == 1.0
    assert s["tokens_per_query"]["total"] == pytest.approx(s["tokens_total"]["total"])  # one question answered


def test_unreadable_verdict_is_an_error_not_a_wrong_answer():
    from zenbrain.providers.testing import FunctionChat

    chat = FunctionChat(reply=lambda msgs: "maybe" if msgs[0]["content"].startswith(JUDGE_MARK) else "Biscuit")
    rec = evaluate_answers(TASKS[:1], chat)["questions"][0]
    assert rec["correct"] is None and "neither yes nor no" in rec["error"]


def test_parse_verdict():
    assert parse_verdict("yes") is True
    assert parse_verdict("  Yes, the answer matches.") is True
    assert parse_verdict("**No**") is False
    assert parse_verdict("no.") is False
    assert parse_verdict("") is None
    assert parse_verdict("unclear") is None


def test_prompts_carry_context_dates_and_type_specific_rules():
    t = task("q", "Biscuit", ["I adopted a puppy named Biscuit.\n\nLast week."], question_date="2023/05/30 (Tue) 23:40")
    msgs = answer_messages(t)
    assert msgs[0]["role"] == "system"
    assert "[1] (2023-05-08 13:56, Alice) I adopted a puppy named Biscuit. Last week." in msgs[1]["content"]
    assert "Today's date: 2023/05/30 (Tue) 23:40" in msgs[1]["content"]
    assert msgs[1]["content"].rstrip().endswith("Answer:")
    long = task("q", "x", ["word " * 1000])
    assert len(answer_messages(long, max_turn_chars=50)[1]["content"]) < 400
    assert "(nothing was retrieved)" in answer_messages(task("q", "x", []))[1]["content"]

    rules = {qt: judge_rule(task("q", "x", [], question_type=qt)) for qt in
             ("default", "temporal-reasoning", "knowledge-update", "single-session-preference", "multi-session")}
    assert rules["multi-session"] == rules["default"]
    assert "off by one" in rules["temporal-reasoning"] or "by one" in rules["temporal-reasoning"]
    assert "latest" in rules["knowledge-update"]
    assert "rubric" not in rules["default"] and "personalised" in rules["single-session-preference"]
    abst = judge_messages(task("q", "", [], abstention=True, misleading_answer="a cat"), "It was a cat.")
    assert "does not contain the information" in abst[1]["content"] and "a cat" in abst[1]["content"]
    pref = judge_messages(task("q", "Use their love of hiking.", [], question_type="single-session-preference"), "ok")
    assert "Rubric: Use their love of hiking." in pref[1]["content"]


LOCOMO = [
    {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Alice",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Alice", "dia_id": "D1:1", "text": "I adopted a puppy named Biscuit."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "My sister moves to Lisbon."},
            ],
        },
        "qa": [
            {"question": "What is the puppy's name?", "answer": "Biscuit", "evidence": ["D1:1"], "category": 4},
            {"question": "Where does Bob's sister move?", "answer": "Lisbon", "evidence": ["D1:2"], "category": 1},
            {"question": "What is Alice's cat called?", "adversarial_answer": "Biscuit", "evidence": ["D1:1"],
             "category": 5},
        ],
    }
]


def test_locomo_tasks_and_add_answers_with_tables(server):
    convs = parse_locomo(LOCOMO)
    qids = [q.qid for q in convs[0].questions]
    records = [
        {"qid": qids[0], "sample_id": "conv-a", "group": "single-hop", "question": "What is the puppy's name?",
         "ranked": ["D1:1", "D1:2"], "metrics": {"evidence_recall@5": 1.0}},
        {"qid": qids[1], "sample_id": "conv-a", "group": "multi-hop", "question": "Where does Bob's sister move?",
         "ranked": ["D1:1"], "metrics": {"evidence_recall@5": 0.0}},
        {"qid": qids[2], "sample_id": "conv-a", "group": "adversarial", "question": "What is Alice's cat called?",
         "ranked": ["D1:1"], "metrics": {"evidence_recall@5": 1.0}},
    ]
    tasks = locomo_answer_tasks(records, convs, k=1)
    assert [len(t.docs) for t in tasks] == [1, 1, 1]
    assert tasks[0].docs[0].text.endswith("I adopted a puppy named Biscuit.") and tasks[0].reference == "Biscuit"
    assert tasks[2].abstention and tasks[2].misleading_answer == "Biscuit"
    assert tasks[0].question_date is not None
    assert len(locomo_answer_tasks(records, convs, k=1, limit=2)) == 2

    results = {
        "benchmark": "locomo",
        "headline_metrics": ["evidence_recall@5"],
        "systems": {"sysA": {"questions": records, "summary": {"overall": {"evidence_recall@5": {"mean": 0.667}}}}},
    }
    chat = make_chat(f"anthropic:claude-test@{server.url}", env={})
    add_answers(results, lambda recs: locomo_answer_tasks(recs, convs, k=1), chat, k=1)
    ans = results["systems"]["sysA"]["answers"]
    assert ans["answer_model"] == "anthropic:claude-test" and ans["judge_model"] == "anthropic:claude-test"
    # q1 right, q2 wrong (Lisbon not retrieved), adversarial: the answer names Biscuit -> wrong
    assert [r["correct"] for r in ans["questions"]] == [True, False, False]
    assert ans["summary"]["accuracy"]["mean"] == pytest.approx(1 / 3)
    table = answers_table(results)
    assert "Answer quality" in table and "sysA" in table and "evidence_recall@5" in table and "0.333" in table
    md = answers_markdown(results)
    assert md.startswith("## Answer quality") and "| sysA | 0.667 | 0.333" in md
    assert answers_table({"systems": {"x": {"questions": []}}}) == ""


def test_longmemeval_tasks_use_question_type_and_abstention():
    items = parse_longmemeval([
        {"question_id": "a1", "question_type": "temporal-reasoning", "question": "How many days?", "answer": "3",
         "question_date": "2023/05/30 (Tue) 23:40", "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/20 (Sat) 02:21"],
         "haystack_sessions": [[{"role": "user", "content": "Trip was 3 days.", "has_answer": True}]],
         "answer_session_ids": ["s1"]},
        {"question_id": "a2_abs", "question_type": "single-session-user", "question": "Cat?", "answer": "Not mentioned",
         "question_date": "2023/05/30 (Tue) 23:40", "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/20 (Sat) 02:21"],
         "haystack_sessions": [[{"role": "user", "content": "I like dogs."}]], "answer_session_ids": []},
    ])
    records = [{"qid": "a1", "ranked": ["a1::s0::t0", "unknown"]}, {"qid": "a2_abs", "ranked": ["a2_abs::s0::t0"]},
               {"qid": "missing", "ranked": []}]
    tasks = longmemeval_answer_tasks(records, items, k=5)
    assert [t.qid for t in tasks] == ["a1", "a2_abs"]
    assert tasks[0].question_type == "temporal-reasoning" and [d.id for d in tasks[0].docs] == ["a1::s0::t0"]
    assert tasks[0].question_date == "2023/05/30 (Tue) 23:40" and not tasks[0].abstention
    assert tasks[1].abstention and "does not contain" in judge_rule(tasks[1])
