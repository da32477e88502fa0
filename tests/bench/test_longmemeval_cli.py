"""``zenbrain bench longmemeval`` (and the peer/answer options of ``bench locomo``) through ``main([...])``."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from zenbrain.cli import main
from zenbrain.providers.testing import FakeProviderServer

EMB = ["--embedder", "hashing:384"]
REAL_LME = Path(os.environ.get("ZENBRAIN_DATA") or Path(__file__).resolve().parents[2] / ".." / "shared" / "data") / (
    "longmemeval_s_one_question.json"
)
HAVE_CHROMA = importlib.util.find_spec("chromadb") is not None


def session(turns, answer_turns=()):
    return [{"role": role, "content": text, **({"has_answer": True} if i in answer_turns else {})}
            for i, (role, text) in enumerate(turns)]


def tiny_lme() -> list[dict]:
    """Three questions: a single-session one, an abstention one, a multi-session one."""
    filler = [
        session([("user", "How do I bake sourdough bread at home?"), ("assistant", "Feed the starter, then mix flour and water.")]),
        session([("user", "Suggest a sci-fi novel for a long flight."), ("assistant", "Try Dune by Frank Herbert.")]),
        session([("user", "What is a good stretching routine?"), ("assistant", "Hamstrings, hips and shoulders daily.")]),
    ]
    return [
        {
            "question_id": "lq1", "question_type": "single-session-user",
            "question": "What degree did I graduate with?", "answer": "Business Administration",
            "question_date": "2023/05/30 (Tue) 23:40",
            "haystack_session_ids": ["f1", "ans_1", "f2"],
            "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00", "2023/05/22 (Mon) 08:00"],
            "haystack_sessions": [
                filler[0],
                session([("user", "I graduated with a degree in Business Administration last year."),
                         ("assistant", "Congratulations! Business Administration opens many doors.")], answer_turns=(0,)),
                filler[1],
            ],
            "answer_session_ids": ["ans_1"],
        },
        {
            "question_id": "lq2_abs", "question_type": "single-session-user",
            "question": "What is the name of my cat?", "answer": "You never mentioned a cat.",
            "question_date": "2023/06/01 (Thu) 09:00",
            "haystack_session_ids": ["f3"], "haystack_dates": ["2023/05/25 (Thu) 12:00"],
            "haystack_sessions": [filler[2]], "answer_session_ids": [],
        },
        {
            "question_id": "lq3", "question_type": "multi-session",
            "question": "Which two cities did I visit for marathons?", "answer": "Berlin and Lisbon",
            "question_date": "2023/07/01 (Sat) 09:00",
            "haystack_session_ids": ["m1", "f1", "m2"],
            "haystack_dates": ["2023/06/01 (Thu) 12:00", "2023/06/02 (Fri) 12:00", "2023/06/20 (Tue) 12:00"],
            "haystack_sessions": [
                session([("user", "I ran the Berlin marathon in four hours."), ("assistant", "Great time for Berlin!")],
                        answer_turns=(0,)),
                filler[0],
                session([("user", "Next I ran a marathon in Lisbon by the river."), ("assistant", "Lisbon is hilly!")],
                        answer_turns=(0,)),
            ],
            "answer_session_ids": ["m1", "m2"],
        },
    ]


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ZENBRAIN_EMBEDDER", "ZENBRAIN_USER", "ZENBRAIN_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ZENBRAIN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ZENBRAIN_DATA", str(tmp_path / "no-such-folder"))


@pytest.fixture
def data(tmp_path: Path) -> Path:
    p = tmp_path / "data" / "longmemeval_s.json"
    p.parent.mkdir()
    p.write_text(json.dumps(tiny_lme()), encoding="utf-8")
    return p


def run(*argv: str) -> int:
    return main([*EMB, "bench", "longmemeval", *argv, "--no-progress"])


def test_longmemeval_writes_reports_and_skips_abstention(capsys, tmp_path, data):
    out_dir = tmp_path / "out"
    code = run("--data", str(data), "--systems", "zenbrain,bm25", "--ablate", "bm25_hybrid", "--out", str(out_dir))
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "LongMemEval retrieval" in out and "3 question(s) (1 abstention, skipped)" in err
    for name in ("zenbrain", "bm25", "zenbrain-bm25_hybrid"):
        assert any(line.split()[:1] == [name] for line in out.splitlines()), name
    results = json.loads((out_dir / "longmemeval.json").read_text())
    assert (out_dir / "longmemeval.md").exists() and list(out_dir.glob("*.png"))
    assert results["benchmark"] == "longmemeval" and results["embedder"] == "hashing:384"
    assert results["dataset"]["items"] == 3 and results["dataset"]["items_run"] == 2
    assert results["dataset"]["abstention_items"] == 1 and results["dataset"]["items_scored"] == 2
    bm25 = results["systems"]["bm25"]
    assert [q["qid"] for q in bm25["questions"]] == ["lq1", "lq3"]
    q1, q3 = bm25["questions"]
    assert q1["ranked_sessions"][0] == "ans_1" and q1["metrics"]["session_recall_any@5"] == 1.0
    assert q1["metrics"]["turn_recall_all@5"] == 1.0 and q1["metrics"]["session_ndcg@5"] == 1.0
    assert q3["gold_sessions"] == ["m1", "m2"] and q3["metrics"]["session_recall_all@10"] == 1.0
    overall = bm25["summary"]["overall"]
    for level in ("session", "turn"):
        for metric in ("recall_any", "recall_all", "ndcg"):
            assert overall[f"{level}_{metric}@5"]["n"] == 2
    assert "low" in overall["session_recall_any@5"]  # a headline metric with a bootstrap interval
    assert "low" in overall["session_recall_all@5"]  # the official strict one too


def test_limit_types_user_only_and_include_abstention(capsys, tmp_path, data):
    out_dir = tmp_path / "o1"
    assert run("--data", str(data), "--systems", "bm25", "--limit", "1", "--out", str(out_dir), "--no-plots") == 0
    r = json.loads((out_dir / "longmemeval.json").read_text())
    assert r["dataset"]["items"] == 1 and not list(out_dir.glob("*.png"))

    out_dir = tmp_path / "o2"
    assert run("--data", str(data), "--systems", "bm25", "--include-abstention", "--user-only",
               "--question-types", "single-session-user", "--ks", "1,3", "--out", str(out_dir), "--no-plots") == 0
    r = json.loads((out_dir / "longmemeval.json").read_text())
    assert r["ks"] == [1, 3] and r["dataset"]["user_only"] is True
    recs = {q["qid"]: q for q in r["systems"]["bm25"]["questions"]}
    assert set(recs) == {"lq1", "lq2_abs"}
    assert recs["lq2_abs"]["abstention"] and recs["lq2_abs"]["metrics"] == {}
    assert all(t.endswith("::t0") for t in recs["lq1"]["ranked"])  # user turns only
    assert r["systems"]["bm25"]["summary"]["overall"]["session_recall_any@1"]["n"] == 1
    capsys.readouterr()


def test_data_folder_is_accepted(capsys, tmp_path, data):
    assert run("--data", str(data.parent), "--systems", "bm25", "--out", str(tmp_path / "o"), "--no-plots") == 0
    capsys.readouterr()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--systems", "bm25,letta"], "unknown system(s) letta"),
        (["--systems", "bm25", "--limit", "0"], "--limit must be at least 1"),
        (["--systems", "bm25", "--answer-limit", "3"], "need --answer-model"),
        (["--systems", "bm25", "--ks", "0"], "--ks must be positive"),
        (["--systems", "", ], "no systems to run"),
        (["--systems", "bm25", "--ablate", "no_such_mechanism"], "no_such_mechanism"),
        (["--systems", "bm25", "--answer-model", "openai:gpt-4o-mini"], "needs an API key"),
    ],
)
def test_bad_options_are_one_line_errors(capsys, monkeypatch, data, argv, message):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert run("--data", str(data), *argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("error:") and len(err.strip().splitlines()) == 1


def test_missing_data_and_missing_peer_library(capsys, monkeypatch, tmp_path, data):
    assert run("--data", str(tmp_path / "nope.json"), "--systems", "bm25") == 2
    assert "LongMemEval data not found" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "chromadb", None)
    assert run("--data", str(data), "--systems", "bm25,chroma") == 2
    assert "zenbrain[peers]" in capsys.readouterr().err


def judge_or_answer(messages):
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    user = messages[-1]["content"]
    if system.startswith("You grade answers"):
        if "does not contain the information" in user:
            return "yes" if "do not know" in user.split("Assistant's answer:", 1)[1] else "no"
        return "yes" if "Business Administration" in user.split("Assistant's answer:", 1)[1] else "no"
    context = user.split("Question:", 1)[0]
    return "You studied Business Administration." if "Business Administration" in context else "I do not know."


def test_answer_quality_step_through_the_cli(capsys, tmp_path, data):
    out_dir = tmp_path / "ans"
    with FakeProviderServer(reply=judge_or_answer) as srv:
        code = run("--data", str(data), "--systems", "bm25", "--out", str(out_dir), "--no-plots",
                   "--answer-model", f"openai:answerer@{srv.openai_url}", "--judge-model", f"anthropic:judge@{srv.url}",
                   "--answer-k", "3")
        n_requests = len(srv.requests)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Answer quality (answer openai:answerer, judge anthropic:judge, top 3 turns)" in out
    r = json.loads((out_dir / "longmemeval.json").read_text())
    ans = r["systems"]["bm25"]["answers"]
    # the answer step brings abstention questions in: all three are answered and judged
    assert [q["qid"] for q in ans["questions"]] == ["lq1", "lq2_abs", "lq3"] and n_requests == 6
    assert [q["correct"] for q in ans["questions"]] == [True, True, False]
    s = ans["summary"]
    assert s["accuracy"]["mean"] == pytest.approx(2 / 3) and s["errors"] == 0 and s["usage_reported"]
    assert s["tokens_total"]["total"] == sum(q[f] for q in ans["questions"] for f in (
        "answer_prompt_tokens", "answer_completion_tokens", "judge_prompt_tokens", "judge_completion_tokens"))
    assert s["tokens_per_query"]["total"] == pytest.approx(s["tokens_total"]["total"] / 3)
    assert all(len(q["context_ids"]) <= 3 for q in ans["questions"])
    # retrieval metrics still leave the abstention question out
    assert r["systems"]["bm25"]["summary"]["overall"]["session_recall_any@5"]["n"] == 2
    assert "## Answer quality" in (out_dir / "longmemeval.md").read_text()


def test_answer_limit(capsys, tmp_path, data):
    out_dir = tmp_path / "lim"
    with FakeProviderServer(reply=judge_or_answer) as srv:
        assert run("--data", str(data), "--systems", "bm25", "--out", str(out_dir), "--no-plots",
                   "--answer-model", f"openai:m@{srv.openai_url}", "--answer-limit", "1") == 0
    r = json.loads((out_dir / "longmemeval.json").read_text())
    ans = r["systems"]["bm25"]["answers"]
    assert len(ans["questions"]) == 1 and ans["judge_model"] == "openai:m" and ans["k"] == 5
    capsys.readouterr()


@pytest.mark.skipif(not HAVE_CHROMA, reason="chromadb is not installed (zenbrain[peers])")
def test_peer_and_answers_on_bench_locomo(capsys, tmp_path):
    locomo = [{
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I graduated in Business Administration."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "I run marathons in Berlin."},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "My kitten is called Pixel."},
            ],
        },
        "qa": [
            {"question": "What did Ana graduate in?", "answer": "Business Administration", "evidence": ["D1:1"], "category": 4},
            {"question": "Where does Ben run marathons?", "answer": "Berlin", "evidence": ["D1:2"], "category": 4},
        ],
    }]
    path = tmp_path / "locomo_dev.json"
    path.write_text(json.dumps(locomo), encoding="utf-8")
    out_dir = tmp_path / "loc"
    with FakeProviderServer(reply=judge_or_answer) as srv:
        code = main([*EMB, "bench", "locomo", "--data", str(path), "--systems", "bm25,chroma", "--out", str(out_dir),
                     "--no-progress", "--no-plots", "--answer-model", f"openai:m@{srv.openai_url}", "--answer-k", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    r = json.loads((out_dir / "locomo_per_conversation.json").read_text())
    assert list(r["systems"]) == ["bm25", "chroma"] and "chroma" in r["peers"]
    assert r["systems"]["chroma"]["summary"]["overall"]["evidence_recall@5"]["mean"] == 1.0
    for name in ("bm25", "chroma"):
        ans = r["systems"][name]["answers"]
        assert [q["correct"] for q in ans["questions"]] == [True, False]  # the judge only knows one answer
    assert "Answer quality" in out and "(chroma: chromadb PersistentClient" in out


@pytest.mark.skipif(not REAL_LME.exists(), reason="the one-question LongMemEval-S file is not present")
def test_real_one_question_file(capsys, tmp_path):
    out_dir = tmp_path / "real"
    assert run("--data", str(REAL_LME), "--systems", "bm25,zenbrain", "--out", str(out_dir), "--no-plots") == 0
    r = json.loads((out_dir / "longmemeval.json").read_text())
    assert r["dataset"]["items"] == 1 and r["dataset"]["items_scored"] == 1 and r["dataset"]["turns"] > 400
    for name in ("bm25", "zenbrain"):
        (rec,) = r["systems"][name]["questions"]
        assert len(rec["ranked"]) == 10 and rec["gold_sessions"]
        assert set(rec["metrics"]) >= {"session_recall_any@5", "turn_recall_all@10", "session_ndcg@10"}
    capsys.readouterr()
