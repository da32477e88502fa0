"""Small versions of the real-system experiments: same seed, same numbers; a mechanism
switched off changes what the real coordinator does."""

from __future__ import annotations

import numpy as np
import pytest

from zenbrain.experiments.real import ablation, kg, pma
from zenbrain.experiments.real.ablation import Condition, run_one, simulate
from zenbrain.experiments.real.harness import eval_queries, open_run, rank_metrics
from zenbrain.experiments.real.synthetic import SyntheticEmbedder, make_workload
from zenbrain.ids import seeded_ids

TINY = Condition("tiny", 40, 12, 10, 0.2)


@pytest.fixture(scope="module")
def full_run():
    return run_one(TINY, (), 7)


def test_same_seed_same_numbers(full_run):
    again = run_one(TINY, (), 7)
    assert again == full_run


def test_other_seed_other_numbers(full_run):
    assert run_one(TINY, (), 8) != full_run


def test_switching_sleep_off_changes_the_run(full_run):
    off = run_one(TINY, ("simulation_selection_sleep",), 7)
    assert full_run["sleep"]["ltp"] + full_run["sleep"]["ltd"] > 0  # the real replay ran
    assert off["sleep"]["ltp"] == off["sleep"]["ltd"] == 0


def test_switching_triple_copy_off_changes_retrievability(full_run):
    off = run_one(TINY, ("triple_copy",), 7)
    assert off["mean_retrievability"] != full_run["mean_retrievability"]
    assert 0.0 <= off["retention"] <= 1.0 and 0.0 <= off["recall5"] <= 1.0


def test_workload_is_seeded_and_ground_truth_fixed():
    a, b = make_workload(3, 30, 10), make_workload(3, 30, 10)
    assert np.array_equal(a.fact_vecs, b.fact_vecs) and a.relevant == b.relevant
    assert all(1 <= len(r) <= 3 and len(set(r)) == len(r) for r in a.relevant)
    assert np.allclose(np.linalg.norm(a.query_vecs, axis=1), 1.0)
    assert make_workload(4, 30, 10).relevant != a.relevant


def test_embedder_serves_known_texts_and_schemas():
    w = make_workload(1, 10, 2)
    emb = SyntheticEmbedder(w.table())
    v = emb.embed([w.fact_texts[0], f"Recurring pattern across 2 episodes: {w.fact_texts[0].split()[0]}."])
    assert np.allclose(v[0], w.fact_vecs[0], atol=1e-6)
    assert np.allclose(v[1], w.fact_vecs[0], atol=1e-6)  # an extractive schema reads like its episode


def test_rank_metrics_by_hand():
    rec, prec, ndcg, rr = rank_metrics([5, 1, 9, 2, 7], [1, 2, 3])
    assert rec == pytest.approx(2 / 3) and prec == pytest.approx(2 / 5) and rr == pytest.approx(0.5)
    assert ndcg == pytest.approx((1 / np.log2(3) + 1 / np.log2(5)) / (1 + 1 / np.log2(3) + 1 / np.log2(4)))


def test_evaluation_is_read_only():
    w = make_workload(2, 20, 5)
    with seeded_ids(2):
        run = open_run(SyntheticEmbedder(w.table()), ablation.make_config((), 0.2, 2))
        try:
            run.store_facts(w.fact_texts)
            before = [(i.access_count, i.last_access) for i in run.coord.storage.get(run.part, run.fact_ids)]
            first = eval_queries(run, w)
            assert eval_queries(run, w) == first
            after = [(i.access_count, i.last_access) for i in run.coord.storage.get(run.part, run.fact_ids)]
            assert before == after
        finally:
            run.close()


def test_cascade_checkpoints_and_fiedler():
    out = simulate(Condition("c", 30, 10, 10, 0.3), (), 3, checkpoints=(1, 5, 10), eval_days=(), fiedler=True)
    assert [p["day"] for p in out["timeline"]] == [1.0, 5.0, 10.0]
    assert set(out["graph"]) == {"before", "after"} and out["graph"]["before"]["nodes"] > 0


def test_kg_and_bayes_small():
    a = kg.kg_run(1, n_entities=20, n_events=30)
    assert a == kg.kg_run(1, n_entities=20, n_events=30)
    off = kg.kg_run(1, hebbian=False, n_entities=20, n_events=30)
    assert off["edges"] == 0 and a["edges"] > 0  # no co-recall learning without Two-Factor
    on, no = kg.bayes_run(1), kg.bayes_run(1, bayesian=False)
    assert no["auc_after"] == no["auc_before"] and on["auc_after"] != on["auc_before"]


def test_pma_suite_seeded():
    a = pma.run_seed(11)
    assert a == pma.run_seed(11)
    assert 0.0 <= a["reconsolidation"]["accuracy"] <= 1.0
    assert a["triple_copy"]["1h"]["ebbinghaus"] == pytest.approx(np.exp(-1 / 24))


def test_jobs_run_with_the_cyclic_collector_paused_and_restored() -> None:
    import gc

    from zenbrain.experiments.real.harness import paused_gc
    from zenbrain.experiments.real.pool import Job, run_jobs

    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    results, _ = run_jobs([Job("probe", "gc:isenabled")], workers=1, progress=False)
    assert results["probe"] is False
    assert gc.isenabled()
