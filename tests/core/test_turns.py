"""Conversation turns: positions in their session, speakers, the index text a reply is
found by, and what a revision or an erasure does to the turns after it."""

from __future__ import annotations

import numpy as np
import pytest
from core_helpers import files_containing, tables_containing

from zenbrain import Scope, open_memory
from zenbrain.config import Config, RecallParams
from zenbrain.providers.hashing import HashingEmbedder
from zenbrain.retrieval.turn_context import mean_vectors

S1 = Scope("alice", session_id="s1")
CHAT = ["Caroline: What got you into pottery?", "Melanie: My friend got me into it last spring.",
        "Caroline: That sounds lovely."]


@pytest.fixture
def mem(tmp_path):
    m = open_memory(tmp_path / "m.db", embedder=HashingEmbedder(384))
    yield m
    m.close()


def _turns(mem, scope=S1, texts=CHAT):
    return mem.store_many([{"content": t, "layer": "episodic"} for t in texts], scope)


def test_turns_get_positions_speakers_and_the_words_of_the_turn_before(mem):
    a, b, c = _turns(mem)
    assert [t.position for t in (a, b, c)] == [0, 1, 2]
    assert [t.speaker for t in (a, b, c)] == ["Caroline", "Melanie", "Caroline"]
    assert a.content == CHAT[0]  # verbatim
    assert a.index_text == "What got you into pottery?"  # no "Name:" in what is indexed
    assert b.index_text == "What got you into pottery?\nMy friend got me into it last spring."
    later = mem.store("Melanie: It keeps me calm.", S1, layer="episodic")
    assert later.position == 3 and later.index_text == "That sounds lovely.\nIt keeps me calm."
    other = mem.store("Bob: hello", Scope("alice", session_id="s2"), layer="episodic")
    assert other.position == 0


def test_a_reply_is_found_by_the_words_of_its_question(mem):
    _, reply, _ = _turns(mem)
    hits = mem.recall("pottery", Scope("alice", session_id="s1"), k=3, touch=False)
    assert reply.id in [h.id for h in hits]
    assert hits.info["lexical"] >= 2  # the question and the reply both hold the word


def test_a_turns_vector_is_the_mean_of_its_own_words_and_its_index_text(mem):
    _, reply, _ = _turns(mem)
    e = HashingEmbedder(384)
    want = mean_vectors(e.embed(["My friend got me into it last spring."])[0], e.embed([reply.index_text])[0])
    got = mem.storage.vectors(("alice", "default"), [reply.id])[0]
    np.testing.assert_allclose(got, want, atol=1e-4)  # a store may keep vectors as float16 (SQLite does)


def test_a_speaker_field_wins_over_the_text_and_is_checked(mem):
    m = mem.store("I moved to Paris", S1, layer="episodic", metadata={"speaker": "Dana"})
    assert m.speaker == "Dana" and m.index_text is None
    n = mem.store_many([{"content": "Note: bring cake", "speaker": "Eve"}], Scope("alice"))[0]
    assert n.speaker == "Eve"


def test_erasing_a_turn_reindexes_the_turn_after_it(mem):
    a, b, _ = _turns(mem)
    mem.forget(a.id, S1)
    after = mem.get(b.id, S1)
    assert after.index_text is None or "pottery" not in after.index_text
    assert all(h.why.lexical == 0 for h in mem.recall("pottery", S1, k=3, touch=False))  # no index keeps them
    con = mem.storage.raw_connection()
    assert con.execute("SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'pottery'").fetchone()[0] == 0


def test_revising_a_turn_reindexes_the_turn_after_it(mem):
    a, b, _ = _turns(mem)
    mem.update(a.id, S1, content="Caroline: What got you into chess?")
    assert "chess" in mem.get(b.id, S1).index_text and "pottery" not in mem.get(b.id, S1).index_text
    assert {h.id for h in mem.recall("chess", S1, k=3, touch=False)} >= {a.id, b.id}


def test_a_recipe_without_turn_context_indexes_turns_alone(tmp_path):
    m = open_memory(tmp_path / "t.db", embedder=HashingEmbedder(384), config=Config(recall=RecallParams(recipe="today")))
    _, b, _ = _turns(m)
    assert b.position == 1 and b.index_text is None  # the recipe keeps "Name:" and adds no context
    m.close()


def test_an_erased_turns_words_leave_every_table_and_file(mem):
    a, _, _ = _turns(mem, texts=["Caroline: My quetzalcoatl tattoo hurt", "Melanie: Oh no, show me!",
                                 "Caroline: Later."])
    mem.forget(a.id, S1)
    assert tables_containing(mem.storage, "quetzalcoatl") == {}
    assert files_containing(mem.storage.path, "quetzalcoatl") == {}


def _painting_chat(tmp_path, diversity: float | None):
    from dataclasses import replace

    cfg = Config()  # None: the default spread
    if diversity is not None:
        cfg = replace(cfg, recall=replace(cfg.recall, exchange_diversity=diversity))
    m = open_memory(tmp_path / f"paint-{diversity}.db", embedder=HashingEmbedder(384), config=cfg)
    m.store_many([{"content": t, "layer": "episodic"} for t in [
        "Caroline: Have you painted anything lately?", "Melanie: Yes, I painted a sunset over the lake.",
        "Caroline: A painted sunset, lovely!", "Melanie: I painted it with my kids."]], S1)
    m.store_many([{"content": t, "layer": "episodic"} for t in [
        "Melanie: We went to the beach today.", "Caroline: Fun! Did the kids like it?",
        "Melanie: Later I painted a horse in the studio.", "Caroline: Nice."]], Scope("alice", session_id="s2"))
    return m


def test_a_broad_question_spreads_its_hits_over_exchanges(tmp_path):
    spread, packed = _painting_chat(tmp_path, None), _painting_chat(tmp_path, 0.0)
    try:
        for m in (spread, packed):
            specific = m.recall("What did Melanie paint with her kids?", Scope("alice"), k=3, touch=False)
            assert all("exchange_spread" not in h.why.other for h in specific)  # one exchange may answer it
        broad = spread.recall("What has Melanie painted?", Scope("alice"), k=3, touch=False)
        assert any("horse" in h.item.content for h in broad)  # the other session's painting
        near = sorted(h.item.position for h in broad if h.item.session_id == "s1")
        assert len(near) == 2 and near[1] - near[0] > 1  # no two neighbours of one exchange
        assert [h.score for h in broad] == sorted((h.score for h in broad), reverse=True)
        below = spread.recall("What has Melanie painted?", Scope("alice"), k=8, touch=False)
        assert any(h.why.other.get("exchange_spread", 0.0) < 0 for h in below)  # the score it gave up
        # Without the spread, the neighbours of the best exchange fill the places.
        plain = packed.recall("What has Melanie painted?", Scope("alice"), k=3, touch=False)
        assert not any("horse" in h.item.content for h in plain)
        assert all(h.item.session_id == "s1" for h in plain)
    finally:
        spread.close()
        packed.close()
