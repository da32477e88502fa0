"""Update, noise and ablation workloads of the longitudinal benchmarks, and their commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_data import locomo_data

from zenbrain.bench.baselines import BM25System
from zenbrain.bench.locomo import parse_locomo
from zenbrain.bench.longitudinal.ablation import (
    EXTRA_ROWS,
    Plan,
    job,
    make_rows,
    summarize,
)
from zenbrain.bench.longitudinal.locomo_updates import LOCOMO_UPDATE_PAIRS
from zenbrain.bench.longitudinal.lowvalue import turn_text
from zenbrain.bench.longitudinal.noise import class_shares, noise_pool, noise_workload
from zenbrain.bench.longitudinal.timeline import (
    DAY,
    LifeStore,
    Probe,
    Protocol,
    StaticTimeline,
)
from zenbrain.bench.longitudinal.update_gen import UpdateSpec, generate
from zenbrain.bench.longitudinal.update_score import classify, score_update
from zenbrain.bench.longitudinal.updates import (
    longmemeval_update_workload,
    summarize_updates,
    update_records,
)
from zenbrain.bench.longmemeval import parse_longmemeval
from zenbrain.cli import main
from zenbrain.providers.hashing import HashingEmbedder
from zenbrain.registry import ALL_MECHANISMS

SMALL = UpdateSpec(seed=3, entities=8, pairs=6, static=3, days=12, filler_per_day=2, min_gap_days=1, max_gap_days=4)


def test_generator_is_deterministic_and_chains_supersede():
    a, b, c = generate(SMALL), generate(SMALL), generate(UpdateSpec(**{**SMALL.as_dict(), "seed": 4}))
    texts = [d.text for s in a.sessions for d in s.docs]
    assert texts == [d.text for s in b.sessions for d in s.docs]
    assert texts != [d.text for s in c.sessions for d in s.docs]
    docs = {d.id: d for s in a.sessions for d in s.docs}
    for p in a.probes:
        cur = docs[p.extra["current_doc"]]
        assert p.gold == (cur.id,)
        assert p.extra["entity"].lower() in cur.text.lower() and p.extra["current_value"] in cur.text
        chain = [cur]
        while "supersedes" in chain[-1].metadata:
            chain.append(docs[chain[-1].metadata["supersedes"]])
        assert len(chain) == p.extra["values"]
        assert [d.metadata["value"] for d in reversed(chain[1:])] == p.extra["stale_values"]
        assert p.group == ("changed" if len(chain) > 1 else "unchanged")
    assert all(a.sessions[i].time < a.sessions[i + 1].time for i in range(len(a.sessions) - 1))
    assert a.end_time > a.sessions[-1].time
    assert all(u.time < a.end_time for u in a.uses)


def test_classify_and_score_update():
    p = Probe("q", "Where does Mira live?", ("x",), "end", extra={"entity": "Mira", "current_value": "Porto",
                                                                     "stale_values": ["Lyon"]})
    assert classify(p, "a", "Mira moved to Porto.") == "current"
    assert classify(p, "a", "Mira relocated from Lyon to Porto.") == "current"
    assert classify(p, "a", "Mira rents a flat in Lyon.") == "stale"
    assert classify(p, "a", "Omar rents a flat in Porto.") == "other"
    score = score_update(2)
    m = score(p, [("a", "Mira rents a flat in Lyon."), ("b", "noise"), ("c", "Mira moved to Porto.")])["update_metrics"]
    assert m == {"current_at_1": 0.0, "stale_above": 1.0, "current_at_k": 0.0, "current_rr": pytest.approx(1 / 3)}
    m = score(p, [("c", "Mira moved to Porto."), ("a", "Mira rents a flat in Lyon.")])["update_metrics"]
    assert m["current_at_1"] == 1.0 and m["stale_above"] == 0.0
    ids = Probe("q", "?", ("n",), "end", extra={"current_ids": ["n"], "stale_ids": ["o"]})
    assert score(ids, [("x", ""), ("y", "")])["update_metrics"]["stale_above"] == 0.0
    assert score(ids, [("o", "")])["update_metrics"]["stale_above"] == 1.0


def test_update_records_for_zenbrain_and_a_baseline():
    w = generate(SMALL)
    emb = HashingEmbedder(64)
    z = LifeStore(emb, protocol=Protocol(context_k=2))
    b = StaticTimeline(BM25System())
    try:
        rz = update_records(z, w, k=5, depth=10)
        rb = update_records(b, w, k=5, depth=10)
    finally:
        z.close()
        b.close()
    assert len(rz["records"]) == len(rb["records"]) == len(w.probes)
    assert rz["lifecycle"]["nights"] >= SMALL.days - 1
    assert rz["lifecycle"]["seconds"]["use"] > 0 or not w.uses
    summ = summarize_updates(rb["records"])
    assert summ["overall"]["n"] == len(w.probes)
    assert 0.0 <= summ["overall"]["current_at_1"]["mean"] <= 1.0
    assert {"changed", "unchanged"} <= set(summ["groups"])


def test_curated_locomo_pairs_are_well_formed():
    assert len(LOCOMO_UPDATE_PAIRS) >= 3
    for p in LOCOMO_UPDATE_PAIRS:
        assert p.stale and p.current and p.question.endswith("?")
        # Every stale statement was said in an earlier session than every current one.
        assert max(int(x[1:].split(":")[0]) for x in p.stale) < min(int(x[1:].split(":")[0]) for x in p.current)


def _ku_item() -> dict:
    def turns(pairs, answer=()):
        return [{"role": r, "content": c, "has_answer": i in answer} for i, (r, c) in enumerate(pairs)]
    return {
        "question_id": "ku1", "question_type": "knowledge-update", "question": "Where do I live now?",
        "answer": "York", "question_date": "2023/06/20 (Tue) 10:00",
        "haystack_session_ids": ["old", "noise", "new"],
        "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/10 (Wed) 09:00", "2023/06/01 (Thu) 09:00"],
        "haystack_sessions": [
            turns([("user", "I live in Leeds."), ("assistant", "Leeds is nice.")], answer=(0,)),
            turns([("user", "Recommend a film."), ("assistant", "Try Alien.")]),
            turns([("user", "I just moved to York."), ("assistant", "Enjoy York!")], answer=(0,)),
        ],
        "answer_session_ids": ["old", "new"],
    }


def test_longmemeval_knowledge_update_current_is_the_latest_answer_session():
    (item,) = parse_longmemeval([_ku_item()])
    sessions, probes, end = longmemeval_update_workload(item)
    assert [item.turn_to_session[s.docs[0].id] for s in sessions] == ["old", "noise", "new"]
    (p,) = probes
    assert p.extra["current_ids"] == ["ku1::s2::t0"] and p.extra["stale_ids"] == ["ku1::s0::t0"]
    assert end == item.query_time and end > sessions[-1].time


def test_noise_workload_fills_empty_days_with_other_conversations_chatter():
    convs = parse_locomo(locomo_data())
    pools = noise_pool(convs)
    conv = convs[0]
    own = {turn_text(d) for d in conv.docs}
    assert set(pools["conv-1"]).isdisjoint(own)  # chatter comes from the other conversations only
    sessions, probes, classes = noise_workload(conv, ["Wow, great!", "Thanks so much!"], per_day=2, seed=1)
    real_days = {int(s.time // DAY) for s in sessions if not s.key.split(":")[-1].startswith("N")}
    noise = [s for s in sessions if s.key.split(":")[-1].startswith("N")]
    assert noise and all(int(s.time // DAY) not in real_days for s in noise)
    assert all(len(s.docs) == 2 for s in noise)
    assert {classes[d.id] for s in noise for d in s.docs} == {"noise"}
    assert all(d.speaker in conv.speakers for s in noise for d in s.docs)
    assert len({d.id for s in sessions for d in s.docs}) == sum(len(s.docs) for s in sessions)
    assert probes and all(p.checkpoint == "end" for p in probes)
    shares = class_shares({d: {"archived": classes[d] == "noise"} for d in classes}, classes)
    assert shares["noise"]["share"] == 1.0 and shares["evidence"]["share"] == 0.0


def test_rows_cover_every_mechanism_and_the_extras():
    names = [r.name for r in make_rows()]
    assert names[:2] == ["full", "bare"]
    assert {f"-{m}" for m in ALL_MECHANISMS} <= set(names)
    assert set(EXTRA_ROWS) <= set(names) and {"bm25", "dense"} <= set(names)
    assert [r.name for r in make_rows(["triple_copy", "bm25"])] == ["full", "-triple_copy", "bm25"]
    with pytest.raises(ValueError, match="unknown row"):
        make_rows(["-telepathy"])


def test_ablation_jobs_and_paired_summary(tmp_path: Path):
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(locomo_data()), encoding="utf-8")
    emb = HashingEmbedder(32)
    plan = Plan(data=str(data), conversations=("conv-1",), embedder_spec="hashing:32", embedder_name=emb.name,
                embedder_dim=emb.dim, cache_path=str(tmp_path / "cache.db"), update_seeds=(3,),
                update_spec={k: v for k, v in SMALL.as_dict().items() if k != "seed"}, noise_per_day=1,
                protocol={"context_k": 1})
    results = {}
    for w, unit in (("updates", "seed3"), ("timeline", "conv-1"), ("noise", "conv-1")):
        for row in ("full", "bare", "bm25"):
            results[(w, row, unit)] = job(w, row, unit, plan.as_dict())
    for row in ("no-nightly", "no-sleep", "flat", "-forgetting"):  # the rows that change the protocol
        res = job("updates", row, "seed3", plan.as_dict())
        assert "error" not in res, res.get("traceback")
    assert job("updates", "no-nightly", "seed3", plan.as_dict())["lifecycle"]["lifecycle_seconds"] == 0.0
    assert "shares" in results[("noise", "full", "conv-1")]
    broken = job("timeline", "full", "conv-404", plan.as_dict())  # no such conversation: reported, not raised
    assert "StopIteration" in broken["error"] and "traceback" in broken
    assert results[("timeline", "bare", "conv-1")]["lifecycle"]["totals"]["archived"] == 0  # nothing forgets
    rows = make_rows(["bare", "bm25"])
    summ = summarize({**results, ("timeline", "bm25", "conv-404"): broken}, plan, ["updates", "timeline", "noise"], rows)
    assert list(summ["errors"]) == ["timeline/bm25/conv-404"]
    t = summ["workloads"]["timeline"]["rows"]
    assert t["full"]["n"] == t["bare"]["n"] > 0
    assert t["bare"]["vs_full"]["m_tests"] == 1 and "p_bonferroni" in t["bare"]["vs_full"]
    assert "fresh_evidence_recall@5" in t["full"]
    assert summ["workloads"]["updates"]["rows"]["bm25"]["current_at_1"] is not None


def test_cli_timeline_updates_noise_and_mechanisms(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setenv("ZENBRAIN_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "locomo_dev.json"
    data.write_text(json.dumps(locomo_data()), encoding="utf-8")
    common = ["--embedder", "hashing:32", "--no-progress"]
    assert main(["bench", "locomo", "--timeline", "--data", str(data), "--flat", "--context-k", "1",
                 "--out", str(tmp_path / "tl"), *common]) == 0
    res = json.loads((tmp_path / "tl" / "locomo_timeline.json").read_text())
    assert {"zenbrain", "zenbrain-flat", "bm25", "dense"} <= set(res["systems"]) and "static" in res
    assert "timeline" in capsys.readouterr().out
    assert main(["bench", "updates", "--entities", "8", "--pairs", "4", "--static", "2", "--days", "40",
                 "--filler-per-day", "1", "--modes", "new,supersede,update", "--out", str(tmp_path / "up"), *common]) == 0
    up = json.loads((tmp_path / "up" / "updates.json").read_text())
    assert {"zenbrain", "zenbrain[supersede]", "zenbrain[update]", "bm25", "dense"} == set(up["sources"]["generated"]["systems"])
    sup = up["sources"]["generated"]["systems"]["zenbrain[supersede]"]
    assert sum(life["revisions"].get("supersede", 0) + life["revisions"].get("superseded_before", 0)
               for life in sup["lifecycle"].values()) == 3  # every changed value (3 in 40 days) named its predecessor
    assert sup["summary"]["overall"]["stale_above"]["mean"] == 0.0  # superseded facts leave current recall
    views = up["sources"]["generated"]["systems"]["zenbrain"]["views"]
    assert set(views) == {"with_archived", "no_retrievability", "no_layer_weights"}
    assert views["no_retrievability"]["summary"]["overall"]["n"] == len(up["sources"]["generated"]["systems"]["bm25"]["questions"])
    assert main(["bench", "noise", "--data", str(data), "--conversations", "conv-1", "--per-day", "1",
                 "--context-k", "0", "--ablate", "ebbinghaus_decay+triple_copy+ib_budget", "--out", str(tmp_path / "nz"),
                 *common]) == 0
    nz = json.loads((tmp_path / "nz" / "noise.json").read_text())
    assert nz["systems"]["zenbrain"]["shares"]["noise"]["n"] > 0
    # Neither forgetting curve nor the IB budget (which archives what a schema covers): nothing archived
    assert nz["systems"]["zenbrain-ebbinghaus_decay+triple_copy+ib_budget"]["shares"]["all"]["archived"] == 0
    assert main(["bench", "mechanisms", "--data", str(data), "--workloads", "updates", "--only", "bare",
                 "--update-seeds", "1", "--workers", "1", "--context-k", "0", "--out", str(tmp_path / "mx"),
                 *common]) == 0
    mx = json.loads((tmp_path / "mx" / "mechanisms.json").read_text())
    assert set(mx["summary"]["workloads"]["updates"]["rows"]) == {"full", "bare"}
    assert len((tmp_path / "mx" / "runs.jsonl").read_text().splitlines()) == 2
    capsys.readouterr()
    assert main(["bench", "mechanisms", "--data", str(data), "--workloads", "updates", "--only", "bare",
                 "--update-seeds", "1", "--workers", "1", "--context-k", "0", "--out", str(tmp_path / "mx"),
                 "--resume", *common]) == 0
    assert "resuming: 2 of 2 runs" in capsys.readouterr().err
    again = json.loads((tmp_path / "mx" / "mechanisms.json").read_text())
    assert again["summary"]["workloads"] == mx["summary"]["workloads"]
    assert main(["bench", "updates", "--modes", "merge", *common]) != 0
    assert main(["bench", "mechanisms", "--workloads", "dreams", "--data", str(data), *common]) != 0
    assert main(["bench", "mechanisms", "--update-mode", "merge", "--data", str(data), *common]) != 0


def test_doc_class_for_unknown_docs_is_other():
    shares = class_shares({"x": {"archived": True}}, {})
    assert shares["other"]["archived"] == 1
