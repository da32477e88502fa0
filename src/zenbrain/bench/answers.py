"""Answer quality on top of retrieval: answer from the retrieved turns, then judge the answer.

For each question a system's top-k retrieved turns (with their dates and speakers) go to
an *answer model*, which answers from them alone. A *judge model* then compares that
answer with the reference answer and replies yes or no. Both are any
:class:`~zenbrain.providers.base.ChatModel` (``make_chat("openai:...")``,
``make_chat("anthropic:...")``, ...), called with temperature 0.

The judge's criteria follow the intent of LongMemEval's answer check, written here in
our own words, with variants by question type:

* default -- correct when the answer gives the reference answer or an equivalent of it
  (extra reasoning or detail is fine); wrong when it differs or covers only part of it;
* ``temporal-reasoning`` -- as default, but a count of days, weeks or months that is off
  by one is accepted;
* ``knowledge-update`` -- the reference is the latest value; mentioning older values too is
  fine as long as the latest one is given as the answer;
* ``single-session-preference`` -- the reference is a rubric of what a well-personalised
  answer does; correct when the answer follows it using the user's own information, even
  if it does not cover every point;
* abstention (LongMemEval ``_abs`` questions, LoCoMo adversarial questions) -- the
  history does not contain the answer; correct only when the answer says so instead
  of making one up.

Token cost comes from the usage block of every response (``last_usage`` of the zenbrain
chat clients: prompt and completion tokens), per query and in total, for the answer and
the judge calls separately. Models that report no usage are counted as 0 tokens and
flagged.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..errors import ZenBrainError
from ..providers.base import ChatModel
from .base import Doc
from .metrics import bootstrap_ci

__all__ = [
    "AnswerTask",
    "add_answers",
    "answer_messages",
    "answers_markdown",
    "answers_table",
    "evaluate_answers",
    "judge_messages",
    "locomo_answer_tasks",
    "longmemeval_answer_tasks",
    "parse_verdict",
]

DEFAULT_ANSWER_TOKENS = 256
DEFAULT_JUDGE_TOKENS = 10
DEFAULT_TURN_CHARS = 2000
TOKEN_FIELDS = ("answer_prompt_tokens", "answer_completion_tokens", "judge_prompt_tokens", "judge_completion_tokens")


@dataclass
class AnswerTask:
    """One question to answer from retrieved turns."""

    qid: str
    group: str
    question: str
    reference: str
    docs: list[Doc]
    question_type: str = "default"
    abstention: bool = False
    question_date: str | None = None
    misleading_answer: str | None = None  # LoCoMo adversarial: the answer the question baits
    extra: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- prompts

_ANSWER_SYSTEM = (
    "You answer questions about a person's past conversations. You are given excerpts "
    "retrieved from those conversations, each with its date and speaker. Use only these "
    "excerpts. Work out dates relative to the excerpt dates when a question asks when "
    "something happened. If the excerpts do not contain the answer, say that the "
    "conversations do not tell. Reply with a short, direct answer."
)


def _date(t: float | None) -> str:
    if t is None or not math.isfinite(t):
        return "date unknown"
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%d %H:%M")


def format_context(docs: Sequence[Doc], *, max_turn_chars: int = DEFAULT_TURN_CHARS) -> str:
    """The retrieved turns as numbered lines: ``[1] (2023-05-08 13:56, user) text``."""
    if not docs:
        return "(nothing was retrieved)"
    lines = []
    for i, d in enumerate(docs, start=1):
        text = " ".join(d.text.split())
        if len(text) > max_turn_chars:
            text = text[: max_turn_chars - 3] + "..."
        who = f", {d.speaker}" if d.speaker else ""
        lines.append(f"[{i}] ({_date(d.time)}{who}) {text}")
    return "\n".join(lines)


def answer_messages(task: AnswerTask, *, max_turn_chars: int = DEFAULT_TURN_CHARS) -> list[dict[str, str]]:
    """Messages for the answer model."""
    parts = ["Retrieved excerpts:", format_context(task.docs, max_turn_chars=max_turn_chars), ""]
    if task.question_date:
        parts.append(f"Today's date: {task.question_date}")
    parts += [f"Question: {task.question}", "Answer:"]
    return [{"role": "system", "content": _ANSWER_SYSTEM}, {"role": "user", "content": "\n".join(parts)}]


_JUDGE_SYSTEM = (
    "You grade answers given by a memory assistant. Read the question, the reference "
    "answer and the assistant's answer, apply the grading rule, and reply with one word: "
    "yes if the answer is correct, no if it is not."
)

_RULES: dict[str, str] = {
    "default": (
        "Grading rule: the answer is correct if it states the reference answer or something "
        "equivalent to it. Showing reasoning or adding relevant detail does not make it wrong. "
        "It is wrong if it gives a different answer, or only part of what the reference requires."
    ),
    "temporal-reasoning": (
        "Grading rule: the answer is correct if it states the reference answer or something "
        "equivalent to it; reasoning or extra detail is fine. When the answer is a number of "
        "days, weeks or months, a value that differs from the reference by one still counts "
        "as correct. It is wrong if it gives a different answer or only part of the reference."
    ),
    "knowledge-update": (
        "Grading rule: the reference is the most recent value of something that changed over "
        "time. The answer is correct if it gives that latest value as its answer, even when it "
        "also mentions earlier values. It is wrong if its answer is an outdated or different value."
    ),
    "single-session-preference": (
        "Grading rule: the reference describes what a well-personalised answer would do for "
        "this user. The answer is correct if it follows that description and draws on what "
        "the user said about themselves; it does not have to cover every point. It is wrong "
        "if it is generic or ignores the user's stated preferences."
    ),
    "abstention": (
        "Grading rule: the conversation history does not contain the information this question "
        "asks for. The answer is correct only if it says so: that it does not know, that the "
        "information was never mentioned, or that there is not enough information. It is wrong "
        "if it gives a concrete answer as if it were known."
    ),
}


def judge_rule(task: AnswerTask) -> str:
    """The grading rule used for ``task`` (by abstention, then by question type)."""
    if task.abstention:
        return _RULES["abstention"]
    return _RULES.get(task.question_type, _RULES["default"])


def judge_messages(task: AnswerTask, response: str) -> list[dict[str, str]]:
    """Messages for the judge model."""
    parts = [f"Question: {task.question}"]
    if task.abstention:
        ref = task.reference or "The history does not contain this information."
        parts.append(f"Reference answer: {ref}")
        if task.misleading_answer:
            parts.append(f"(An answer such as \"{task.misleading_answer}\" would be wrong: the history does not support it.)")
    else:
        label = "Rubric" if task.question_type == "single-session-preference" else "Reference answer"
        parts.append(f"{label}: {task.reference}")
    parts += [f"Assistant's answer: {response}", "", judge_rule(task), "", "Is the assistant's answer correct? Reply yes or no."]
    return [{"role": "system", "content": _JUDGE_SYSTEM}, {"role": "user", "content": "\n".join(parts)}]


_VERDICT = re.compile(r"[a-z]+")


def parse_verdict(text: str) -> bool | None:
    """True for a reply starting with "yes", False for "no", None if neither."""
    m = _VERDICT.search(str(text).lower())
    if m is None:
        return None
    word = m.group(0)
    if word in ("yes", "correct", "true"):
        return True
    if word in ("no", "incorrect", "wrong", "false"):
        return False
    return None


# --------------------------------------------------------------------------- evaluation


def _usage(chat: Any) -> tuple[int, int, bool]:
    """(prompt, completion, reported) of the chat model's latest call."""
    last = getattr(chat, "last_usage", None)
    if last is None:
        return 0, 0, False
    return int(getattr(last, "prompt_tokens", 0) or 0), int(getattr(last, "completion_tokens", 0) or 0), True


def _one(
    task: AnswerTask,
    answer_chat: ChatModel,
    judge_chat: ChatModel,
    *,
    answer_tokens: int,
    judge_tokens: int,
    max_turn_chars: int,
) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "qid": task.qid,
        "group": task.group,
        "question_type": task.question_type,
        "abstention": task.abstention,
        "question": task.question,
        "reference": task.reference,
        "context_ids": [d.id for d in task.docs],
        **{f: 0 for f in TOKEN_FIELDS},
        "usage_reported": True,
        "response": None,
        "verdict": None,
        "correct": None,
        "error": None,
    }
    try:
        response = answer_chat.complete(answer_messages(task, max_turn_chars=max_turn_chars), max_tokens=answer_tokens, temperature=0.0)
        p, c, ok = _usage(answer_chat)
        rec.update(answer_prompt_tokens=p, answer_completion_tokens=c, response=response)
        rec["usage_reported"] = rec["usage_reported"] and ok
        verdict = judge_chat.complete(judge_messages(task, response), max_tokens=judge_tokens, temperature=0.0)
        p, c, ok = _usage(judge_chat)
        rec.update(judge_prompt_tokens=p, judge_completion_tokens=c, verdict=verdict)
        rec["usage_reported"] = rec["usage_reported"] and ok
    except ZenBrainError as exc:  # a provider failure loses this question, not the run
        rec["error"] = f"{type(exc).__name__}: {exc}"
        return rec
    parsed = parse_verdict(verdict)
    if parsed is None:
        rec["error"] = "the judge's reply is neither yes nor no"
    rec["correct"] = parsed
    return rec


def summarize_answers(records: Sequence[Mapping[str, Any]], *, seed: int = 0) -> dict[str, Any]:
    """Accuracy (with a bootstrap interval) overall and per group, and token use per query."""
    judged = [r for r in records if r.get("correct") is not None]
    values = [1.0 if r["correct"] else 0.0 for r in judged]
    acc = bootstrap_ci(values, seed=seed).as_dict() if values else {"mean": None, "n": 0}
    groups: dict[str, dict[str, Any]] = {}
    for g in sorted({str(r.get("group")) for r in judged}):
        vals = [1.0 if r["correct"] else 0.0 for r in judged if str(r.get("group")) == g]
        groups[g] = {"mean": sum(vals) / len(vals), "n": len(vals)}
    asked = [r for r in records if r.get("response") is not None]
    totals = {f: int(sum(int(r.get(f) or 0) for r in records)) for f in TOKEN_FIELDS}
    per_query = {f: (totals[f] / len(asked) if asked else None) for f in TOKEN_FIELDS}
    tot = sum(totals.values())
    return {
        "accuracy": acc,
        "groups": groups,
        "questions": len(records),
        "judged": len(judged),
        "errors": sum(1 for r in records if r.get("error")),
        "tokens_total": {**totals, "total": tot},
        "tokens_per_query": {**per_query, "total": (tot / len(asked) if asked else None)},
        "usage_reported": all(bool(r.get("usage_reported")) for r in records) if records else False,
    }


def evaluate_answers(
    tasks: Sequence[AnswerTask],
    answer_chat: ChatModel,
    judge_chat: ChatModel | None = None,
    *,
    answer_tokens: int = DEFAULT_ANSWER_TOKENS,
    judge_tokens: int = DEFAULT_JUDGE_TOKENS,
    max_turn_chars: int = DEFAULT_TURN_CHARS,
    progress: bool = False,
    desc: str = "answers",
) -> dict[str, Any]:
    """Answer and judge every task; returns ``{"questions": [...], "summary": {...}}``.

    ``judge_chat`` defaults to ``answer_chat``. A provider error on one question is
    recorded in that question's ``error`` and leaves it out of the accuracy.
    """
    judge = judge_chat if judge_chat is not None else answer_chat
    from tqdm.auto import tqdm

    records = []
    for task in tqdm(tasks, desc=desc, unit="q", disable=not progress or not tasks, leave=False):
        records.append(
            _one(task, answer_chat, judge, answer_tokens=answer_tokens, judge_tokens=judge_tokens, max_turn_chars=max_turn_chars)
        )
    return {"questions": records, "summary": summarize_answers(records)}


# --------------------------------------------------------------------------- tasks from benchmark results


def _limited(records: Sequence[Mapping[str, Any]], limit: int | None) -> list[Mapping[str, Any]]:
    return list(records) if limit is None else list(records)[: max(0, int(limit))]


def locomo_answer_tasks(
    records: Sequence[Mapping[str, Any]],
    conversations: Sequence[Any],
    *,
    k: int,
    mode: str = "per_conversation",
    limit: int | None = None,
) -> list[AnswerTask]:
    """Tasks for LoCoMo records of one system (``results["systems"][name]["questions"]``).

    Adversarial questions (category 5) are judged as abstention: the conversation does
    not say, and the baited answer is named to the judge as a wrong one.
    """
    from .locomo import prefix_conversation

    docs: dict[tuple[str, str], Doc] = {}
    qas: dict[str, Any] = {}
    for conv in conversations:
        c = prefix_conversation(conv) if mode == "pooled" else conv
        for d in c.docs:
            docs[(conv.sample_id if mode != "pooled" else "", d.id)] = d
        for q in conv.questions:
            qas[q.qid] = q
    tasks = []
    for rec in _limited(records, limit):
        q = qas.get(rec["qid"])
        scope = "" if mode == "pooled" else str(rec.get("sample_id"))
        ctx = [docs[(scope, i)] for i in rec["ranked"][:k] if (scope, i) in docs]
        adversarial = q is not None and q.category == 5
        reference = "" if q is None or q.answer is None else str(q.answer)
        tasks.append(
            AnswerTask(
                qid=str(rec["qid"]),
                group=str(rec.get("group")),
                question=str(rec.get("question") or (q.question if q else "")),
                reference=("Not mentioned in the conversation." if adversarial else reference),
                docs=ctx,
                question_type="adversarial" if adversarial else "default",
                abstention=adversarial,
                misleading_answer=(q.adversarial_answer if adversarial and q is not None else None),
                question_date=(_date(q.query_time) if q is not None and q.query_time is not None else None),
            )
        )
    return tasks


def longmemeval_answer_tasks(
    records: Sequence[Mapping[str, Any]],
    items: Sequence[Any],
    *,
    k: int,
    limit: int | None = None,
) -> list[AnswerTask]:
    """Tasks for LongMemEval records of one system; abstention items are judged as such."""
    by_qid = {it.question_id: it for it in items}
    tasks = []
    for rec in _limited(records, limit):
        it = by_qid.get(rec["qid"])
        if it is None:
            continue
        text = {d.id: d for d in it.docs}
        ctx = [text[i] for i in rec["ranked"][:k] if i in text]
        tasks.append(
            AnswerTask(
                qid=it.question_id,
                group=it.question_type,
                question=it.question,
                reference=it.answer,
                docs=ctx,
                question_type=it.question_type,
                abstention=it.is_abstention,
                question_date=it.question_date,
            )
        )
    return tasks


def add_answers(
    results: dict[str, Any],
    make_tasks: Callable[[Sequence[Mapping[str, Any]]], list[AnswerTask]],
    answer_chat: ChatModel,
    judge_chat: ChatModel | None = None,
    *,
    k: int,
    limit: int | None = None,
    progress: bool = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """Run the answer step for every system in ``results`` (in place) and return ``results``.

    ``make_tasks(records)`` turns one system's question records into tasks; each
    system's outcome lands in ``results["systems"][name]["answers"]``.
    """
    judge = judge_chat if judge_chat is not None else answer_chat
    for name, sysres in results["systems"].items():
        tasks = make_tasks(sysres["questions"])
        out = evaluate_answers(tasks, answer_chat, judge, progress=progress, desc=f"answers {name}", **kwargs)
        sysres["answers"] = {
            "answer_model": getattr(answer_chat, "name", type(answer_chat).__name__),
            "judge_model": getattr(judge, "name", type(judge).__name__),
            "k": int(k),
            "limit": limit,
            **out,
        }
    return results


# --------------------------------------------------------------------------- tables


def _headline(results: Mapping[str, Any]) -> str | None:
    heads = results.get("headline_metrics") or []
    return heads[0] if heads else None


def _answer_rows(results: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = _headline(results)
    header = ["system"] + ([head] if head else []) + [
        "accuracy", "judged", "errors", "answer_prompt_tok/q", "answer_completion_tok/q",
        "judge_prompt_tok/q", "judge_completion_tok/q", "total_tok/q",
    ]
    rows = []
    for name, sysres in results["systems"].items():
        ans = sysres.get("answers")
        if not ans:
            continue
        s = ans["summary"]
        acc = s["accuracy"]
        cell = "–" if acc.get("mean") is None else f"{acc['mean']:.3f}"
        if acc.get("low") is not None and acc.get("high") is not None:
            cell += f" [{acc['low']:.3f}, {acc['high']:.3f}]"
        row = [name]
        if head:
            m = sysres.get("summary", {}).get("overall", {}).get(head, {}).get("mean")
            row.append("–" if m is None else f"{m:.3f}")
        tpq = s["tokens_per_query"]
        row += [cell, str(s["judged"]), str(s["errors"])]
        row += ["–" if tpq[f] is None else f"{tpq[f]:.1f}" for f in (*TOKEN_FIELDS, "total")]
        rows.append(row)
    return header, rows


def answers_table(results: Mapping[str, Any]) -> str:
    """Plain-text answer-quality table (empty string if no system has answers)."""
    header, rows = _answer_rows(results)
    if not rows:
        return ""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    first = next(s["answers"] for s in results["systems"].values() if s.get("answers"))
    title = f"Answer quality (answer {first['answer_model']}, judge {first['judge_model']}, top {first['k']} turns)"
    return "\n".join([title, line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def answers_markdown(results: Mapping[str, Any]) -> str:
    """A markdown section for the report (empty string if no system has answers)."""
    header, rows = _answer_rows(results)
    if not rows:
        return ""
    first = next(s["answers"] for s in results["systems"].values() if s.get("answers"))
    out = [
        "## Answer quality",
        "",
        (
            f"Answer model `{first['answer_model']}`, judge `{first['judge_model']}`; each answer sees the system's "
            f"top {first['k']} retrieved turns. Accuracy = share of judged answers the judge accepted (95% bootstrap "
            "interval); tokens are the providers' reported usage per answered question."
        ),
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    groups = sorted({g for s in results["systems"].values() if s.get("answers") for g in s["answers"]["summary"]["groups"]})
    if groups:
        out += ["", "| system | " + " | ".join(groups) + " |", "|" + "|".join("---" for _ in range(len(groups) + 1)) + "|"]
        for name, sysres in results["systems"].items():
            if not sysres.get("answers"):
                continue
            gs = sysres["answers"]["summary"]["groups"]
            out.append(
                f"| {name} | "
                + " | ".join(f"{gs[g]['mean']:.3f} (n={gs[g]['n']})" if g in gs else "–" for g in groups)
                + " |"
            )
    return "\n".join(out) + "\n"
