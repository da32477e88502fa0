"""Storing a batch of facts checks each against its nearest stored facts (contradiction,
support) with one search of the index for the whole batch: the outcome is the one a
search per fact gives - the same edges, debates and confidences."""

from __future__ import annotations

import contextlib
import random
from typing import Any

import numpy as np
import pytest

from zenbrain import Scope
from zenbrain.ids import seeded_ids
from zenbrain.storage.vector_index import PartitionIndex

try:
    from threadpoolctl import threadpool_limits
except ImportError:
    threadpool_limits = None

SCOPE = Scope("ingest", "agent")
PEOPLE = ["Alice", "Bob", "Carol", "Dave", "Erin"]
CITIES = ["Berlin", "Paris", "Rome", "Oslo", "Madrid", "Lisbon"]
PETS = ["cats", "dogs", "a parrot", "two rabbits"]


def fact_batches(seed: int) -> list[list[str]]:
    """Batches of distinct facts: where people live (contradicting each other across
    batches), near-duplicates of one another (support), and unrelated filler."""
    rng = random.Random(seed)
    seen: set[str] = set()
    batches = []
    for b in range(4):
        batch = []
        while len(batch) < 40:
            who, city, pet = rng.choice(PEOPLE), rng.choice(CITIES), rng.choice(PETS)
            text = rng.choice([
                f"{who} lives in {city}",
                f"{who} lives in {city}!",  # the same words: a duplicate vector, tied scores
                f"{who} lives in {city} with {pet}",
                f"{who} lives in {city} with {pet} since {2000 + rng.randrange(20)}",
                f"{who} works in {city}",
                f"note {b}-{len(batch)}: {who} likes {pet}",
            ])
            if text not in seen:
                seen.add(text)
                batch.append(text)
        batches.append(batch)
    return batches


def run(open_coord, label: str, seed: int) -> dict[str, Any]:
    # Ids break ties (recent memories): the same in both runs. One BLAS thread: a
    # multi-threaded one may score a row a rounding apart from a lone search.
    one_thread = threadpool_limits(1) if threadpool_limits is not None else contextlib.nullcontext()
    with seeded_ids(seed), one_thread:
        return scenario(open_coord, label, seed)


def scenario(open_coord, label: str, seed: int) -> dict[str, Any]:
    coord, clock = open_coord(label=label)
    part = (SCOPE.user_id, SCOPE.agent_id)
    content: dict[str, str] = {}
    reports = []
    for batch in fact_batches(seed):
        stored = coord.store_many([{"content": t, "kind": "fact", "layer": "semantic"} for t in batch], SCOPE)
        content.update({m.id: m.content for m in stored})
        rep = coord.last_store_report
        reports.append((rep["edges"], [(content[d["new_id"]], d["verdict"], sorted(content[w] for w in d["winners"]),
                                        sorted(content[x] for x in d["losers"])) for d in rep["debates"]]))
        clock.advance(minutes=5)
    items = coord.storage.get(part, list(content))
    return dict(
        reports=reports,
        edges=sorted((content[e.src], content[e.dst], e.relation) for e in coord.storage.edges(part)),
        conf={m.content: (m.conf_alpha, m.conf_beta, bool(m.metadata.get("disputed"))) for m in items},
    )


def test_facts_checked_in_one_search_as_one_search_per_fact(open_coord, monkeypatch):
    batched = [run(open_coord, f"batched{s}", s) for s in (1, 2)]
    monkeypatch.setattr(PartitionIndex, "search_many",
                        lambda self, queries, k, mask: [self.search(q, k, mask) for q in np.asarray(queries)])
    alone = [run(open_coord, f"alone{s}", s) for s in (1, 2)]
    for got, want in zip(batched, alone):
        assert got["reports"] == want["reports"]
        assert got["edges"] == want["edges"]
        assert got["conf"].keys() == want["conf"].keys()
        for text, conf in want["conf"].items():
            assert got["conf"][text] == pytest.approx(conf, rel=1e-6), text
    relations = {r for run_ in batched for _, _, r in run_["edges"]}
    assert {"contradicts", "supports"} <= relations  # the scenario exercises both checks
    assert any(debates for run_ in batched for _, debates in run_["reports"])
