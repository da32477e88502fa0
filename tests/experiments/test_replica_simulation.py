"""Mechanics of the replica of the paper's simulation protocol (not zenbrain): draw order,
the no-op mechanisms, the API and the command line. Small runs only."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from zenbrain.experiments import published as pub
from zenbrain.experiments.replica import LABEL, NAMES, PROTOCOL_IDS, run_replica
from zenbrain.experiments.replica.__main__ import main
from zenbrain.experiments.replica.ablation import CONDITIONS, configurations, run_config
from zenbrain.experiments.replica.data import ablation_dataset
from zenbrain.experiments.replica.prng import Stream
from zenbrain.experiments.replica.report import comparison_rows
from zenbrain.experiments.replica.simulation import (
    ABLATION_RULES,
    MemoryState,
    age_days,
    enabled_set,
    store_ablation,
    top_k,
)
from zenbrain.registry import PAPER_FIFTEEN

ONE_SEED = (42,)
MODERATE, STRESS = CONDITIONS["moderate"], CONDITIONS["stress"]


def test_registry_names_map_to_protocol_ids():
    assert set(PROTOCOL_IDS) == set(PAPER_FIFTEEN)
    assert PROTOCOL_IDS["vmpfc_fsrs"] == "vmPFC_fsrs_coupling"
    assert PROTOCOL_IDS["neuromodulator"] == "pma_neuromodulator_engine"
    names = [name for name, _ in configurations()]
    assert names[0] == "full" and names[-2:] == ["no_pma", "bare"] and len(names) == 18
    with pytest.raises(ValueError):
        enabled_set(["ebbinghaus_decay"])


def test_draw_counts_follow_the_protocol():
    data = ablation_dataset(42, 30, 5)
    # 30 facts x 32 dims, then per query: 1 + at least n_rel + 32 draws
    assert data.draws_used >= 30 * 32 + 5 * (1 + 1 + 32)
    for disabled, per_fact in ((("neuromodulator",), 4), ((), 5)):
        on = enabled_set(disabled)
        stream = Stream(42, data.draws_used)
        state = store_ablation(stream, 30, on)
        assert stream.position == data.draws_used + 30 * per_fact
        before = stream.position
        age_days(state, stream, 7, 0.15, on, ABLATION_RULES)
        assert stream.position == before + 7 * 30  # reconsolidation draws one per fact per day
    on = enabled_set(["reconsolidation"])
    stream = Stream(42, data.draws_used)
    state = store_ablation(stream, 30, on)
    before = stream.position
    age_days(state, stream, 7, 0.15, on, ABLATION_RULES)
    assert stream.position == before


def test_neuromodulator_store_draw_reshuffles_emotional_facts():
    data = ablation_dataset(42, 200, 3)
    with_nm = store_ablation(Stream(42, data.draws_used), 200, enabled_set())
    without = store_ablation(Stream(42, data.draws_used), 200, enabled_set(["neuromodulator"]))
    assert with_nm.arousal[0] == without.arousal[0]
    assert not np.array_equal(with_nm.arousal > 0.6, without.arousal > 0.6)


@pytest.mark.parametrize("name", ["compositional_context", "imad_debate", "metacognitive_hyperagent",
                                  "metacognitive_monitor", "spectral_kg_health"])  # fmt: skip
def test_no_op_mechanisms_change_nothing_by_construction(name):
    full = run_config(STRESS, (), ONE_SEED)
    removed = run_config(STRESS, (name,), ONE_SEED)
    assert removed == full


def test_reconsolidation_is_inert_without_the_stability_protector():
    a = run_config(STRESS, ("stability_protector",), ONE_SEED)
    b = run_config(STRESS, ("stability_protector", "reconsolidation"), ONE_SEED)
    assert a == b


def test_two_factor_only_acts_through_the_neuromodulator_gate():
    # Without Neuromod, Two-Factor's factor is 1/(1 + 0.01 * 0) = 1 during aging.
    a = run_config(STRESS, ("neuromodulator",), ONE_SEED)
    b = run_config(STRESS, ("neuromodulator", "two_factor_hebbian"), ONE_SEED)
    assert a == b


def test_bare_system_sits_on_the_floor_and_ranks_by_cosine():
    res = run_config(MODERATE, tuple(PAPER_FIFTEEN), ONE_SEED)
    assert res["retention"][0] == pytest.approx(0.01, abs=1e-15)
    on = enabled_set(PAPER_FIFTEEN)
    data = ablation_dataset(42, MODERATE.n_facts, MODERATE.n_queries)
    stream = Stream(42, data.draws_used)
    state = store_ablation(stream, MODERATE.n_facts, on)
    age_days(state, stream, MODERATE.aging_days, MODERATE.base_decay, on, ABLATION_RULES)
    assert np.all(state.strength == 0.01)


def test_top_k_is_a_stable_descending_sort():
    rng = np.random.default_rng(7)
    for trial in range(200):
        scores = rng.integers(0, 4, size=(6, 12)).astype(float) if trial % 2 else rng.random((6, 12))
        assert np.array_equal(top_k(scores, 5), np.argsort(-scores, axis=1, kind="stable")[:, :5])


def test_memory_state_defaults():
    s = MemoryState(strength=np.ones(2), arousal=np.zeros(2), valence=np.zeros(2))
    assert s.age == 0 and s.access == 0


def test_run_replica_api():
    assert NAMES[0] == "all"
    with pytest.raises(ValueError):
        run_replica("nope")
    with pytest.raises(ValueError):
        run_replica("cascade", seeds=[])
    res = run_replica("pma", seeds=(42, 123))
    assert res["label"] == LABEL and "pma_suite" in res and "ablation" not in res
    json.dumps(res)
    # Published comparisons need the protocol's ten seeds.
    assert comparison_rows(res) == []
    small = run_replica("moderate", seeds=(42,))
    assert list(small["ablation"]) == ["moderate"]
    assert small["ablation"]["moderate"]["rows"]["-vmpfc_fsrs"]["disabled_protocol_ids"] == ["vmPFC_fsrs_coupling"]


def test_command_line(capsys):
    assert main(["cascade"]) == 0
    out = capsys.readouterr().out
    assert LABEL in out and "cascade" in out
    assert main(["competitive", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["results"]["label"] == LABEL
    assert any(r["table"] == "competitive" for r in data["comparison"])


def _published_literals() -> set[str]:
    """Distinctive published figures as they would appear in source text."""
    out: set[str] = set()

    def add(v) -> None:
        if isinstance(v, bool) or not isinstance(v, float):
            return
        if abs(v) < 0.02 or abs(v) in (0.95, 1.0, 1.02, 2.0, 30.0, 100.0):
            return  # also protocol constants (floor 0.01, tonic decay 0.95, score factor 1.02, ...)
        text = repr(v)
        if len(text.replace("-", "").replace("0.", "", 1)) >= 3:
            out.add(text)

    def walk(obj) -> None:
        if isinstance(obj, dict):
            for x in obj.values():
                walk(x)
        elif isinstance(obj, (tuple, list)):
            for x in obj:
                walk(x)
        else:
            add(obj)

    for name in dir(pub):
        if name.startswith(("PAPER_", "REFERENCE_", "AUTHORS_")):
            walk(getattr(pub, name))
    return out


def test_no_published_figure_is_hard_coded_in_the_replica():
    src = Path(__file__).resolve().parents[2] / "src" / "zenbrain" / "experiments" / "replica"
    literals = _published_literals()
    assert "0.92267" in literals and "0.3110856130648998" not in literals
    for path in sorted(src.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        numbers = set(re.findall(r"(?<![\w.-])-?\d+\.\d+(?:e-?\d+)?", text))
        assert not numbers & literals, (path.name, sorted(numbers & literals))
