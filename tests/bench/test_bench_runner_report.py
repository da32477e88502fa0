from __future__ import annotations

import copy
import json

import pytest
from bench_data import REAL_LOCOMO, lme_data, locomo_data

from zenbrain.bench.baselines import BM25System, DenseSystem, NoMemorySystem
from zenbrain.bench.locomo import load_locomo, parse_locomo
from zenbrain.bench.longmemeval import parse_longmemeval
from zenbrain.bench.report import (
    load_results,
    locomo_table,
    longmemeval_table,
    markdown_report,
    results_table,
    write_report,
)
from zenbrain.bench.runner import recompute, run_locomo, run_longmemeval
from zenbrain.providers.hashing import HashingEmbedder


class OracleSystem:
    """Returns the gold ids of a question if they were ingested (checks runner wiring)."""

    def __init__(self, answers: dict[str, list[str]], name: str = "oracle") -> None:
        self.name = name
        self.answers = answers
        self.ids: set[str] = set()
        self.resets = 0
        self.query_times: list[float | None] = []

    def reset(self) -> None:
        self.ids = set()
        self.resets += 1

    def add(self, docs) -> None:
        self.ids.update(d.id for d in docs)

    def search(self, query, k, *, query_time=None):
        self.query_times.append(query_time)
        return [i for i in self.answers.get(query, []) if i in self.ids][:k]

    def close(self) -> None:
        pass


def _locomo_oracle(convs) -> OracleSystem:
    return OracleSystem({q.question: list(q.evidence) for c in convs for q in c.questions})


def test_run_locomo_per_conversation():
    convs = parse_locomo(locomo_data())
    oracle = _locomo_oracle(convs)
    systems = [oracle, BM25System(), NoMemorySystem()]
    res = run_locomo(systems, convs, ks=(10, 1), progress=False)
    assert res["ks"] == [1, 10] and res["search_k"] == 10 and res["mode"] == "per_conversation"
    ds = res["dataset"]
    assert ds["questions"] == 10 and ds["questions_scored"] == 7 and ds["questions_without_evidence"] == 3
    assert ds["dangling_evidence_ids"] == 1 and ds["malformed_evidence_ids"] == 3
    assert oracle.resets == 2
    assert all(t is not None for t in oracle.query_times)
    o = res["systems"]["oracle"]
    assert o["summary"]["overall"]["evidence_recall@10"]["mean"] == 1.0
    # the two-evidence question has recall 1/2 at k = 1
    assert o["summary"]["overall"]["evidence_recall@1"]["mean"] == pytest.approx((6 + 0.5) / 7)
    assert res["systems"]["no-memory"]["summary"]["overall"]["hit@10"]["mean"] == 0.0
    groups = o["summary"]["groups"]
    assert set(groups) == {"single-hop", "multi-hop", "temporal", "open-domain", "adversarial"}
    assert groups["multi-hop"]["evidence_recall@10"]["n"] == 2
    assert "low" in o["summary"]["overall"]["evidence_recall@10"]
    q = o["questions"][0]
    assert q["qid"] == "conv-1/q0" and q["gold"] == ["D1:1"] and q["ranked"] == ["D1:1"]
    t = res["systems"]["bm25"]["timing"]
    assert t["search_count"] == 7 and len(t["ingest_seconds_per_conversation"]) == 2
    assert t["search_latency_ms"]["p95"] >= t["search_latency_ms"]["p50"] >= 0
    json.dumps(res, allow_nan=False)


def test_run_locomo_pooled_and_categories():
    convs = parse_locomo(locomo_data())
    oracle = _locomo_oracle(convs)
    bm = BM25System()
    res = run_locomo([oracle, bm], convs, ks=(5,), mode="pooled", progress=False, categories=(4,))
    assert oracle.resets == 1
    assert res["dataset"]["questions_scored"] == 2
    qs = res["systems"]["oracle"]["questions"]
    assert all(e.startswith(("conv-1/", "conv-2/")) for q in qs for e in q["gold"])
    # the oracle was built from per-conversation ids, so it finds nothing in pooled mode
    assert res["systems"]["oracle"]["summary"]["overall"]["hit@5"]["mean"] == 0.0
    berlin = next(q for q in res["systems"]["bm25"]["questions"] if "Berlin" in q["question"] or "city" in q["question"])
    assert berlin["ranked"][0] == "conv-2/D1:1"


def test_runner_rejects_bad_arguments():
    convs = parse_locomo(locomo_data())
    with pytest.raises(ValueError):
        run_locomo([NoMemorySystem(), NoMemorySystem()], convs, progress=False)
    with pytest.raises(ValueError):
        run_locomo([NoMemorySystem()], convs, mode="weird", progress=False)
    with pytest.raises(ValueError):
        run_locomo([NoMemorySystem()], convs, ks=(0,), progress=False)
    with pytest.raises(ValueError):
        run_locomo([], convs, progress=False)


def test_recompute_from_rankings():
    convs = parse_locomo(locomo_data())
    res = run_locomo([_locomo_oracle(convs), BM25System()], convs, ks=(1, 5), progress=False)
    before = copy.deepcopy(res["systems"]["bm25"]["summary"])
    again = recompute(copy.deepcopy(res))
    assert again["systems"]["bm25"]["summary"] == before
    smaller = recompute(copy.deepcopy(res), ks=(3,), bootstrap={"method": "BCa", "n_resamples": 500})
    assert "evidence_recall@3" in smaller["systems"]["oracle"]["summary"]["overall"]
    assert smaller["bootstrap"]["method"] == "BCa"
    with pytest.raises(ValueError):
        recompute(copy.deepcopy(res), ks=(50,))


def test_run_longmemeval():
    items = parse_longmemeval(lme_data())
    answers = {it.question: list(it.gold_turn_ids) for it in items}
    oracle = OracleSystem(answers)
    dense = DenseSystem(HashingEmbedder(64))
    res = run_longmemeval([oracle, BM25System(), dense], items, ks=(1, 5), progress=False)
    assert res["dataset"]["items_run"] == 2 and res["dataset"]["abstention_items"] == 1
    assert oracle.resets == 2 and oracle.query_times[0] is not None
    o = res["systems"]["oracle"]["summary"]
    assert o["overall"]["session_recall_any@1"]["mean"] == 1.0
    assert o["overall"]["turn_recall_all@5"]["mean"] == 1.0
    assert o["overall"]["turn_recall_all@1"]["mean"] == 0.5  # q1 has two gold turns
    assert set(o["groups"]) == {"single-session-user", "temporal-reasoning"}
    bm = res["systems"]["bm25"]["questions"][0]
    assert bm["ranked_sessions"][0] == "answer_1"
    with_abs = run_longmemeval([NoMemorySystem()], items, ks=(5,), progress=False, include_abstention=True)
    qs = with_abs["systems"]["no-memory"]["questions"]
    assert len(qs) == 3 and qs[1]["abstention"] and qs[1]["metrics"] == {}
    assert with_abs["systems"]["no-memory"]["summary"]["overall"]["session_recall_any@5"]["n"] == 2
    recomputed = recompute(copy.deepcopy(res))
    assert recomputed["systems"]["oracle"]["summary"] == res["systems"]["oracle"]["summary"]


def test_reports_end_to_end(tmp_path):
    convs = parse_locomo(locomo_data())
    res = run_locomo([_locomo_oracle(convs), BM25System(), NoMemorySystem()], convs, progress=False)
    paths = write_report(res, tmp_path / "out")
    assert paths["json"].name == "locomo_per_conversation.json"
    assert load_results(paths["json"])["systems"]["bm25"]["summary"] == json.loads(
        json.dumps(res["systems"]["bm25"]["summary"])
    )
    md = paths["markdown"].read_text()
    assert "| system | evidence_recall@5 | evidence_recall@10 |" in md
    assert "## By category" in md and "### evidence_recall@5" in md and "multi-hop (n=2)" in md
    assert "| oracle | 1.000 [1.000, 1.000]" in md
    pngs = [p for k, p in paths.items() if k.startswith("plot")]
    assert len(pngs) == 3 and all(p.exists() and p.stat().st_size > 1000 for p in pngs)
    table = locomo_table(res)
    assert "evidence_recall@5" in table and "oracle" in table and "no-memory" in table
    assert results_table(res) == table
    assert "[" in locomo_table(res, ci=True)
    with pytest.raises(ValueError):
        longmemeval_table(res)

    items = parse_longmemeval(lme_data())
    lres = run_longmemeval([BM25System()], items, progress=False)
    lpaths = write_report(lres, tmp_path / "out")
    assert lpaths["markdown"].name == "longmemeval.md"
    lmd = lpaths["markdown"].read_text()
    assert "session_recall_any@5" in lmd and "## By question type" in lmd
    assert "turn_ndcg@10" in longmemeval_table(lres)
    assert markdown_report(lres, title="T").startswith("# T")
    with pytest.raises(ValueError):
        locomo_table(lres)


@pytest.mark.skipif(not REAL_LOCOMO.exists(), reason="real LoCoMo file not present")
def test_real_locomo_one_conversation_bm25():
    convs = load_locomo(REAL_LOCOMO, limit=1)
    res = run_locomo([BM25System()], convs, progress=False)
    r5 = res["systems"]["bm25"]["summary"]["overall"]["evidence_recall@5"]["mean"]
    assert 0.2 < r5 < 0.9
