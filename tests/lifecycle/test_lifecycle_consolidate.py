"""consolidate(): episodes become schemas (dual process), the IB budget archives covered
episodes, procedures are promoted; each switchable."""

from __future__ import annotations

import json
from dataclasses import replace

from zenbrain.config import LifecycleLimits
from zenbrain.model import Kind, Layer
from zenbrain.pipeline.lifecycle import run_consolidate
from zenbrain.state import ARCHIVED_BY, CONSOLIDATED_INTO, CONSOLIDATED_USES
from zenbrain.state import RELATION_EVIDENCE_OF as EVIDENCE_OF

RUNS = [
    "I went running in the park this morning with Sam",
    "I went running in the park this evening with Sam",
    "I went running in the park yesterday morning with Sam",
    "I went running in the park on Sunday morning with Sam",
]
OTHER = "The quarterly budget review was moved to Friday"
MORE_RUNS = [
    "I went running in the park on Monday morning with Sam",
    "I went running in the park on Tuesday morning with Sam",
    "I went running in the park on Friday morning with Sam",
]


def _episodes(w, texts):
    items = w.mem.store_many([{"content": t, "kind": "episode"} for t in texts], w.scope)
    assert all(i.layer is Layer.EPISODIC for i in items)
    return items


def _schemas(w):
    return [i for i in w.mem.list_memories(w.scope, layer="semantic") if i.kind is Kind.SCHEMA]


class EchoChat:
    """A chat model that states the shared habit (records the prompts it saw)."""

    name = "test:chat"

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, messages, *, max_tokens=512, temperature=0.0):
        self.calls += 1
        return "SCHEMA: The user regularly goes running in the park with Sam."


def test_dual_process_abstracts_similar_episodes_into_a_schema(world):
    w = world()
    eps = _episodes(w, RUNS + [OTHER])
    ep_ids = {e.id for e in eps[:4]}
    rep = w.mem.consolidate(w.scope)
    stage = rep.stages["dual_process_cot"]
    assert len(stage["schemas_created"]) == 1
    created = stage["schemas_created"][0]
    schemas = _schemas(w)
    assert [s.id for s in schemas] == [created["id"]]
    schema = schemas[0]
    assert schema.layer is Layer.SEMANTIC and schema.kind is Kind.SCHEMA
    evidence = schema.metadata["evidence_ids"]
    assert len(evidence) >= 3 and set(evidence) <= ep_ids and eps[4].id not in evidence
    assert schema.metadata["method"] == "extractive" and "running" in schema.content
    edges = w.edges()
    for eid in evidence:
        assert (eid, schema.id, EVIDENCE_OF) in edges
        assert w.get(eid).state[CONSOLIDATED_INTO] == schema.id
    json.dumps(rep.as_dict())

    # Consolidating again does not abstract the same episodes twice.
    again = w.mem.consolidate(w.scope)
    assert again.stages["dual_process_cot"]["schemas_created"] == []
    assert len(_schemas(w)) == 1


def test_dual_process_switched_off_makes_no_schema(world):
    w = world("dual_process_cot")
    _episodes(w, RUNS)
    rep = w.mem.consolidate(w.scope)
    assert rep.stages["dual_process_cot"] == {"skipped": "switched off"}
    assert rep.stages["procedures"] == {"skipped": "switched off"}
    assert _schemas(w) == []
    assert all(e.relation != EVIDENCE_OF for e in w.edges().values())


def test_system_two_uses_the_chat_model_when_present(world):
    w = world()
    chat = EchoChat()
    w.mem.chat = chat
    _episodes(w, RUNS)
    rep = w.mem.consolidate(w.scope)
    created = rep.stages["dual_process_cot"]["schemas_created"][0]
    assert created["method"] == "llm" and chat.calls == 1
    assert _schemas(w)[0].content == "The user regularly goes running in the park with Sam."


def test_a_new_cluster_close_to_a_schema_joins_it(world):
    w = world()
    _episodes(w, RUNS)
    w.mem.consolidate(w.scope)
    (schema,) = _schemas(w)
    more = _episodes(w, MORE_RUNS)
    w.mem.engine.config = replace(w.mem.config, lifecycle=LifecycleLimits(schema_attach_similarity=0.3))
    rep = run_consolidate(w.mem.engine, w.scope)
    stage = rep.stages["dual_process_cot"]
    assert stage["schemas_created"] == []
    (ext,) = stage["schemas_extended"]
    assert ext["id"] == schema.id and set(ext["added"]) <= {m.id for m in more} and len(ext["added"]) >= 3
    updated = w.get(schema.id)
    assert set(ext["added"]) <= set(updated.metadata["evidence_ids"])
    assert updated.metadata["support"] == len(updated.metadata["evidence_ids"])


LONG = " ".join(["We walked along the river path past the old mill and the boat sheds"] * 60)


def test_ib_budget_archives_covered_episodes_that_cost_more_than_they_give(world):
    def run(*off):
        w = world(*off)
        eps = _episodes(w, [f"{LONG} on day {d}." for d in ("one", "two", "three", "four")])
        rep = w.mem.consolidate(w.scope)
        return w, eps, rep

    w, eps, rep = run()
    covered = [e.id for e in eps if CONSOLIDATED_INTO in w.get(e.id).state]
    assert len(covered) >= 3
    stage = rep.stages["ib_budget"]
    assert stage["evaluated"] == len(covered) and set(stage["archived"]) == set(covered)
    for mid in covered:
        d = stage["archived"][mid]
        assert d["gain"] * d["beta"] <= d["cost"]
        item = w.get(mid)
        assert item.archived and item.state[ARCHIVED_BY] == "ib_budget"
    # decay does not bring back what the budget archived (its retrievability is still high)
    restore = w.mem.decay(w.scope).stages["restore"]
    assert restore["count"] == 0 and all(w.get(m).archived for m in covered)

    w_off, eps_off, rep_off = run("ib_budget")
    assert rep_off.stages["ib_budget"] == {"skipped": "switched off"}
    assert rep_off.stages["dual_process_cot"]["episodes_consolidated"] >= 3
    assert not any(w_off.get(e.id).archived for e in eps_off)


def test_a_recall_that_reaches_a_schema_brings_back_the_episodes_it_archived(world):
    w = world()
    eps = _episodes(w, [f"{LONG} on day {d}." for d in ("one", "two", "three", "four")])
    _episodes(w, [OTHER])
    w.mem.consolidate(w.scope)
    archived = {e.id for e in eps if w.get(e.id).archived}
    assert len(archived) >= 3 and _schemas(w)
    # No decay has run, so no word of the query cues the archive: the schema is what the
    # recall reaches, and its archived episodes compete beside it.
    hits = w.mem.recall("a walk along the river path past the old mill", w.scope, k=10, touch=False)
    ids = [h.item.id for h in hits]
    assert archived & set(ids)
    # The extractive schema quotes its representative episode: it gave that episode its
    # place instead of showing the same words twice.
    (schema,) = _schemas(w)
    assert schema.metadata["representative_id"] in ids and schema.id not in ids
    # A recall that cannot reach the schema (it searches the episodic layer only) leaves
    # them out of reach.
    hits = w.mem.recall("a walk along the river path past the old mill", w.scope, k=10, layers="episodic",
                        touch=False)
    assert hits and not archived & {h.item.id for h in hits}


def test_a_schema_in_its_own_words_keeps_its_place_beside_its_episodes(world):
    def top(chat):
        w = world()
        if chat:
            w.mem.chat = EchoChat()
        eps = _episodes(w, RUNS)
        w.mem.consolidate(w.scope)
        (schema,) = _schemas(w)
        hits = w.mem.recall("running in the park with Sam", w.scope, k=10, touch=False)
        return schema, {e.id for e in eps}, [h.item.id for h in hits]

    schema, eps, ids = top(chat=True)
    assert schema.metadata["method"] == "llm" and schema.id in ids and eps & set(ids)
    schema, eps, ids = top(chat=False)  # extractive: the same words as its representative
    assert schema.id not in ids and schema.metadata["representative_id"] in ids


def test_ib_budget_counts_the_uses_since_the_schema_took_an_episode_in(world):
    # Used before consolidation: those uses are what the schema now answers for (a recall
    # that reaches it brings the episodes back), so they do not keep the episodes active.
    w = world()
    eps = _episodes(w, RUNS)
    w.mem.recall("running in the park with Sam", w.scope, k=10)  # a use of each of them
    assert all(w.get(e.id).access_count > 0 for e in eps)
    rep = w.mem.consolidate(w.scope)
    covered = {e.id for e in eps if CONSOLIDATED_INTO in w.get(e.id).state}
    assert len(covered) >= 3 and set(rep.stages["ib_budget"]["archived"]) == covered
    assert all(w.get(m).state[CONSOLIDATED_USES] == w.get(m).access_count > 0 for m in covered)

    # Brought back by hand and used since: the episodes used after the schema took them in
    # earn their keep; the one left unused leaves the active store again.
    for m in covered:
        w.mem.restore(m, w.scope)
    used = sorted(covered)[:2]
    for m in used:
        w.mem.recall(w.get(m).content, w.scope, k=1)
    assert all(w.get(m).access_count > w.get(m).state[CONSOLIDATED_USES] for m in used)
    w.clock.advance(86400.0)
    rep = w.mem.consolidate(w.scope)
    stage = rep.stages["ib_budget"]
    assert stage["evaluated"] == len(covered) and set(stage["archived"]) == covered - set(used)
    assert not any(w.get(m).archived for m in used)

    # Never used and never confirmed: nothing shows they are worth more than the gist.
    w = world()
    eps = _episodes(w, RUNS)
    rep = w.mem.consolidate(w.scope)
    covered = {e.id for e in eps if CONSOLIDATED_INTO in w.get(e.id).state}
    assert len(covered) >= 3 and set(rep.stages["ib_budget"]["archived"]) == covered


def test_procedures_with_a_good_record_move_to_procedural_memory(world):
    def run(*off):
        w = world(*off)
        item = w.store("open the release branch -> run the test suite -> tag the build", kind="fact")
        assert item.layer is Layer.SEMANTIC
        for ok in (True, True, True, False, True):
            w.mem.record_outcome(item.id, w.scope, ok)
        flop = w.store("restart the router -> pray", kind="fact")
        for ok in (False, False, True):
            w.mem.record_outcome(flop.id, w.scope, ok)
        rep = w.mem.consolidate(w.scope)
        return w, item, flop, rep

    w, item, flop, rep = run()
    promoted = rep.stages["procedures"]["promoted"]
    assert list(promoted) == [item.id]
    assert promoted[item.id]["success_rate"] == 0.8
    assert promoted[item.id]["steps"] == ["open the release branch", "run the test suite", "tag the build"]
    assert w.get(item.id).layer is Layer.PROCEDURAL and w.get(flop.id).layer is Layer.SEMANTIC

    w_off, item_off, _, _ = run("dual_process_cot")
    assert w_off.get(item_off.id).layer is Layer.SEMANTIC


def test_no_schema_is_written_into_a_disabled_semantic_layer(tmp_path):
    from zenbrain.api import open_memory
    from zenbrain.clock import SimulatedClock
    from zenbrain.config import Config
    from zenbrain.model import Scope
    from zenbrain.providers.hashing import HashingEmbedder

    mem = open_memory(tmp_path / "m.db", embedder=HashingEmbedder(64), clock=SimulatedClock(),
                      config=Config(disabled_layers=frozenset({Layer.SEMANTIC})))
    scope = Scope("bob")
    mem.store_many([{"content": t, "kind": "episode"} for t in RUNS], scope)
    rep = mem.consolidate(scope)
    assert rep.stages["dual_process_cot"] == {"skipped": "the semantic layer is disabled"}
    assert mem.stats(scope)["by_layer"].get("semantic", 0) == 0
    mem.close()
