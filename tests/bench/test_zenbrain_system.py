"""zenbrain as a benchmark system: reruns store the same ids and rank the same."""

from __future__ import annotations

from bench_data import locomo_data

from zenbrain.bench.locomo import parse_locomo
from zenbrain.bench.runner import run_locomo
from zenbrain.bench.zenbrain_system import ZenBrainSystem
from zenbrain.config import Config
from zenbrain.providers.hashing import HashingEmbedder


def _run(seed: int) -> tuple[list[str], dict]:
    convs = parse_locomo(locomo_data())
    system = ZenBrainSystem(HashingEmbedder(dim=64), config=Config(seed=seed))
    try:
        res = run_locomo([system], convs, ks=(5,), progress=False)
        system.add(list(convs[0].docs))  # a second batch in the same store gets ids of its own
        ids = sorted(system._doc_of)
    finally:
        system.close()
    return ids, res["systems"]["zenbrain"]["questions"]


def test_reruns_store_the_same_ids_and_rank_the_same():
    ids, questions = _run(0)
    again_ids, again_questions = _run(0)
    assert ids == again_ids and len(set(ids)) == len(ids)
    assert [q["ranked"] for q in questions] == [q["ranked"] for q in again_questions]
    other_ids, _ = _run(1)
    assert not set(ids) & set(other_ids)  # the seed chooses the ids
